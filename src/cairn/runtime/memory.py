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
import trio

from cairn.api.reports import (
    ClearReport,
    DrainReport,
    EmbedderIdentity,
    IngestReport,
    ReconfigureReport,
    RetireReport,
    TextModelIdentity,
)
from cairn.api.status import AgentState, AgentStatus, StatusReport
from cairn.clock import DomainClock, SystemDomainClock
from cairn.config import MemoryConfig
from cairn.domain.evidence import SessionInfo, SessionKind
from cairn.domain.ids import AgentId, EventId, SessionId, validate_agent_id
from cairn.domain.outcomes import IntakeOutcome, IntakeRejection, IntakeResult
from cairn.domain.scope import RecallContext
from cairn.errors import (
    ConflictingEventError,
    DrainingError,
    DrainTimeoutError,
    InvalidInputError,
    RuntimeClosedError,
)
from cairn.ingestion.extract import RuleExtractor
from cairn.providers.gateway import QueryEmbeddingGateway
from cairn.providers.http.text import TextProvider
from cairn.providers.settings import load_embedding_settings, load_text_settings
from cairn.runtime import forgetting
from cairn.runtime.database import Database
from cairn.runtime.mailbox import WorkCounter
from cairn.runtime.providers import (
    ActiveEmbedder,
    SharedHttpClient,
    build_embedder,
    build_text_provider,
)
from cairn.runtime.recall import RecallPlan
from cairn.runtime.supervisor import AgentSupervisor, open_agent_supervisor
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.store.agents import advance_all_epochs, list_agents
from cairn.store.batches import batch_statistics, count_pending
from cairn.store.repair import repair_claims
from cairn.store.sessions import session_cursor
from cairn.vectors.manager import VectorStoreManager

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator, Sequence

    from cairn.domain.evidence import Turn
    from cairn.domain.outcomes import ForgetResult, LifecycleResult, RememberResult
    from cairn.domain.scope import Scope
    from cairn.providers.embedding import EmbeddingProvider, Vectors
    from cairn.retrieval.types import Recall

__all__ = ["Memory", "open_memory"]

DATABASE_NAME = "cairn.db"


@attrs.define(eq=False)
class Memory:
    path: Path
    config: MemoryConfig
    clock: DomainClock
    database: Database
    limiters: Limiters
    active: ActiveEmbedder
    gateway: QueryEmbeddingGateway
    vectors: VectorStoreManager
    nursery: trio.Nursery
    http: SharedHttpClient = attrs.field(factory=SharedHttpClient)
    extractor: RuleExtractor = attrs.field(factory=RuleExtractor)
    text_provider: TextProvider | None = None
    closed: bool = False
    # False between drain() and resume(): every write entry point refuses new work.
    accepting: bool = True
    _supervisors: dict[AgentId, AgentSupervisor] = attrs.field(factory=dict)
    _starting: dict[AgentId, trio.Event] = attrs.field(factory=dict)
    # Held while a supervisor starts and while the embedder is switched, so a starting
    # agent never reads its epoch before a switch and misses the switch itself.
    _switching: trio.Lock = attrs.field(factory=trio.Lock)
    # Direct writes (clear, add_directive) in progress; ingestion is counted per agent.
    _writes: WorkCounter = attrs.field(factory=WorkCounter)

    @property
    def embedder(self) -> EmbeddingProvider:
        """The embedder serving now (it changes on :meth:`use_embedder`)."""
        return self.active.provider

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
                async with self._switching:
                    supervisor = await self.nursery.start(self._run_supervisor, agent)
                    supervisor.accepting = self.accepting
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
                embedder=self.active,
                gateway=self.gateway,
                vectors=self.vectors,
                extractor=self.extractor,
                text_provider=self.text_provider,
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
        self._check_accepting()
        supervisor = await self._supervisor(agent_id)
        self._check_accepting()  # a drain may have begun while the supervisor started
        return IngestReport(tuple(await supervisor.ingest(turns)))

    async def ingest_turn(self, agent_id: str, turn: Turn) -> IntakeResult:
        """Ingest one turn; a reused ID with other content raises ConflictingEventError."""
        (result,) = (await self.ingest(agent_id, [turn])).results
        if result.outcome is IntakeOutcome.REJECTED:
            raise ConflictingEventError(turn.event_id)
        return result

    async def ingest_event(self, agent_id: str, event: Turn) -> IntakeResult:
        """Ingest one turn or runtime event (``Turn.kind``): a message, a tool result
        summary, a task started/finished/failed/blocked or needs-input event, or an edit
        or deletion of an earlier message (``Turn.replaces``). Secrets are redacted before
        anything is stored; a reused ID with other content raises ConflictingEventError,
        an edit of an unknown message InvalidInputError."""
        (result,) = (await self.ingest(agent_id, [event])).results
        if result.outcome is IntakeOutcome.REJECTED:
            if result.rejection is IntakeRejection.UNKNOWN_REPLACED_EVENT:
                raise InvalidInputError(result.reason)
            raise ConflictingEventError(event.event_id)
        return result

    async def declare_session(
        self,
        agent_id: str,
        session_id: str,
        *,
        subagent: bool = False,
        forked_from: tuple[str, str] | None = None,
    ) -> None:
        """Say how a session is extracted: a ``subagent`` session is recalled into but never
        extracted; a session ``forked_from=(parent_session_id, event_id)`` does not
        re-extract the parent's messages it replays."""
        try:
            info = SessionInfo(
                SessionId(session_id),
                SessionKind.SUBAGENT if subagent else SessionKind.MAIN,
                None
                if forked_from is None
                else (SessionId(forked_from[0]), EventId(forked_from[1])),
            )
        except ValueError as error:
            raise InvalidInputError(str(error)) from None
        await (await self._supervisor(agent_id)).declare_session(info)

    async def session_cursor(self, agent_id: str, session_id: str) -> str | None:
        """The event ID up to which the session is settled (extracted and embedded), or
        ``None`` before its first settled event."""
        agent = (await self._supervisor(agent_id)).agent_id
        return await self.database.read(
            lambda reader: session_cursor(reader.connection, agent, session_id)
        )

    async def replay_dead_letters(self, agent_id: str) -> int:
        """Give the agent's dead extraction batches fresh attempts; returns how many."""
        return await (await self._supervisor(agent_id)).replay_dead_letters()

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
        query_vector: Iterable[float] | None = None,
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
            if not isinstance(query_vector, np.ndarray):
                query_vector = list(query_vector)  # any iterable of floats
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
    async def clear(self, agent_id: str) -> ClearReport:
        """Clear the agent's memories (claims) durably; evidence and directives remain.

        Resumes after a crash from the stored phase. Returns what was and was not removed.
        """
        self._check_accepting()
        supervisor = await self._supervisor(agent_id)
        with self._accepted_write():
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
        self._check_accepting()
        supervisor = await self._supervisor(agent_id)
        with self._accepted_write():
            return await forgetting.remember(
                supervisor, text, kind=kind, scope=scope, by=by
            )

    async def forget(self, agent_id: str, claim_id: str) -> ForgetResult:
        """Delete one claim and leave a hash-only tombstone that suppresses its replay."""
        self._check_accepting()
        supervisor = await self._supervisor(agent_id)
        with self._accepted_write():
            return await forgetting.forget(supervisor, claim_id)

    async def archive(self, agent_id: str, claim_id: str) -> LifecycleResult:
        """Take a claim out of recall but keep it locally (undo with :meth:`unarchive`)."""
        self._check_accepting()
        supervisor = await self._supervisor(agent_id)
        with self._accepted_write():
            return await forgetting.archive(supervisor, claim_id, archived=True)

    async def unarchive(self, agent_id: str, claim_id: str) -> LifecycleResult:
        self._check_accepting()
        supervisor = await self._supervisor(agent_id)
        with self._accepted_write():
            return await forgetting.archive(supervisor, claim_id, archived=False)

    async def resume_interrupted_clears(self) -> None:
        """Finish clear and retire jobs a crash left pending, agent by agent (run at open)."""
        await forgetting.resume_pending_clears(
            self.database, self._supervisor, self._discard_supervisor
        )

    async def retire(self, agent_id: str) -> RetireReport:
        """Delete the agent's whole namespace: claims, evidence, directives, tombstones,
        lineage, dirty work, audit and vector files. A new agent with the same ID starts
        empty. Durable: a crash midway resumes at the next open."""
        self._check_accepting()
        supervisor = await self._supervisor(agent_id)
        with self._accepted_write():
            deleted = await forgetting.retire(supervisor)
        await self._discard_supervisor(supervisor)
        return RetireReport.of(supervisor.agent_id, deleted)

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

    async def wait_cleared(self, agent_id: str) -> None:
        """Start the agent if needed and wait until no clear job of it is pending (a job
        left by a crash resumes when the agent starts)."""
        await (await self._supervisor(agent_id)).clearing.wait_finished()

    # -- directives --------------------------------------------------------------------
    @property
    def directives(self) -> forgetting.DirectiveBook:
        """``create``/``propose``/``approve``/``revoke``/``list`` of standing directives."""
        return forgetting.DirectiveBook(
            self._supervisor, self.database, self.clock, self._accepted_write
        )

    async def add_directive(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> str:
        """Create an active directive: an explicit user action, never called by extraction."""
        self._check_accepting()
        with self._accepted_write():
            created = await self.directives.create(agent_id, text, kind=kind)
        return created.directive_id

    # -- providers ---------------------------------------------------------------------
    async def reconfigure(self) -> ReconfigureReport:
        """Apply the provider configuration without a restart: ``[embedding]`` and
        ``[text]`` are re-read from the file and the environment and both providers are
        switched (:meth:`use_embedder`, :meth:`use_text_provider`). The report says whether
        the embedding identity changed and what serves now. Bad configuration raises
        InvalidInputError and changes nothing.
        """
        data_dir = self.path
        settings, text_settings = await run_in_thread(
            lambda: (load_embedding_settings(data_dir), load_text_settings(data_dir)),
            limiter=self.limiters.store_read,
        )
        # Both are built before either is installed: bad configuration changes nothing.
        embedder = await build_embedder(settings, self.limiters, self.http)
        text_provider = build_text_provider(text_settings, self.http)
        changed = await self.use_embedder(embedder)
        self.use_text_provider(text_provider)
        return ReconfigureReport(
            changed,
            EmbedderIdentity.of(self.embedder.identity),
            None
            if text_provider is None
            else TextModelIdentity.of(text_provider.identity),
        )

    def use_text_provider(self, provider: TextProvider | None) -> None:
        """Extract with ``provider`` from the next batch on (None: the rule extractor).

        No epoch change: a proposal is validated against its batch's evidence whichever
        model made it, so a batch already in flight may still commit.
        """
        self.text_provider = provider
        for supervisor in self._supervisors.values():
            supervisor.ingestion.text_provider = provider

    async def use_embedder(self, embedder: EmbeddingProvider) -> bool:
        """Switch to ``embedder`` live; returns whether the embedding identity changed.

        A new identity (provider, model, dimension or metric) is an epoch change for every
        agent, live or not, in one transaction: in-flight embedding work of the old identity
        is cancelled and, whatever cancellation misses, refused at commit; the old vector
        projection stops serving at once; each live agent rebuilds its projection for the new
        identity in the background (stored vectors of that identity are reused, the rest are
        re-embedded) while recall carries on lexically and says ``reindexing``. The query
        breaker and deadline state are cleared either way.
        """
        if self.closed:
            raise RuntimeClosedError("the memory runtime is closed")
        async with self._switching:
            changed = embedder.identity != self.active.identity
            epochs: dict[AgentId, int] = {}
            if changed:
                epochs = await self.database.write(advance_all_epochs)
            # From here to the end no checkpoint: work starting now sees the new embedder
            # and the new epoch together.
            self.active.replace(embedder)
            self.gateway.switch(embedder)
            for agent_id, supervisor in self._supervisors.items():
                if changed:
                    supervisor.switch_embedding(epochs[agent_id])
        return changed

    # -- status and lifecycle ------------------------------------------------------------
    async def status(self) -> StatusReport:
        """Stored counts of every agent; runtime state of the agents this process runs."""

        def read_counts(connection: Any) -> dict[str, AgentStatus]:
            def count(table: str, agent: str) -> int:
                row = connection.execute(
                    f"SELECT count(*) FROM {table} WHERE agent_id = ?",  # noqa: S608 - fixed names
                    (agent,),
                ).fetchone()
                return int(row[0])

            agents: dict[str, AgentStatus] = {}
            for agent in list_agents(connection):
                batches = batch_statistics(connection, agent)
                agents[agent] = AgentStatus(
                    agent,
                    AgentState.STOPPED,
                    events=count("events", agent),
                    claims=count("claims", agent),
                    directives=count("directives", agent),
                    embeddings=count("embeddings", agent),
                    events_pending_extraction=count_pending(connection, agent),
                    extraction_batches_open=batches.open_batches,
                    extraction_dead_letters=batches.dead_batches,
                    events_in_dead_letters=batches.dead_events,
                )
            return agents

        agents = await self.database.read(lambda reader: read_counts(reader.connection))
        for agent, supervisor in self._supervisors.items():
            identity = supervisor.slot.identity
            agents[agent] = attrs.evolve(
                agents.get(agent, AgentStatus(agent, AgentState.RUNNING)),
                state=AgentState.RUNNING,
                statistics=supervisor.statistics(),
                epoch=supervisor.fence.epoch,
                query_breaker=self.gateway.breaker(agent).state.value,
                vector_identity=None
                if identity is None
                else EmbedderIdentity.of(identity),
            )
        return StatusReport(
            str(self.path),
            EmbedderIdentity.of(self.embedder.identity),
            tuple(agents[agent] for agent in sorted(agents)),
        )

    # -- drain -------------------------------------------------------------------------
    def _check_accepting(self) -> None:
        if not self.accepting:
            raise DrainingError("the memory runtime is drained; resume it to write")

    @contextlib.contextmanager
    def _accepted_write(self) -> Iterator[None]:
        """Check and count a direct write in one step (no await between), so a drain
        either refuses it or waits for it."""
        self._check_accepting()
        self._writes.add(1)
        try:
            yield
        finally:
            self._writes.done(1)

    async def drain(self, timeout_s: float | None = None) -> DrainReport:
        """Stop accepting writes, then wait until all accepted work is extracted and embedded.

        New writes (ingest, clear, add_directive) raise :class:`DrainingError` from the
        moment this is called; reads keep working. A write already accepted (counted by its
        supervisor) is waited for, never dropped. On timeout (default
        ``MemoryConfig.drain_timeout_s``) raises :class:`DrainTimeoutError` and stays drained;
        :meth:`resume` re-arms in either case.
        """
        self.accepting = False
        for supervisor in self._supervisors.values():
            supervisor.accepting = False
        limit_s = self.config.drain_timeout_s if timeout_s is None else timeout_s
        started = trio.current_time()
        with trio.move_on_after(limit_s) as drain_scope:
            await self._writes.wait_zero()
            await self.wait_idle()
        if drain_scope.cancelled_caught:
            raise DrainTimeoutError(f"accepted work did not settle in {limit_s} s")
        return DrainReport(len(self._supervisors), trio.current_time() - started)

    async def resume(self) -> None:
        """Accept writes again after :meth:`drain`."""
        await trio.lowlevel.checkpoint()
        if self.closed:
            raise RuntimeClosedError("the memory runtime is closed")
        self.accepting = True
        for supervisor in self._supervisors.values():
            supervisor.accepting = True

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
    text_provider: TextProvider | None = None,
) -> AsyncIterator[Memory]:
    """Open (creating if needed) the memory in data directory ``path``.

    Without an ``embedder``, the one configured in ``cairn.toml``/``CAIRN_EMBEDDING_*``
    serves (cairn.providers.settings), by default the embedded local model. Without a
    ``text_provider``, the one configured under ``[text]``/``CAIRN_TEXT_*`` extracts, and
    with none configured (the default) the rule extractor does.
    """
    data_dir = Path(path)
    config = config or MemoryConfig()
    limiters = Limiters(store_read=trio.CapacityLimiter(config.reader_connections))
    settings, text_settings = await run_in_thread(
        lambda: (load_embedding_settings(data_dir), load_text_settings(data_dir)),
        limiter=limiters.store_write,
    )
    await run_in_thread(
        lambda: data_dir.mkdir(parents=True, exist_ok=True),
        limiter=limiters.store_write,
    )
    http = SharedHttpClient()
    try:
        if embedder is None:
            embedder = await build_embedder(settings, limiters, http)
        if text_provider is None:
            text_provider = build_text_provider(text_settings, http)
        async with _open_runtime(data_dir, config, clock, embedder, limiters) as memory:
            memory.http = http
            # Extraction through a text model; without one the rule extractor serves.
            memory.text_provider = text_provider
            yield memory
    finally:
        # After the runtime has stopped: its last provider calls are over by then.
        await http.aclose()


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
                ActiveEmbedder(embedder),
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
