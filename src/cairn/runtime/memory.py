"""The embedded API: ``async with open_memory(path) as memory``.

The runtime owns the database, the vector projections and the embedder, and starts one
supervisor per agent lazily, inside its own root nursery.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import numpy.typing as npt
import trio

from cairn.clock import DomainClock, SystemDomainClock
from cairn.config import MemoryConfig
from cairn.domain.ids import AgentId, validate_agent_id
from cairn.domain.scope import RecallContext
from cairn.errors import ConflictingEventError, InvalidInputError, RuntimeClosedError
from cairn.ingestion.extract import RuleExtractor
from cairn.providers.embedding import EmbeddingProvider, Vectors
from cairn.providers.gateway import QueryEmbeddingGateway
from cairn.providers.settings import load_embedding_settings
from cairn.runtime import forgetting
from cairn.runtime.database import Database
from cairn.runtime.providers import open_embedder
from cairn.runtime.recall import RecallPlan
from cairn.runtime.supervisor import AgentSupervisor, open_agent_supervisor
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.store.agents import list_agents
from cairn.store.evidence import IntakeOutcome, IntakeResult
from cairn.store.repair import repair_claims
from cairn.vectors.manager import VectorStoreManager

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from cairn.domain.evidence import Turn
    from cairn.domain.scope import Scope
    from cairn.retrieval.types import Recall
    from cairn.store.forget import ForgetResult, LifecycleResult, RememberResult

__all__ = ["IngestReport", "Memory", "open_memory"]

DATABASE_NAME = "cairn.db"


@attrs.frozen
class IngestReport:
    """Per-item outcomes of one ingest call, in input order."""

    results: tuple[IntakeResult, ...]

    def count(self, outcome: IntakeOutcome) -> int:
        return sum(1 for result in self.results if result.outcome is outcome)

    @property
    def ingested(self) -> int:
        return self.count(IntakeOutcome.INGESTED)

    @property
    def duplicates(self) -> int:
        return self.count(IntakeOutcome.DUPLICATE)

    @property
    def rejected(self) -> tuple[IntakeResult, ...]:
        return tuple(r for r in self.results if r.outcome is IntakeOutcome.REJECTED)


@attrs.define(eq=False)
class Memory:
    path: Path
    config: MemoryConfig
    clock: DomainClock
    database: Database
    limiters: Limiters
    embedder: EmbeddingProvider
    gateway: QueryEmbeddingGateway
    vectors: VectorStoreManager
    nursery: trio.Nursery
    extractor: RuleExtractor = attrs.field(factory=RuleExtractor)
    closed: bool = False
    _supervisors: dict[AgentId, AgentSupervisor] = attrs.field(factory=dict)
    _starting: dict[AgentId, trio.Event] = attrs.field(factory=dict)
    _stopped: dict[AgentId, trio.Event] = attrs.field(factory=dict)

    async def _supervisor(self, agent_id: str) -> AgentSupervisor:
        if self.closed:
            raise RuntimeClosedError("the memory runtime is closed")
        try:
            agent = validate_agent_id(agent_id)
        except ValueError as error:
            raise InvalidInputError(str(error)) from None
        while agent not in self._supervisors:
            starting = self._starting.get(agent)
            if starting is not None:
                await starting.wait()
                continue
            self._starting[agent] = trio.Event()
            try:
                supervisor = await self.nursery.start(self._run_supervisor, agent)
                self._supervisors[agent] = supervisor
            finally:
                self._starting.pop(agent).set()
        return self._supervisors[agent]

    async def _run_supervisor(
        self, agent_id: AgentId, *, task_status: trio.TaskStatus[AgentSupervisor]
    ) -> None:
        try:
            async with open_agent_supervisor(
                agent_id,
                database=self.database,
                limiters=self.limiters,
                config=self.config,
                clock=self.clock,
                embedder=self.embedder,
                gateway=self.gateway,
                vectors=self.vectors,
                extractor=self.extractor,
            ) as supervisor:
                task_status.started(supervisor)
                await trio.sleep_forever()
        finally:
            self._supervisors.pop(agent_id, None)
            self._stopped.pop(agent_id, trio.Event()).set()
            self.gateway.reset(agent_id)

    # -- ingestion ---------------------------------------------------------------------
    async def ingest(self, agent_id: str, turns: Sequence[Turn]) -> IngestReport:
        """Store turns as evidence (idempotent by event ID); extraction follows in the background.

        Atomic with respect to cancellation: the batch commits whole or not at all.
        """
        supervisor = await self._supervisor(agent_id)
        return IngestReport(tuple(await supervisor.ingest(turns)))

    async def ingest_turn(self, agent_id: str, turn: Turn) -> IntakeResult:
        """Ingest one turn; a reused ID with other content raises ConflictingEventError."""
        (result,) = (await self.ingest(agent_id, [turn])).results
        if result.outcome is IntakeOutcome.REJECTED:
            raise ConflictingEventError(turn.event_id)
        return result

    async def wait_idle(self, agent_id: str | None = None) -> None:
        """Wait until accepted turns are extracted and embedded (one agent, or all)."""
        if agent_id is not None:
            await (await self._supervisor(agent_id)).wait_idle()
            return
        for supervisor in list(self._supervisors.values()):
            await supervisor.wait_idle()

    # -- recall ------------------------------------------------------------------------
    async def recall(
        self,
        agent_id: str,
        query: str,
        *,
        context: RecallContext | None = None,
        session_id: str | None = None,
        k: int | None = None,
        budget_bytes: int | None = None,
        wait_s: float | None = None,
        query_vector: npt.ArrayLike | None = None,
    ) -> Recall:
        """Recall a bounded contribution for ``query``.

        If the work misses ``wait_s`` the answer is ``pending`` with a request ID; the work
        finishes in the background and :meth:`fetch_recall` returns it.
        """
        if not query.strip():
            raise InvalidInputError("the query must not be blank")
        if context is None:
            context = RecallContext(session_id=session_id)
        vector: Vectors | None = None
        if query_vector is not None:
            vector = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        plan = RecallPlan(
            query=query,
            context=context,
            k=k or self.config.recall_k,
            budget_bytes=budget_bytes or self.config.budget_bytes,
            query_vector=vector,
        )
        supervisor = await self._supervisor(agent_id)
        return await supervisor.recall(
            plan, self.config.recall_wait_s if wait_s is None else wait_s
        )

    async def fetch_recall(self, agent_id: str, request_id: str) -> Recall:
        return await (await self._supervisor(agent_id)).fetch_recall(request_id)

    # -- forgetting ----------------------------------------------------------------------
    async def clear(self, agent_id: str) -> dict[str, Any]:
        """Clear the agent's memories (claims) durably; evidence and directives remain.

        Resumes after a crash from the stored phase. Returns what was and was not removed.
        """
        supervisor = await self._supervisor(agent_id)
        deleted = await supervisor.clear()
        return await forgetting.clear_report(supervisor, deleted)

    async def remember(
        self,
        agent_id: str,
        text: str,
        *,
        kind: str = "fact",
        scope: Scope | None = None,
        by: str = "user",
    ) -> RememberResult:
        """Store one claim explicitly. ``by="user"`` is the user's own add and releases a
        tombstone of exactly this claim; ``by="model"`` never does (it is suppressed)."""
        supervisor = await self._supervisor(agent_id)
        return await forgetting.remember(
            supervisor, text, kind=kind, scope=scope, by=by
        )

    async def forget(self, agent_id: str, claim_id: str) -> ForgetResult:
        """Delete one claim and leave a hash-only tombstone that suppresses its replay."""
        return await forgetting.forget(await self._supervisor(agent_id), claim_id)

    async def archive(self, agent_id: str, claim_id: str) -> LifecycleResult:
        """Take a claim out of recall but keep it locally (undo with :meth:`unarchive`)."""
        supervisor = await self._supervisor(agent_id)
        return await forgetting.archive(supervisor, claim_id, archived=True)

    async def unarchive(self, agent_id: str, claim_id: str) -> LifecycleResult:
        supervisor = await self._supervisor(agent_id)
        return await forgetting.archive(supervisor, claim_id, archived=False)

    async def resume_interrupted_clears(self) -> None:
        """Finish clear and retire jobs a crash left pending, agent by agent (run at open)."""
        await forgetting.resume_pending_clears(
            self.database, self._supervisor, self._discard_supervisor
        )

    async def retire(self, agent_id: str) -> dict[str, Any]:
        """Delete the agent's whole namespace: claims, evidence, directives, tombstones,
        lineage, dirty work, audit and vector files. A new agent with the same ID starts
        empty. Durable: a crash midway resumes at the next open."""
        supervisor = await self._supervisor(agent_id)
        deleted = await forgetting.retire(supervisor)
        await self._discard_supervisor(supervisor)
        return {"agent_id": supervisor.agent_id, "rows_deleted": deleted, "kept": []}

    async def _discard_supervisor(self, supervisor: AgentSupervisor) -> None:
        """Cancel a retired agent's actors without draining (its work is void), wait for
        them, then drop its vector files once more: an embedding warm-up that was still
        running during the retire may have loaded the projection again."""
        agent = supervisor.agent_id
        if self._supervisors.get(agent) is supervisor:
            stopped = self._stopped.setdefault(agent, trio.Event())
            supervisor.nursery.cancel_scope.cancel(reason="agent retired")
            await stopped.wait()
        if agent not in self._supervisors:
            await run_in_thread(
                lambda: self.vectors.drop_agent(agent), limiter=self.limiters.index
            )

    # -- directives --------------------------------------------------------------------
    @property
    def directives(self) -> forgetting.DirectiveBook:
        """``create``/``propose``/``approve``/``revoke``/``list`` of standing directives."""
        return forgetting.DirectiveBook(self._supervisor, self.database, self.clock)

    async def add_directive(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> str:
        """Create an active directive: an explicit user action, never called by extraction."""
        return (await self.directives.create(agent_id, text, kind=kind)).directive_id

    # -- status and lifecycle ------------------------------------------------------------
    async def status(self) -> dict[str, Any]:
        def read_counts(connection: Any) -> dict[str, Any]:
            agents: dict[str, Any] = {}
            for agent in list_agents(connection):
                counts = {}
                for table in ("events", "claims", "directives", "embeddings"):
                    row = connection.execute(
                        f"SELECT count(*) FROM {table} WHERE agent_id = ?",  # noqa: S608 - fixed names
                        (agent,),
                    ).fetchone()
                    counts[table] = int(row[0])
                pending = connection.execute(
                    "SELECT count(*) FROM events WHERE agent_id = ? AND extracted = 0",
                    (agent,),
                ).fetchone()
                counts["events_pending_extraction"] = int(pending[0])
                agents[agent] = counts
            return agents

        agents = await self.database.read(lambda reader: read_counts(reader.connection))
        for agent, supervisor in self._supervisors.items():
            agents.setdefault(agent, {}).update(runtime=supervisor.statistics())
        return {
            "data_dir": str(self.path),
            "embedder": attrs.asdict(self.embedder.identity),
            "agents": agents,
        }

    async def aclose(self) -> None:
        """Stop every agent: stop accepting, drain within the timeout, publish, close."""
        if self.closed:
            return
        self.closed = True
        for supervisor in list(self._supervisors.values()):
            await supervisor.stop()


@contextlib.asynccontextmanager
async def open_memory(
    path: str | Path,
    config: MemoryConfig | None = None,
    *,
    clock: DomainClock | None = None,
    embedder: EmbeddingProvider | None = None,
) -> AsyncIterator[Memory]:
    """Open (creating if needed) the memory in data directory ``path``.

    Without an ``embedder``, the one configured in ``cairn.toml``/``CAIRN_EMBEDDING_*``
    serves (cairn.providers.settings), by default the embedded local model.
    """
    data_dir = Path(path)
    config = config or MemoryConfig()
    limiters = Limiters(store_read=trio.CapacityLimiter(config.reader_connections))
    settings = await run_in_thread(
        lambda: load_embedding_settings(data_dir), limiter=limiters.store_write
    )
    await run_in_thread(
        lambda: data_dir.mkdir(parents=True, exist_ok=True),
        limiter=limiters.store_write,
    )
    async with contextlib.AsyncExitStack() as stack:
        if embedder is None:
            embedder = await stack.enter_async_context(
                open_embedder(settings, limiters)
            )
        async with _open_runtime(data_dir, config, clock, embedder, limiters) as memory:
            yield memory


@contextlib.asynccontextmanager
async def _open_runtime(
    data_dir: Path,
    config: MemoryConfig,
    clock: DomainClock | None,
    embedder: EmbeddingProvider,
    limiters: Limiters,
) -> AsyncIterator[Memory]:
    database = await Database.open(
        data_dir / DATABASE_NAME,
        limiters,
        readers=config.reader_connections,
        synchronous_full=config.synchronous_full,
    )
    domain_clock = clock or SystemDomainClock()
    try:
        # Before any agent starts: damaged rows are repaired, never served as they are.
        await database.write(
            lambda connection: repair_claims(connection, domain_clock.now())
        )
    except BaseException:
        with trio.CancelScope(shield=True):
            await database.aclose()
        raise
    # f32 rows searched with BLAS: 2x faster than usearch's f16 kernel here, and it does not
    # thrash the GIL beside busy threads (design/vectors.md); blobs on disk stay f16.
    vectors = VectorStoreManager(data_dir / "vectors", storage="f32")
    body_error: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            memory = Memory(
                data_dir,
                config,
                domain_clock,
                database,
                limiters,
                embedder,
                QueryEmbeddingGateway(
                    embedder,
                    deadline_floor_s=config.query_deadline_floor_s,
                    deadline_ceiling_s=config.query_deadline_ceiling_s,
                    failure_threshold=config.breaker_failures,
                    window_s=config.breaker_window_s,
                    cooldown_s=config.breaker_cooldown_s,
                ),
                vectors,
                nursery,
            )
            nursery.start_soon(memory.resume_interrupted_clears)
            try:
                yield memory
                await memory.aclose()
            except BaseException as error:  # noqa: BLE001 - re-raised below, unwrapped
                # The caller's own error leaves unwrapped: the nursery is an internal
                # detail, so `except InvalidInputError` works around `async with`.
                body_error = error
            finally:
                nursery.cancel_scope.cancel(reason="memory closed")
    finally:
        with trio.CancelScope(shield=True):
            await run_in_thread(vectors.close, limiter=limiters.index)
            await database.aclose()
    if body_error is not None:
        raise body_error
