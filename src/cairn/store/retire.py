"""Retiring an agent: every row of its namespace goes, so a new agent with the same ID
starts empty (tests/runtime/test_retire.py).

Runs as the last step of a retire job (cairn.store.clear_jobs), after the claims were
deleted in bounded batches and the vector files removed. The tables are found from the
schema (every table with an ``agent_id`` column), so a table added later is not missed;
rows keyed only by a parent row (claim sources) go by cascade, FTS rows and stored
vectors by the delete triggers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cairn.store.fts_purge import request_fts_purge, run_fts_purges

if TYPE_CHECKING:
    import datetime as dt

    import apsw

    from cairn.domain.ids import AgentId

__all__ = ["namespace_tables", "purge_namespace"]

# Deleted first (their triggers clean projections), the agents row last.
_FIRST = ("claims", "events", "embeddings")
_LAST = ("clear_jobs", "agents")
# Never holds committed rows (repairs insert and delete within one transaction).
_TRANSIENT = ("clear_fence_override",)


def namespace_tables(connection: apsw.Connection) -> list[str]:
    """Ordinary tables with an ``agent_id`` column, in deletion order."""
    names = [
        str(row[0])
        for row in connection.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table'"
            " AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' AND name NOT LIKE 'sqlite_%'"
            " ORDER BY name"
        )
    ]
    owned = [
        name
        for name in names
        if any(
            str(column[1]) == "agent_id"
            for column in connection.execute(
                "SELECT * FROM pragma_table_info(?)", (name,)
            )
        )
    ]
    middle = [
        name
        for name in owned
        if name not in _FIRST and name not in _LAST and name not in _TRANSIENT
    ]
    return (
        [name for name in _FIRST if name in owned]
        + middle
        + [name for name in _LAST if name in owned]
    )


def purge_namespace(
    connection: apsw.Connection, agent_id: AgentId, now: dt.datetime
) -> dict[str, int]:
    """Delete every row of the agent; returns the count per table."""
    # The job's claims phase already deleted the turns in bounded batches: they count.
    row = connection.execute(
        "SELECT coalesce(sum(deleted_events), 0) FROM clear_jobs WHERE agent_id = ?",
        (agent_id,),
    ).fetchone()
    earlier = 0 if row is None else int(row[0])
    counts: dict[str, int] = {}
    for table in namespace_tables(connection):
        connection.execute(
            f"DELETE FROM {table} WHERE agent_id = ?",  # noqa: S608 - names from the schema
            (agent_id,),
        )
        counts[table] = connection.changes() + (earlier if table == "events" else 0)
    # Deleted tokens leave the index pages now, not at some later maintenance pass.
    request_fts_purge(connection, "claim_fts", now)
    request_fts_purge(connection, "event_fts", now)
    run_fts_purges(connection, now)
    return counts
