"""Counts for ``status`` and for the reports of clear and retire."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cairn.store.agents import list_agents
from cairn.store.batches import batch_statistics, count_pending
from cairn.store.dirty import count_dirty

if TYPE_CHECKING:
    from collections.abc import Iterable

    import apsw

    from cairn.domain.ids import AgentId

__all__ = ["agent_counts", "count_noise", "count_rows"]

_COUNTED = ("events", "claims", "directives", "embeddings")
_TABLES = frozenset({*_COUNTED, "tombstones", "evidence_tombstones"})


def count_rows(
    connection: apsw.Connection, agent_id: AgentId, tables: Iterable[str]
) -> dict[str, int]:
    counts = {}
    for table in tables:
        if table not in _TABLES:
            raise ValueError(f"not a counted table: {table!r}")
        row = connection.execute(
            f"SELECT count(*) FROM {table} WHERE agent_id = ?",  # noqa: S608 - fixed names
            (agent_id,),
        ).fetchone()
        counts[table] = 0 if row is None else int(row[0])
    return counts


def count_noise(connection: apsw.Connection, agent_id: AgentId) -> int:
    """Stored rows of the agent classified as noise (read from the partial index
    ``events_noise``, which holds only those)."""
    row = connection.execute(
        "SELECT count(*) FROM events WHERE agent_id = ? AND evidence_class <> 'content'",
        (agent_id,),
    ).fetchone()
    return 0 if row is None else int(row[0])


def agent_counts(connection: apsw.Connection) -> dict[AgentId, dict[str, int]]:
    """Per agent: rows per table, pending extraction, open batches, dead letters and
    dirty seeds."""
    agents: dict[AgentId, dict[str, int]] = {}
    for agent in list_agents(connection):
        counts = count_rows(connection, agent, _COUNTED)
        counts["events_pending_extraction"] = count_pending(connection, agent)
        batches = batch_statistics(connection, agent)
        counts["extraction_batches_open"] = batches.open_batches
        counts["extraction_dead_letters"] = batches.dead_batches
        counts["events_in_dead_letters"] = batches.dead_events
        counts["events_noise"] = count_noise(connection, agent)
        counts["dirty_seeds"] = count_dirty(connection, agent)
        agents[agent] = counts
    return agents
