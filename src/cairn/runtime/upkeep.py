"""Operator upkeep of a data directory: rebuild vector projections, check and repair.

Both work on agents this runtime has not started yet (the CLI opens its own runtime): the
projection files are then nobody's live state, and starting the agent afterwards runs the
ordinary warm-up (cairn.runtime.actors.embedding), which rebuilds a projection from the
stored blobs when it disagrees with them and embeds whatever has no vector yet.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from cairn.domain.ids import AgentId, validate_agent_id
from cairn.errors import (
    InvalidInputError,
    VectorIdentityMismatchError,
    VectorIndexCorruptError,
)
from cairn.runtime.actors.write_coordinator import SharedWrite
from cairn.runtime.core import runtime_core
from cairn.runtime.operator_reports import (
    DoctorReport,
    FtsCheck,
    ProjectionCheck,
    ProjectionState,
    ReindexReport,
)
from cairn.runtime.threads import run_in_thread
from cairn.store.agents import list_agents
from cairn.store.batches import batch_statistics, count_pending
from cairn.store.clear_jobs import pending_clear_jobs
from cairn.store.embeddings import count_embeddings, count_missing, iter_embeddings
from cairn.store.integrity import (
    FTS_TABLES,
    delete_orphan_embeddings,
    fts_integrity,
    fts_row_gaps,
    orphan_counts,
    rebuild_fts,
    sqlite_integrity,
)
from cairn.vectors.identity import EmbeddingIdentity
from cairn.vectors.keys import vector_key
from cairn.vectors.publish import load_index

if TYPE_CHECKING:
    import apsw

    from cairn.runtime.memory import Memory
    from cairn.store.integrity import FtsTable

__all__ = ["ProgressCallback", "check", "known_agents", "reindex", "repair"]

# (done, total): a progress bar's view of long work.
ProgressCallback = Callable[[int, int], None]


async def known_agents(memory: Memory, agent_id: str | None = None) -> list[AgentId]:
    """Every stored agent, or just ``agent_id`` (which must exist)."""
    stored = await runtime_core(memory).database.read(
        lambda reader: list_agents(reader.connection)
    )
    if agent_id is None:
        return stored
    try:
        agent = validate_agent_id(agent_id)
    except ValueError as error:
        raise InvalidInputError(str(error)) from None
    if agent not in stored:
        raise InvalidInputError(f"no agent {agent_id!r} in {memory.path}")
    return [agent]


async def _refuse_live(memory: Memory, agents: list[AgentId]) -> None:
    live = {
        entry.agent_id
        for entry in (await memory.status()).agents
        if entry.statistics is not None
    }
    if running := sorted(live & set(agents)):
        raise InvalidInputError(
            f"agents already running in this process: {', '.join(running)}"
        )


# -- reindex ------------------------------------------------------------------------------


async def reindex(
    memory: Memory, agent_id: AgentId, progress: ProgressCallback | None = None
) -> ReindexReport:
    """Rebuild the agent's projection of the active identity from its stored blobs, then
    embed everything that has no vector yet; returns what it found and did.

    The projection file is dropped and the agent started: its warm-up finds the file
    disagreeing with the ``embeddings`` table, rebuilds it from the blobs (no provider call)
    and sweeps for missing vectors. The file is only ever a projection of the table.
    """
    await _refuse_live(memory, [agent_id])
    identity = memory.embedder.identity
    path = runtime_core(memory).vectors.path_for(agent_id, identity)

    def counts(reader: Any) -> tuple[int, int]:
        connection = reader.connection
        return (
            count_embeddings(connection, agent_id, identity),
            count_missing(connection, agent_id, identity),
        )

    stored, missing = await runtime_core(memory).database.read(counts)
    dropped = await run_in_thread(
        lambda: _unlink(path), limiter=runtime_core(memory).limiters.index
    )
    total = stored + missing
    async with trio.open_nursery() as nursery:
        if progress is not None:
            nursery.start_soon(_watch, memory, counts, total, progress)
        await memory.wait_idle(agent_id)
        nursery.cancel_scope.cancel(reason="reindex finished")
    after, missing_after = await runtime_core(memory).database.read(counts)
    runtime = (await memory.status()).agent(agent_id).statistics
    assert runtime is not None  # noqa: S101 - the agent runs: wait_idle started it
    return ReindexReport(
        agent=agent_id,
        identity=identity,
        projection_file_dropped=dropped,
        vectors_from_blobs=stored,
        embedded=runtime.vectors_embedded,
        embedding_failures=runtime.embedding_failures,
        vectors_live=runtime.vectors_live,
        embeddings_stored=after,
        events_unembedded=missing_after,
    )


def _unlink(path: Any) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


async def _watch(
    memory: Memory,
    counts: Callable[[Any], tuple[int, int]],
    total: int,
    progress: ProgressCallback,
) -> None:
    # Only drawn on a terminal: a progress bar polls, the work itself never does.
    while True:
        stored, _ = await runtime_core(memory).database.read(counts)
        progress(min(stored, total), total)
        await trio.sleep(0.2)


# -- doctor -------------------------------------------------------------------------------


def _projection(
    memory: Memory,
    agent_id: AgentId,
    identity: EmbeddingIdentity,
    blob_keys: set[int],
    active: EmbeddingIdentity,
) -> ProjectionCheck:
    """Compare the projection file of ``(agent, identity)`` with its blobs, read-only."""
    path = runtime_core(memory).vectors.path_for(agent_id, identity)
    state, keys = ProjectionState.OK, set[int]()
    try:
        index = load_index(path, identity, storage="f32")
        keys = {int(key) for key in index.keys()}  # noqa: SIM118 - an array, not a dict
    except FileNotFoundError:
        state = ProjectionState.MISSING
    except VectorIndexCorruptError:
        state = ProjectionState.CORRUPT
    except VectorIdentityMismatchError:
        state = ProjectionState.IDENTITY_MISMATCH
    if state is ProjectionState.MISSING and not blob_keys:
        state = ProjectionState.EMPTY
    if identity != active:
        state = (
            ProjectionState.NOT_SERVING
            if state in {ProjectionState.MISSING, ProjectionState.EMPTY}
            else ProjectionState.KEPT_NOT_SERVING
        )
    missing, extra = len(blob_keys - keys), len(keys - blob_keys)
    if state is ProjectionState.OK and (missing or extra):
        state = ProjectionState.STALE
    return ProjectionCheck(
        agent=agent_id,
        identity_key=identity.key(),
        identity=identity,
        active=identity == active,
        embeddings=len(blob_keys),
        state=state,
        vectors=len(keys),
        missing_from_projection=missing,
        extra_in_projection=extra,
    )


def _identities(connection: apsw.Connection) -> dict[str, EmbeddingIdentity]:
    return {
        str(key): EmbeddingIdentity(str(p), str(m), int(d), str(metric))  # type: ignore[arg-type] # validated by attrs
        for key, p, m, d, metric in connection.execute(
            "SELECT identity_key, provider, model, dimension, metric FROM vector_identity"
        )
    }


def _blob_keys(
    connection: apsw.Connection, agents: list[AgentId], active: EmbeddingIdentity
) -> dict[tuple[AgentId, str], tuple[EmbeddingIdentity, set[int]]]:
    identities = _identities(connection)
    identities.setdefault(active.key(), active)
    pairs: dict[tuple[AgentId, str], tuple[EmbeddingIdentity, set[int]]] = {}
    for agent in agents:
        used = {
            str(row[0])
            for row in connection.execute(
                "SELECT DISTINCT identity_key FROM embeddings WHERE agent_id = ?",
                (agent,),
            )
        }
        for key in sorted(used | {active.key()}):
            identity = identities[key]
            keys = {
                vector_key(target, rowid)
                for target, rowid, _ in iter_embeddings(connection, agent, identity)
            }
            pairs[agent, key] = (identity, keys)
    return pairs


async def check(memory: Memory) -> DoctorReport:
    """Every integrity check, read-only except FTS5's own check (an INSERT command)."""
    agents = await known_agents(memory)
    active = memory.embedder.identity

    def read(reader: Any) -> dict[str, Any]:
        connection = reader.connection
        return {
            "sqlite": sqlite_integrity(connection),
            "gaps": {table: fts_row_gaps(connection, table) for table in FTS_TABLES},
            "orphans": orphan_counts(connection),
            "clear_jobs": pending_clear_jobs(connection),
            "pending_extraction": {
                agent: count_pending(connection, agent) for agent in agents
            },
            "dead_letters": {
                agent: batch_statistics(connection, agent).dead_events
                for agent in agents
            },
            "unembedded": {
                agent: count_missing(connection, agent, active) for agent in agents
            },
            "blobs": _blob_keys(connection, agents, active),
        }

    found = await runtime_core(memory).database.read(read)
    # FTS5's integrity-check is a write statement on indexes every agent shares.
    fts_errors = await runtime_core(memory).shared.commit(
        SharedWrite(
            lambda connection, _now: {
                table: fts_integrity(connection, table) for table in FTS_TABLES
            },
            "lexical index integrity check",
        )
    )
    projections = []
    for (agent, _key), (identity, keys) in found["blobs"].items():
        projections.append(
            await run_in_thread(
                functools.partial(_projection, memory, agent, identity, keys, active),
                limiter=runtime_core(memory).limiters.index,
            )
        )
    return DoctorReport(
        data_dir=str(memory.path),
        sqlite_integrity=tuple(found["sqlite"]) or "ok",
        fts={
            table: FtsCheck.of(fts_errors[table], found["gaps"][table])
            for table in FTS_TABLES
        },
        orphans=found["orphans"],
        projections=tuple(projections),
        events_unembedded=found["unembedded"],
        events_pending_extraction=found["pending_extraction"],
        events_in_dead_letters=found["dead_letters"],
        clear_jobs_pending=tuple(found["clear_jobs"]),
    )


def _rebuild_fts(connection: apsw.Connection, _now: object, *, table: FtsTable) -> int:
    return rebuild_fts(connection, table)


async def repair(memory: Memory, report: DoctorReport) -> list[str]:
    """Rebuild what can be rebuilt from the rows it derives from; returns what it did.

    Not repaired (reported only): a failing SQLite integrity check (restore a backup or
    export what is readable), and extracted claims that cite no evidence (memory, so an
    operator decides).
    """
    done: list[str] = []
    active = memory.embedder.identity
    for table, entry in report.fts.items():
        if entry.failed or entry.out_of_step:
            rebuild: SharedWrite[int] = SharedWrite(
                functools.partial(_rebuild_fts, table=table), f"rebuild of {table}"
            )
            rows = await runtime_core(memory).shared.commit(rebuild)
            done.append(f"rebuilt {table} from {rows} rows")
    if report.orphans.embeddings_without_target:
        deleted = await runtime_core(memory).shared.commit(
            SharedWrite(
                lambda connection, _now: delete_orphan_embeddings(connection),
                "orphan vector removal",
            )
        )
        done.append(f"deleted {deleted} vectors whose claim or event is gone")
    for projection in report.projections:
        if projection.state.healthy:
            continue
        agent, identity = projection.agent, projection.identity
        if not projection.active:
            await run_in_thread(
                functools.partial(
                    runtime_core(memory).vectors.discard_others, agent, active
                ),
                limiter=runtime_core(memory).limiters.index,
            )
            done.append(
                f"deleted the projection of {agent} ({projection.identity_key}),"
                " an identity that does not serve"
            )
            continue
        count = await _rebuild_projection(memory, agent, identity)
        done.append(
            f"rebuilt projection of {agent} ({projection.identity_key})"
            f" from {count} blobs"
        )
    restart = {a for a, n in report.events_unembedded.items() if n}
    restart |= {a for a, n in report.events_pending_extraction.items() if n}
    clearing = {job.agent_id for job in report.clear_jobs_pending}
    for agent in sorted(restart | clearing):
        # Starting the agent runs its warm-up (missing vectors embedded), extraction of
        # pending events and any pending clear job.
        await memory.wait_idle(agent)
        if agent in clearing:
            await memory.wait_cleared(agent)
            done.append(f"finished the pending clear job of {agent}")
        if agent in restart:
            done.append(f"started {agent}: pending extraction and embedding done")
    return done


async def _rebuild_projection(
    memory: Memory, agent_id: AgentId, identity: EmbeddingIdentity
) -> int:
    rows = await runtime_core(memory).database.read(
        lambda reader: [
            (vector_key(target, rowid), blob)
            for target, rowid, blob in iter_embeddings(
                reader.connection, agent_id, identity
            )
        ]
    )

    def rebuild() -> None:
        # get() first sets a corrupt or foreign file aside (kept for inspection).
        runtime_core(memory).vectors.get(agent_id, identity)
        runtime_core(memory).vectors.rebuild(agent_id, identity, rows)
        runtime_core(memory).vectors.release(agent_id, identity)

    await run_in_thread(rebuild, limiter=runtime_core(memory).limiters.index)
    return len(rows)
