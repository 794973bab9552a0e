"""The durable record of each recall's contribution (``recall_records``, schema 0009).

A record is written by the agent's coordinator before the answer is handed back: the
request, session, host turn, status and the manifest (what was selected, dropped and
allocated, by ID only). The answer's text lives beside it in ``recall_requests`` (a cache
that a forget, clear or suppression drops, cairn.store.requests); the record stays, so
lineage of what a turn was shown outlives the text. Retention removes a record together
with everything that names it (its text row, its attention notice), never the parent
alone.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    "StoredRecord",
    "TurnContribution",
    "complete_record",
    "list_records",
    "prune_records",
    "record_returned",
    "turn_contribution",
]


@attrs.frozen
class StoredRecord:
    """A row of ``recall_records``; ``manifest`` is its JSON (cairn.runtime decodes it)."""

    request_id: str
    status: str
    created_at: str
    session_id: str | None
    turn_id: str | None
    manifest: str | None


def record_returned(
    connection: apsw.Connection,
    agent_id: AgentId,
    request_id: str,
    *,
    session_id: str | None,
    turn_id: str | None,
    status: str,
    manifest: str | None,
    snapshot_epoch: int | None,
    now: dt.datetime,
) -> None:
    """The answer handed back now. A late completion may have landed first (its write
    can overtake this one in the queue): then only the session and turn are added."""
    connection.execute(
        "INSERT INTO recall_records (agent_id, request_id, session_id, turn_id,"
        " created_at, status, manifest, forget_epoch) VALUES (?, ?, ?, ?, ?, ?, ?,"
        # A pending answer has no snapshot yet: the epoch it returned under stands in,
        # so a forget committed after it still invalidates the turn's reuse.
        " coalesce(?, (SELECT forget_epoch FROM agents WHERE agent_id = ?)))"
        " ON CONFLICT DO UPDATE SET session_id = excluded.session_id,"
        " turn_id = excluded.turn_id, created_at = min(created_at, excluded.created_at)",
        (
            agent_id,
            request_id,
            session_id,
            turn_id,
            _stamp(now),
            status,
            manifest,
            snapshot_epoch,
            agent_id,
        ),
    )


def complete_record(
    connection: apsw.Connection,
    agent_id: AgentId,
    request_id: str,
    *,
    status: str,
    manifest: str | None,
    snapshot_epoch: int | None,
    now: dt.datetime,
) -> None:
    """A late result (or its failure) completes the record of a ``pending`` answer."""
    connection.execute(
        "INSERT INTO recall_records (agent_id, request_id, created_at, status, manifest,"
        " forget_epoch) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET"
        " status = excluded.status, manifest = coalesce(excluded.manifest, manifest),"
        " forget_epoch = coalesce(excluded.forget_epoch, forget_epoch)",
        (agent_id, request_id, _stamp(now), status, manifest, snapshot_epoch),
    )


def list_records(
    connection: apsw.Connection,
    agent_id: AgentId,
    *,
    session_id: str | None,
    limit: int,
) -> list[StoredRecord]:
    """The agent's records, newest first (all sessions, or one)."""
    columns = "request_id, status, created_at, session_id, turn_id, manifest"
    if session_id is None:
        rows = connection.execute(
            f"SELECT {columns} FROM recall_records WHERE agent_id = ?"  # noqa: S608 - fixed columns
            " ORDER BY created_at DESC, seq DESC LIMIT ?",
            (agent_id, limit),
        )
    else:
        rows = connection.execute(
            f"SELECT {columns} FROM recall_records"  # noqa: S608 - fixed columns
            " WHERE agent_id = ? AND session_id = ? ORDER BY seq DESC LIMIT ?",
            (agent_id, session_id, limit),
        )
    return [
        StoredRecord(
            request_id=str(request_id),
            status=str(status),
            created_at=str(at),
            session_id=None if session is None else str(session),
            turn_id=None if turn is None else str(turn),
            manifest=None if manifest is None else str(manifest),
        )
        for request_id, status, at, session, turn, manifest in rows
    ]


@attrs.frozen
class TurnContribution:
    """The newest record of a host turn, and whether it may still be reused."""

    request_id: str
    status: str
    # The stored answer (None: pending, failed, refused, or dropped by a forget).
    result: bytes | None
    # The record's epoch is the agent's current one: no forget, clear or suppression
    # committed since it was computed.
    current: bool


def turn_contribution(
    connection: apsw.Connection,
    agent_id: AgentId,
    session_id: str | None,
    turn_id: str,
) -> TurnContribution | None:
    row = connection.execute(
        "SELECT c.request_id, c.status, r.result,"
        " c.forget_epoch IS (SELECT forget_epoch FROM agents WHERE agent_id = c.agent_id)"
        " FROM recall_records c LEFT JOIN recall_requests r"
        " ON r.agent_id = c.agent_id AND r.request_id = c.request_id AND r.status = 'ok'"
        " WHERE c.agent_id = ? AND c.session_id IS ? AND c.turn_id = ?"
        " ORDER BY c.seq DESC LIMIT 1",
        (agent_id, session_id, turn_id),
    ).fetchone()
    if row is None:
        return None
    request_id, status, result, current = row
    return TurnContribution(
        str(request_id),
        str(status),
        None if result is None else bytes(result),
        bool(current),
    )


def prune_records(
    connection: apsw.Connection,
    agent_id: AgentId,
    *,
    cutoff: dt.datetime,
    keep: int,
    limit: int,
    trim: bool,
) -> int:
    """Delete up to ``limit`` of the agent's records older than ``cutoff`` (and, with
    ``trim``, beyond its newest ``keep``), oldest first, each with its text row; its
    attention notice goes by cascade."""
    selected = (
        "SELECT seq FROM recall_records WHERE agent_id = ? AND created_at < ?"
        " ORDER BY created_at, seq LIMIT ?"
    )
    deleted = _delete_records(
        connection, agent_id, selected, (agent_id, _stamp(cutoff), limit)
    )
    if not trim or deleted >= limit:
        return deleted
    boundary = connection.execute(
        "SELECT created_at, seq FROM recall_records WHERE agent_id = ?"
        " ORDER BY created_at DESC, seq DESC LIMIT 1 OFFSET ?",
        (agent_id, keep),
    ).fetchone()
    if boundary is None:
        return deleted
    created_at, seq = boundary
    selected = (
        "SELECT seq FROM recall_records WHERE agent_id = ? AND created_at <= ?"
        " AND (created_at < ? OR seq <= ?) ORDER BY created_at, seq LIMIT ?"
    )
    return deleted + _delete_records(
        connection,
        agent_id,
        selected,
        (agent_id, created_at, created_at, seq, limit - deleted),
    )


def _delete_records(
    connection: apsw.Connection,
    agent_id: AgentId,
    selected: str,
    parameters: tuple[object, ...],
) -> int:
    # The same selection twice in one transaction: children first, then the records.
    connection.execute(
        "DELETE FROM recall_requests WHERE agent_id = ? AND request_id IN"  # noqa: S608 - fixed SQL
        f" (SELECT request_id FROM recall_records WHERE seq IN ({selected}))",
        (agent_id, *parameters),
    )
    connection.execute(
        f"DELETE FROM recall_records WHERE seq IN ({selected})",  # noqa: S608 - fixed SQL
        parameters,
    )
    return connection.changes()


def _stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat()
