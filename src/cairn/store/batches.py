"""Extraction batches: selection, leases with tokens, receipts, backoff and dead letters.

A batch is a set of pending events under one lease. Whoever holds the batch's current
token may commit it (once: the receipt is stored, and a retry with the same token returns
that receipt and changes nothing) or fail it (backoff, and after ``max_attempts`` the batch
is dead: its events stay stored and visible in status until replayed). An expired lease
can be re-taken under a new token, and from then on the old token's commit is refused
with :class:`~cairn.errors.StaleLeaseError` (tests/store/test_batches.py).

Times: ``now_s``, deadlines and retry times are on the runtime's trio clock (leases are
runtime timeouts, not business time); they mean nothing to another process, so a starting
runtime calls :func:`release_leases`.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import TYPE_CHECKING, Any

import attrs

from cairn.domain.evidence import EvidenceEvent
from cairn.errors import StaleLeaseError
from cairn.store.evidence import EVENT_COLUMNS, EVENT_FROM, event_from_row
from cairn.store.extraction_state import ExtractionState

if TYPE_CHECKING:
    from collections.abc import Sequence

    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    "BatchReceipt",
    "BatchStatistics",
    "Lease",
    "PendingWork",
    "batch_statistics",
    "begin_commit",
    "count_pending",
    "fail_batch",
    "finish_commit",
    "pending_work",
    "release_lease",
    "release_leases",
    "replay_dead",
    "take_lease",
]


@attrs.frozen
class Lease:
    """The right to commit one batch: valid while ``token`` is the batch's current one."""

    batch_id: int
    token: str
    deadline: float
    attempt: int
    trigger: str
    events: tuple[EvidenceEvent, ...]


@attrs.frozen
class BatchReceipt:
    """What a committed batch did; returned again, unchanged, for a retried commit."""

    batch_id: int
    event_ids: tuple[str, ...]
    claim_rowids: tuple[int, ...]
    discarded: tuple[str, ...]
    rejected_candidates: int
    merged: int
    superseded: int
    suppressed: int
    directive_drafts: int

    def to_json(self) -> str:
        return json.dumps(attrs.asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> BatchReceipt:
        data: dict[str, Any] = json.loads(text)
        for name in ("event_ids", "claim_rowids", "discarded"):
            data[name] = tuple(data[name])
        return cls(**data)


@attrs.frozen
class PendingWork:
    """What the ingestion actor needs to decide when to take a lease."""

    unbatched: int
    unbatched_bytes: int
    urgent: bool
    reclaimable: bool
    next_wake_s: float | None


@attrs.frozen
class BatchStatistics:
    open_batches: int
    leased_batches: int
    dead_batches: int
    dead_events: int


def count_pending(connection: apsw.Connection, agent_id: AgentId) -> int:
    """Events still to be extracted: unbatched or in a live batch (not dead letters)."""
    row = connection.execute(
        "SELECT count(*) FROM events e WHERE e.agent_id = ? AND e.extracted = ?"
        " AND (e.batch_id IS NULL OR EXISTS (SELECT 1 FROM event_batches b"
        " WHERE b.batch_id = e.batch_id AND b.status = 'open'))",
        (agent_id, ExtractionState.PENDING.value),
    ).fetchone()
    return 0 if row is None else int(row[0])


def pending_work(
    connection: apsw.Connection,
    agent_id: AgentId,
    now_s: float,
    urgent_kinds: Sequence[str],
) -> PendingWork:
    (unbatched, unbatched_bytes, urgent) = connection.execute(
        "SELECT count(*), coalesce(sum(length(CAST(text AS BLOB))), 0),"
        " coalesce(max(kind IN (SELECT value FROM json_each(?))), 0)"
        " FROM events WHERE agent_id = ? AND extracted = ? AND batch_id IS NULL",
        (json.dumps(list(urgent_kinds)), agent_id, ExtractionState.PENDING.value),
    ).fetchone()  # type: ignore[misc]
    reclaimable = False
    next_wake: float | None = None
    for token, deadline, retry_at in connection.execute(
        "SELECT lease_token, lease_deadline, retry_at FROM event_batches"
        " WHERE agent_id = ? AND status = 'open'",
        (agent_id,),
    ):
        free_at = float(retry_at)
        if token is not None:
            free_at = max(free_at, float(deadline))
        if free_at <= now_s:
            reclaimable = True
        elif next_wake is None or free_at < next_wake:
            next_wake = free_at
    return PendingWork(
        int(unbatched),
        int(unbatched_bytes),
        bool(urgent),
        reclaimable,
        next_wake,
    )


def _batch_events(
    connection: apsw.Connection, agent_id: AgentId, batch_id: int
) -> tuple[EvidenceEvent, ...]:
    rows = connection.execute(
        f"SELECT {EVENT_COLUMNS}{EVENT_FROM}"
        " WHERE e.agent_id = ? AND e.batch_id = ? AND e.extracted = ? ORDER BY e.rowid",
        (agent_id, batch_id, ExtractionState.PENDING.value),
    )
    return tuple(event_from_row(row) for row in rows)


def take_lease(
    connection: apsw.Connection,
    agent_id: AgentId,
    *,
    now_s: float,
    lease_s: float,
    max_events: int,
    form_new: bool,
    trigger: str,
    created_at: dt.datetime,
    max_bytes: int | None = None,
) -> Lease | None:
    """Lease a batch: first an open one whose lease expired (or was released) and whose
    backoff is over, else, when ``form_new``, a new one of the oldest unbatched events:
    at most ``max_events``, and at most ``max_bytes`` of text (UTF-8) unless that would
    leave the batch empty.

    The caller owns the transaction. Returns ``None`` when there is nothing to lease.
    """
    token = uuid.uuid4().hex
    deadline = now_s + lease_s
    while True:
        row = connection.execute(
            "SELECT batch_id, attempts, trigger FROM event_batches WHERE agent_id = ?"
            " AND status = 'open' AND (lease_token IS NULL OR lease_deadline <= ?)"
            " AND retry_at <= ? ORDER BY batch_id LIMIT 1",
            (agent_id, now_s, now_s),
        ).fetchone()
        if row is None:
            break
        batch_id = int(row[0])
        events = _batch_events(connection, agent_id, batch_id)
        if not events:
            # Every event was withdrawn (an edit rewound the session): nothing to extract.
            _settle(connection, batch_id, None, _empty_receipt(batch_id), created_at)
            continue
        attempt = int(row[1]) + 1
        connection.execute(
            "UPDATE event_batches SET lease_token = ?, lease_deadline = ?, attempts = ?"
            " WHERE batch_id = ?",
            (token, deadline, attempt, batch_id),
        )
        return Lease(batch_id, token, deadline, attempt, str(row[2]), events)
    if not form_new:
        return None
    rowids: list[int] = []
    size = 0
    for rowid, length in connection.execute(
        "SELECT rowid, length(CAST(text AS BLOB)) FROM events WHERE agent_id = ?"
        " AND extracted = ? AND batch_id IS NULL ORDER BY rowid LIMIT ?",
        (agent_id, ExtractionState.PENDING.value, max_events),
    ):
        size += int(length)
        if rowids and max_bytes is not None and size > max_bytes:
            break
        rowids.append(int(rowid))
    if not rowids:
        return None
    connection.execute(
        "INSERT INTO event_batches (agent_id, status, trigger, lease_token, lease_deadline,"
        " attempts, created_at) VALUES (?, 'open', ?, ?, ?, 1, ?)",
        (agent_id, trigger, token, deadline, _iso(created_at)),
    )
    batch_id = connection.last_insert_rowid()
    connection.execute(
        "UPDATE events SET batch_id = ? WHERE rowid IN (SELECT value FROM json_each(?))",
        (batch_id, json.dumps(rowids)),
    )
    return Lease(
        batch_id,
        token,
        deadline,
        1,
        trigger,
        _batch_events(connection, agent_id, batch_id),
    )


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat()


def _empty_receipt(batch_id: int) -> BatchReceipt:
    return BatchReceipt(batch_id, (), (), (), 0, 0, 0, 0, 0)


def _current(
    connection: apsw.Connection, agent_id: AgentId, batch_id: int
) -> tuple[str, str | None, str | None, str | None]:
    row = connection.execute(
        "SELECT status, lease_token, committed_token, receipt FROM event_batches"
        " WHERE agent_id = ? AND batch_id = ?",
        (agent_id, batch_id),
    ).fetchone()
    if row is None:
        raise StaleLeaseError(f"batch {batch_id} does not exist for {agent_id!r}")
    return (
        str(row[0]),
        None if row[1] is None else str(row[1]),
        None if row[2] is None else str(row[2]),
        None if row[3] is None else str(row[3]),
    )


def begin_commit(
    connection: apsw.Connection, agent_id: AgentId, lease: Lease
) -> BatchReceipt | None:
    """Check the lease inside the commit transaction.

    Returns the stored receipt when this token already committed the batch (a retry after
    a lost response: the caller must change nothing), ``None`` when the caller holds the
    live lease and may commit; raises :class:`StaleLeaseError` otherwise, also when an
    edit withdrew or re-opened one of the batch's events while it was being extracted
    (what was extracted no longer matches the session).
    """
    batch_id, token = lease.batch_id, lease.token
    status, lease_token, committed_token, receipt = _current(
        connection, agent_id, batch_id
    )
    if status == "committed" and committed_token == token and receipt is not None:
        return BatchReceipt.from_json(receipt)
    if status != "open" or lease_token != token:
        raise StaleLeaseError(
            f"batch {batch_id}: the lease was taken over or the batch is settled"
        )
    (held,) = connection.execute(
        "SELECT count(*) FROM events WHERE agent_id = ? AND batch_id = ?"
        " AND extracted = ? AND rowid IN (SELECT value FROM json_each(?))",
        (
            agent_id,
            batch_id,
            ExtractionState.PENDING.value,
            json.dumps([event.rowid for event in lease.events]),
        ),
    ).fetchone()  # type: ignore[misc]
    if held != len(lease.events):
        raise StaleLeaseError(f"batch {batch_id}: its events changed under the lease")
    return None


def _settle(
    connection: apsw.Connection,
    batch_id: int,
    token: str | None,
    receipt: BatchReceipt,
    now: dt.datetime,
) -> None:
    connection.execute(
        "UPDATE event_batches SET status = 'committed', committed_token = ?, receipt = ?,"
        " lease_token = NULL, lease_deadline = NULL, settled_at = ? WHERE batch_id = ?",
        (token, receipt.to_json(), _iso(now), batch_id),
    )


def finish_commit(
    connection: apsw.Connection,
    agent_id: AgentId,
    lease: Lease,
    receipt: BatchReceipt,
    now: dt.datetime,
) -> None:
    """Settle the batch: its events extracted, the receipt stored."""
    rowids = json.dumps([event.rowid for event in lease.events])
    connection.execute(
        "UPDATE events SET extracted = ? WHERE agent_id = ? AND extracted = ?"
        " AND rowid IN (SELECT value FROM json_each(?))",
        (
            ExtractionState.EXTRACTED.value,
            agent_id,
            ExtractionState.PENDING.value,
            rowids,
        ),
    )
    _settle(connection, lease.batch_id, lease.token, receipt, now)


def fail_batch(
    connection: apsw.Connection,
    agent_id: AgentId,
    lease: Lease,
    *,
    now_s: float,
    error: str,
    max_attempts: int,
    backoff_s: float,
    backoff_cap_s: float,
    now: dt.datetime,
) -> bool:
    """Release a failed lease with backoff; returns ``True`` when the batch is now dead.

    ``error`` is a short kind (an exception class name), never text from the events.
    Its sources are kept either way: a dead batch's events stay stored, recallable and
    counted until :func:`replay_dead` re-opens it.
    """
    status, lease_token, _, _ = _current(connection, agent_id, lease.batch_id)
    if status != "open" or lease_token != lease.token:
        raise StaleLeaseError(f"batch {lease.batch_id}: the lease is no longer held")
    if lease.attempt >= max_attempts:
        connection.execute(
            "UPDATE event_batches SET status = 'dead', lease_token = NULL,"
            " lease_deadline = NULL, last_error = ?, settled_at = ? WHERE batch_id = ?",
            (error, _iso(now), lease.batch_id),
        )
        return True
    delay = min(backoff_cap_s, backoff_s * 2 ** (lease.attempt - 1))
    connection.execute(
        "UPDATE event_batches SET lease_token = NULL, lease_deadline = NULL,"
        " retry_at = ?, last_error = ? WHERE batch_id = ?",
        (now_s + delay, error, lease.batch_id),
    )
    return False


def release_lease(connection: apsw.Connection, agent_id: AgentId, lease: Lease) -> None:
    """Give a lease back early (its work was fenced off), keeping its attempt count."""
    connection.execute(
        "UPDATE event_batches SET lease_token = NULL, lease_deadline = NULL"
        " WHERE agent_id = ? AND batch_id = ? AND lease_token = ? AND status = 'open'",
        (agent_id, lease.batch_id, lease.token),
    )


def release_leases(connection: apsw.Connection, agent_id: AgentId) -> int:
    """Forget leases and retry times of an earlier runtime (its clock is gone)."""
    connection.execute(
        "UPDATE event_batches SET lease_token = NULL, lease_deadline = NULL, retry_at = 0"
        " WHERE agent_id = ? AND status = 'open'",
        (agent_id,),
    )
    return connection.changes()


def replay_dead(connection: apsw.Connection, agent_id: AgentId) -> int:
    """Re-open every dead batch of the agent with fresh attempts; returns how many."""
    connection.execute(
        "UPDATE event_batches SET status = 'open', attempts = 0, retry_at = 0,"
        " settled_at = NULL WHERE agent_id = ? AND status = 'dead'",
        (agent_id,),
    )
    return connection.changes()


def batch_statistics(
    connection: apsw.Connection, agent_id: AgentId, now_s: float | None = None
) -> BatchStatistics:
    row = connection.execute(
        "SELECT coalesce(sum(status = 'open'), 0),"
        " coalesce(sum(status = 'open' AND lease_token IS NOT NULL"
        "  AND (?1 IS NULL OR lease_deadline > ?1)), 0),"
        " coalesce(sum(status = 'dead'), 0),"
        " (SELECT count(*) FROM events e JOIN event_batches d ON d.batch_id = e.batch_id"
        "  WHERE d.agent_id = ?2 AND d.status = 'dead' AND e.extracted = ?3)"
        " FROM event_batches WHERE agent_id = ?2",
        (now_s, agent_id, ExtractionState.PENDING.value),
    ).fetchone()
    assert row is not None  # noqa: S101 - an aggregate always yields one row
    return BatchStatistics(*(int(value) for value in row))
