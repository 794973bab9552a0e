"""Recall results, the audit trail, and how long they (and the recall records and
attention notices) are kept.

``recall_requests`` holds the text of recall answers (late results, and on-time answers
for a later fetch): a cache, dropped by a forget, clear or suppression. Both it and the
audit are bounded per agent: an insert of a result removes the excess over the agent's
cap in the same transaction (so a flood of ``wait_s=0`` recalls never grows the table
past it), and maintenance removes expired rows and any remaining excess, a bounded number
per pass (:func:`prune_retention`), and so for the ID-only recall records
(cairn.store.recall_records) and the attention inbox (cairn.store.attention).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import attrs

from cairn.store.attention import drop_recall_notices, prune_notices
from cairn.store.recall_records import prune_records

if TYPE_CHECKING:
    from collections.abc import Sequence

    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    "Pruned",
    "Retention",
    "append_audit",
    "drop_late_results",
    "forget_epoch",
    "load_recall_result",
    "prune_retention",
    "save_recall_result",
]


@attrs.frozen
class Retention:
    """How long, and how many per agent, late results and audit rows are kept; at most
    ``batch`` rows of each table go per maintenance pass."""

    recall_max_age: dt.timedelta
    recall_keep: int
    audit_max_age: dt.timedelta
    audit_keep: int
    batch: int
    # Recall records (ID-only) outlive the answers' text; notices go when untouched this
    # long, consumed or not.
    record_max_age: dt.timedelta = dt.timedelta(days=30)
    record_keep: int = 100_000
    attention_max_age: dt.timedelta = dt.timedelta(days=7)


@attrs.frozen
class Pruned:
    recall_results: int
    audit_rows: int
    recall_records: int = 0
    attention_items: int = 0


def save_recall_result(
    connection: apsw.Connection,
    agent_id: AgentId,
    request_id: str,
    status: str,
    result: bytes | None,
    now: dt.datetime,
    snapshot_epoch: int | None = None,
    *,
    keep: int | None = None,
) -> bool:
    """Store a late result; refused (``False``) when it was computed on a snapshot older
    than the agent's last forget, clear or suppression, which it may quote. With
    ``keep``, the agent's oldest results beyond the newest ``keep`` go in the same
    transaction (at most two per insert beyond this one, so an over-full table from an
    earlier cap shrinks without a long transaction here)."""
    if snapshot_epoch is not None and snapshot_epoch != forget_epoch(
        connection, agent_id
    ):
        return False
    connection.execute(
        "INSERT INTO recall_requests (agent_id, request_id, created_at, status, result)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET status = excluded.status,"
        " result = excluded.result",
        (agent_id, request_id, _stamp(now), status, result),
    )
    if keep is not None:
        _trim_recall_results(connection, agent_id, keep, limit=3)
    return True


def forget_epoch(connection: apsw.Connection, agent_id: AgentId) -> int:
    """How many forgets, clears and suppressions the agent has had (see 0005)."""
    row = connection.execute(
        "SELECT forget_epoch FROM agents WHERE agent_id = ?", (agent_id,)
    ).fetchone()
    return 0 if row is None else int(row[0])


def load_recall_result(
    connection: apsw.Connection, agent_id: AgentId, request_id: str
) -> tuple[str, bytes | None] | None:
    row = connection.execute(
        "SELECT status, result FROM recall_requests WHERE agent_id = ? AND request_id = ?",
        (agent_id, request_id),
    ).fetchone()
    if row is None:
        return None
    return str(row[0]), None if row[1] is None else bytes(row[1])


def append_audit(
    connection: apsw.Connection, rows: Sequence[tuple[AgentId, dt.datetime, str, str]]
) -> None:
    connection.executemany(
        "INSERT INTO audit (agent_id, at, action, detail) VALUES (?, ?, ?, ?)",
        [(agent, _stamp(at), action, detail) for agent, at, action, detail in rows],
    )


def drop_late_results(connection: apsw.Connection, agent_id: AgentId) -> None:
    """Stored recall answers may quote forgotten, cleared or suppressed text: they are
    caches and go in the same transaction as the forget, clear or suppression, with the
    notices that point at them. The ID-only recall records stay (what was selected)."""
    connection.execute("DELETE FROM recall_requests WHERE agent_id = ?", (agent_id,))
    drop_recall_notices(connection, agent_id)
    connection.execute(
        "UPDATE agents SET forget_epoch = forget_epoch + 1 WHERE agent_id = ?",
        (agent_id,),
    )


def prune_retention(
    connection: apsw.Connection,
    agent_id: AgentId,
    retention: Retention,
    now: dt.datetime,
    *,
    trim_audit: bool = True,
) -> Pruned:
    """One bounded pass: expired rows first, then the excess over each cap, oldest
    first, at most ``retention.batch`` rows per table.

    Finding the audit cap's boundary walks the agent's newest ``audit_keep`` index
    entries (about 10 ms at 100k rows), so the caller may skip it (``trim_audit``) while
    few rows were added since the last trim; expired rows are an index seek. The recall
    records' cap is looked for at the same passes: every computed recall adds one audit
    row and one record.
    """
    batch = retention.batch
    connection.execute(
        "DELETE FROM recall_requests WHERE seq IN (SELECT seq FROM recall_requests"
        " WHERE agent_id = ? AND created_at < ? ORDER BY created_at, seq LIMIT ?)",
        (agent_id, _stamp(now - retention.recall_max_age), batch),
    )
    expired = connection.changes()
    recall = expired + _trim_recall_results(
        connection, agent_id, retention.recall_keep, limit=batch - expired
    )
    connection.execute(
        "DELETE FROM audit WHERE rowid IN (SELECT rowid FROM audit"
        " WHERE agent_id = ? AND at < ? ORDER BY at, rowid LIMIT ?)",
        (agent_id, _stamp(now - retention.audit_max_age), batch),
    )
    expired = connection.changes()
    if trim_audit:
        expired += _trim_audit(
            connection, agent_id, retention.audit_keep, limit=batch - expired
        )
    records = prune_records(
        connection,
        agent_id,
        cutoff=now - retention.record_max_age,
        keep=retention.record_keep,
        limit=batch,
        trim=trim_audit,
    )
    notices = prune_notices(
        connection, agent_id, now - retention.attention_max_age, batch
    )
    return Pruned(recall, expired, records, notices)


def _trim_recall_results(
    connection: apsw.Connection, agent_id: AgentId, keep: int, *, limit: int
) -> int:
    """Delete up to ``limit`` of the agent's results older than its newest ``keep``."""
    if limit <= 0:
        return 0
    boundary = connection.execute(
        "SELECT created_at, seq FROM recall_requests WHERE agent_id = ?"
        " ORDER BY created_at DESC, seq DESC LIMIT 1 OFFSET ?",
        (agent_id, keep),
    ).fetchone()
    if boundary is None:
        return 0
    created_at, seq = boundary
    connection.execute(
        "DELETE FROM recall_requests WHERE seq IN (SELECT seq FROM recall_requests"
        " WHERE agent_id = ? AND created_at <= ? AND (created_at < ? OR seq <= ?)"
        " ORDER BY created_at, seq LIMIT ?)",
        (agent_id, created_at, created_at, seq, limit),
    )
    return connection.changes()


def _trim_audit(
    connection: apsw.Connection, agent_id: AgentId, keep: int, *, limit: int
) -> int:
    """Delete up to ``limit`` of the agent's audit rows older than its newest ``keep``."""
    if limit <= 0:
        return 0
    boundary = connection.execute(
        "SELECT at, rowid FROM audit WHERE agent_id = ?"
        " ORDER BY at DESC, rowid DESC LIMIT 1 OFFSET ?",
        (agent_id, keep),
    ).fetchone()
    if boundary is None:
        return 0
    at, rowid = boundary
    connection.execute(
        "DELETE FROM audit WHERE rowid IN (SELECT rowid FROM audit"
        " WHERE agent_id = ? AND at <= ? AND (at < ? OR rowid <= ?)"
        " ORDER BY at, rowid LIMIT ?)",
        (agent_id, at, at, rowid, limit),
    )
    return connection.changes()


def _stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat()
