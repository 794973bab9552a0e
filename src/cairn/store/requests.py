"""Late recall results and the audit trail."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    "append_audit",
    "drop_late_results",
    "forget_epoch",
    "load_recall_result",
    "save_recall_result",
]


def save_recall_result(
    connection: apsw.Connection,
    agent_id: AgentId,
    request_id: str,
    status: str,
    result: bytes | None,
    now: dt.datetime,
    snapshot_epoch: int | None = None,
) -> bool:
    """Store a late result; refused (``False``) when it was computed on a snapshot older
    than the agent's last forget, clear or suppression, which it may quote."""
    if snapshot_epoch is not None and snapshot_epoch != forget_epoch(
        connection, agent_id
    ):
        return False
    connection.execute(
        "INSERT INTO recall_requests (agent_id, request_id, created_at, status, result)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET status = excluded.status,"
        " result = excluded.result",
        (agent_id, request_id, now.astimezone(dt.UTC).isoformat(), status, result),
    )
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
        [
            (agent, at.astimezone(dt.UTC).isoformat(), action, detail)
            for agent, at, action, detail in rows
        ],
    )


def drop_late_results(connection: apsw.Connection, agent_id: AgentId) -> None:
    """Stored late recall answers may quote forgotten, cleared or suppressed text: they
    are caches and go in the same transaction as the forget, clear or suppression."""
    connection.execute("DELETE FROM recall_requests WHERE agent_id = ?", (agent_id,))
    connection.execute(
        "UPDATE agents SET forget_epoch = forget_epoch + 1 WHERE agent_id = ?",
        (agent_id,),
    )
