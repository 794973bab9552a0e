"""The read-only commands on a data directory this process cannot write.

``status``, ``doctor`` (without ``--repair``) and ``export`` read what is stored; when the
directory cannot be written (cairn.runtime.writable) they read it through a read-only
SQLite connection (cairn.store.read_only) instead of a runtime: no migration, no
open-time repair, no background work, nothing written. They say so (``read_only`` in
their JSON) and say what they could not do:

- ``status``: stored counts only; no runtime state, and no embedder is loaded;
- ``doctor``: every check that only reads; FTS5's own integrity-check (a write
  statement), the vector projections and the events without a vector (both need the
  embedder's identity) are listed as skipped;
- ``export``: refused while a clear job is pending (only a writer can finish it, and
  what it clears must never be exported);
- ``memories list`` and ``memories show``: what is stored, read as the runtime reads it
  (cairn.runtime.inspection).

Every other command needs to write and is refused with ReadOnlyDataDirectoryError
(exit 2), ``recall`` included: a recall records what it contributed, durably.
(tests/cli/test_read_only_directory.py.)
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import attrs
import trio

from cairn.api import bounds
from cairn.api.status import AgentState, AgentStatus
from cairn.domain.ids import AgentId, validate_agent_id
from cairn.errors import InvalidInputError, ReadOnlyDataDirectoryError
from cairn.ipc.directory import Occupant, claim_data_directory
from cairn.runtime.inspection import memory_filter, read_memories, read_memory
from cairn.runtime.memory import DATABASE_NAME
from cairn.runtime.operator_reports import DoctorReport, ExportSummary
from cairn.runtime.threads import run_in_thread
from cairn.store.agents import agent_epochs, list_agents
from cairn.store.batches import batch_statistics, count_pending
from cairn.store.clear_jobs import pending_clear_jobs
from cairn.store.embeddings import embeddings_by_identity
from cairn.store.export import encode_line, header, iter_export
from cairn.store.integrity import (
    FTS_TABLES,
    fts_row_gaps,
    orphan_counts,
    sqlite_integrity,
)
from cairn.store.read_only import open_read_only
from cairn.store.status import agent_counts

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import AsyncIterator, Callable, Sequence

    import apsw

    from cairn.api.reports import MemoryDetail, MemoryItem
    from cairn.cli.app import CliContext
    from cairn.domain.scope import Scope

__all__ = [
    "DOCTOR_SKIPPED",
    "StoredData",
    "StoredInspection",
    "doctor_stored",
    "export_stored",
    "open_stored",
    "stored_status",
]

T = TypeVar("T")

DOCTOR_SKIPPED = (
    "FTS5 integrity-check (a write statement)",
    "vector projections (need the embedder)",
    "events without a vector (need the embedder)",
)


@attrs.frozen
class StoredData:
    """A data directory read without a runtime, under its lock (no writer meanwhile)."""

    data_dir: Path

    async def read(self, function: Callable[[apsw.Connection], T]) -> T:
        """Run ``function`` on one read-only snapshot of the database."""
        database = self.data_dir / DATABASE_NAME

        def snapshot() -> T:
            connection = open_read_only(database)
            try:
                with connection:
                    result = function(connection)
            finally:
                connection.close()
            return result

        return await run_in_thread(snapshot, limiter=trio.CapacityLimiter(1))


@contextlib.asynccontextmanager
async def open_stored(cli: CliContext) -> AsyncIterator[StoredData]:
    """The stored data of ``cli.data``, locked against writers while it is read."""
    data_dir = cli.data
    claimed = await run_in_thread(
        lambda: claim_data_directory(
            data_dir, role="command", command=cli.command, read_only=True
        ),
        limiter=trio.CapacityLimiter(1),
    )
    if isinstance(claimed, Occupant):
        raise claimed.refusal(cli.command)
    with claimed:
        yield StoredData(data_dir)


async def stored_status(stored: StoredData) -> dict[str, Any]:
    """``status``'s report from the stored rows alone (every agent ``live: false``)."""
    counts, epochs, jobs, vectors = await stored.read(
        lambda connection: (
            agent_counts(connection),
            agent_epochs(connection),
            pending_clear_jobs(connection),
            embeddings_by_identity(connection),
        )
    )
    agents: dict[str, Any] = {}
    for agent in sorted(counts):
        stored_counts: dict[str, Any] = dict(counts[agent])
        entry = attrs.asdict(AgentStatus(agent, AgentState.STOPPED, **stored_counts))
        del entry["agent_id"]
        entry["runtime"] = entry.pop("statistics")
        entry["live"] = False
        entry["epoch"] = epochs.get(agent, 0)
        entry["stored_vectors"] = vectors.get(agent, [])
        entry["clear_jobs_pending"] = [
            {k: v for k, v in job.as_json().items() if k != "agent_id"}
            for job in jobs
            if job.agent_id == agent
        ]
        agents[agent] = entry
    return {
        "data_dir": str(stored.data_dir),
        "embedder": None,
        "read_only": True,
        "agents": agents,
    }


def _doctor_rows(connection: apsw.Connection) -> dict[str, Any]:
    agents = list_agents(connection)
    return {
        "sqlite": sqlite_integrity(connection),
        "gaps": {table: fts_row_gaps(connection, table) for table in FTS_TABLES},
        "orphans": orphan_counts(connection),
        "clear_jobs": pending_clear_jobs(connection),
        "pending": {agent: count_pending(connection, agent) for agent in agents},
        "dead": {
            agent: batch_statistics(connection, agent).dead_events for agent in agents
        },
    }


async def doctor_stored(stored: StoredData) -> dict[str, Any]:
    """``doctor``'s JSON report from the checks that only read (see the module)."""
    found = await stored.read(_doctor_rows)
    report = DoctorReport(
        data_dir=str(stored.data_dir),
        sqlite_integrity=tuple(found["sqlite"]) or "ok",
        fts={},
        orphans=found["orphans"],
        projections=(),
        events_unembedded={},
        events_pending_extraction=found["pending"],
        events_in_dead_letters=found["dead"],
        clear_jobs_pending=tuple(found["clear_jobs"]),
    )
    problems = list(report.problems)
    fts: dict[str, Any] = {}
    for table, gaps in found["gaps"].items():
        fts[table] = {
            "integrity": None,
            "rows_without_owner": gaps.rows_without_owner,
            "owners_without_row": gaps.owners_without_row,
            "sample_rowids": list(gaps.sample_rowids),
        }
        if gaps.rows_without_owner or gaps.owners_without_row:
            problems.append(f"{table} rows out of step with their table")
    return {
        **report.as_json(),
        "fts": fts,
        "problems": problems,
        "ok": not problems,
        "read_only": True,
        "skipped": list(DOCTOR_SKIPPED),
    }


def _export_agents(
    connection: apsw.Connection, agent_id: str | None, data_dir: Path
) -> list[AgentId]:
    stored = list_agents(connection)
    if agent_id is None:
        agents = stored
    else:
        try:
            agent = validate_agent_id(agent_id)
        except ValueError as error:
            raise InvalidInputError(str(error)) from None
        if agent not in stored:
            raise InvalidInputError(f"no agent {agent_id!r} in {data_dir}")
        agents = [agent]
    pending = sorted(
        {job.agent_id for job in pending_clear_jobs(connection)} & set(agents)
    )
    if pending:
        raise ReadOnlyDataDirectoryError(
            f"a clear of {', '.join(pending)} is pending in {data_dir}, and only a"
            " writer can finish it: an export now could hold what is being cleared;"
            " run any cairn command once with write access first"
        )
    return agents


async def export_stored(
    stored: StoredData,
    sink: TextIO,
    agent_id: str | None,
    progress: Callable[[int], None] | None = None,
) -> ExportSummary:
    """``export`` from the stored rows: the same lines a runtime's export writes."""

    def write(connection: apsw.Connection) -> ExportSummary:
        agents = _export_agents(connection, agent_id, stored.data_dir)
        counts: dict[str, int] = {}
        sink.write(encode_line(header()))
        for record in iter_export(connection, agents):
            sink.write(encode_line(record))
            counts[record["type"]] = counts.get(record["type"], 0) + 1
            if progress is not None:
                progress(1)
        sink.flush()
        return ExportSummary(tuple(agents), counts)

    return await stored.read(write)


@attrs.frozen
class StoredInspection:
    """``memories`` and ``memory`` as the API declares them (cairn.api.protocol), read
    from the stored rows as the runtime reads them: a command lists through this or
    through the API alike."""

    stored: StoredData

    async def memories(
        self,
        agent_id: str,
        *,
        kind: str | None = None,
        scope: Scope | None = None,
        lifecycle: str | None = None,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        text: str | None = None,
        tags: Sequence[str] = (),
        limit: int = 50,
    ) -> list[MemoryItem]:
        bounds.check_limit(limit)
        wanted = memory_filter(
            kind=kind,
            scope=scope,
            lifecycle=lifecycle,
            since=since,
            until=until,
            text=text,
            tags=tags,
        )
        agent = _agent(agent_id)
        return await self.stored.read(
            lambda connection: read_memories(connection, agent, wanted, limit)
        )

    async def memory(self, agent_id: str, claim_id: str) -> MemoryDetail:
        agent = _agent(agent_id)
        return await self.stored.read(
            lambda connection: read_memory(connection, agent, claim_id)
        )


def _agent(agent_id: str) -> AgentId:
    try:
        return validate_agent_id(agent_id)
    except ValueError as error:
        raise InvalidInputError(str(error)) from None
