"""Late recall results and the audit trail."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    import apsw

    from cairn.domain.ids import AgentId

__all__ = ["append_audit", "load_recall_result", "save_recall_result"]


def save_recall_result(
    connection: apsw.Connection,
    agent_id: AgentId,
    request_id: str,
    status: str,
    result: bytes | None,
    now: dt.datetime,
) -> None:
    connection.execute(
        "INSERT INTO recall_requests (agent_id, request_id, created_at, status, result)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET status = excluded.status,"
        " result = excluded.result",
        (agent_id, request_id, now.astimezone(dt.UTC).isoformat(), status, result),
    )


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
