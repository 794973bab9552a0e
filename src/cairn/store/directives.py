"""Directive rows: standing instructions in their own trust plane."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import apsw

    from cairn.domain.ids import AgentId

__all__ = ["active_directives", "create_directive"]


def create_directive(
    connection: apsw.Connection,
    agent_id: AgentId,
    kind: str,
    text: str,
    status: str,
    now: dt.datetime,
) -> str:
    directive_id = uuid.uuid4().hex
    stamp = now.astimezone(dt.UTC).isoformat()
    connection.execute(
        "INSERT INTO directives (directive_id, agent_id, kind, text, status, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (directive_id, agent_id, kind, text, status, stamp, stamp),
    )
    return directive_id


def active_directives(
    connection: apsw.Connection, agent_id: AgentId
) -> list[tuple[str, str, str]]:
    """``(id, kind, text)`` of active directives, ``updated_at DESC, id ASC``."""
    return [
        (str(i), str(k), str(t))
        for i, k, t in connection.execute(
            "SELECT directive_id, kind, text FROM directives"
            " WHERE agent_id = ? AND status = 'active'"
            " ORDER BY updated_at DESC, directive_id ASC",
            (agent_id,),
        )
    ]
