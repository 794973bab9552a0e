"""Agent rows: existence and the config epoch that fences stale work."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from cairn.domain.ids import AgentId
from cairn.errors import StaleResultError

if TYPE_CHECKING:
    import apsw

    from cairn.domain.identity import ExecutionIdentity

__all__ = [
    "advance_epoch",
    "agent_epochs",
    "catch_up_epoch",
    "check_identity",
    "ensure_agent",
    "list_agents",
]


def ensure_agent(
    connection: apsw.Connection, agent_id: AgentId, now: dt.datetime
) -> int:
    """Create the agent row if missing; return its current epoch."""
    connection.execute(
        "INSERT INTO agents (agent_id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (agent_id, now.astimezone(dt.UTC).isoformat()),
    )
    row = connection.execute(
        "SELECT config_epoch FROM agents WHERE agent_id = ?", (agent_id,)
    ).fetchone()
    assert row is not None  # noqa: S101 - inserted just above in the same transaction
    return int(row[0])


def advance_epoch(connection: apsw.Connection, agent_id: AgentId) -> int:
    connection.execute(
        "UPDATE agents SET config_epoch = config_epoch + 1 WHERE agent_id = ?",
        (agent_id,),
    )
    row = connection.execute(
        "SELECT config_epoch FROM agents WHERE agent_id = ?", (agent_id,)
    ).fetchone()
    return 0 if row is None else int(row[0])


def catch_up_epoch(connection: apsw.Connection, agent_id: AgentId, epoch: int) -> None:
    """Bring the stored epoch up to the live fence's (never down).

    The live fence may advance without a transaction of its own (an embedding switch
    cancels the old epoch's work at once, with no checkpoint); the agent's coordinator
    records it at its next transaction, before any check or epoch advance there.
    """
    connection.execute(
        "UPDATE agents SET config_epoch = ? WHERE agent_id = ? AND config_epoch < ?",
        (epoch, agent_id, epoch),
    )


def check_identity(connection: apsw.Connection, identity: ExecutionIdentity) -> None:
    """Raise :class:`StaleResultError` unless ``identity`` is still the agent's epoch.

    Called inside the commit transaction, so no epoch change can slip in between.
    """
    row = connection.execute(
        "SELECT config_epoch FROM agents WHERE agent_id = ?", (identity.agent_id,)
    ).fetchone()
    if row is None or int(row[0]) != identity.config_epoch:
        raise StaleResultError(
            f"result of epoch {identity.config_epoch} for agent {identity.agent_id!r}"
            " is stale"
        )


def list_agents(connection: apsw.Connection) -> list[AgentId]:
    return [
        AgentId(str(row[0]))
        for row in connection.execute("SELECT agent_id FROM agents ORDER BY agent_id")
    ]


def agent_epochs(connection: apsw.Connection) -> dict[AgentId, int]:
    """Every agent's stored config epoch."""
    return {
        AgentId(str(agent_id)): int(epoch)
        for agent_id, epoch in connection.execute(
            "SELECT agent_id, config_epoch FROM agents ORDER BY agent_id"
        )
    }
