"""One agent's supervisor: a nursery running its actors over bounded channels.

Started lazily by the agent registry on first use of an agent, stopped when idle, retired
or failed. Everything else talks to an agent through the verbs here (ingest, commit,
recall, clear, ...); the channels between the actors stay inside.

Stop order (architecture §2): stop accepting, drain accepted work within a bounded timeout
(a timeout fails the stop, it never closes under running passes; a pipeline stalled on
the store ends the drain early, its pending work stored for the next start), fence, run
a last maintenance pass, cancel the actors.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import trio

from cairn import crashpoints
from cairn.api.status import AgentStatistics
from cairn.clock import DomainClock
from cairn.config import MemoryConfig
from cairn.domain.ids import AgentId
from cairn.errors import (
    DrainTimeoutError,
    PipelineStalledError,
    RuntimeClosedError,
    UnknownRequestError,
)
from cairn.ingestion.extract import RuleExtractor
from cairn.maintenance.passes import MaintenancePass
from cairn.maintenance.registry import default_passes
from cairn.providers.gateway import QueryEmbeddingGateway
from cairn.providers.http.breaker import CircuitBreaker
from cairn.providers.http.text import TextProvider
from cairn.retrieval.types import Recall, RecallStatus
from cairn.runtime.actors.clear_jobs import ClearJobActor
from cairn.runtime.actors.dirty_work import DirtySettings, DirtyWorker
from cairn.runtime.actors.embedding import EmbeddingActor
from cairn.runtime.actors.ingestion import IngestionActor
from cairn.runtime.actors.maintenance import AuditBuffer, MaintenanceActor
from cairn.runtime.actors.write_coordinator import WriteCoordinator
from cairn.runtime.contributions import Contributions
from cairn.runtime.database import Database
from cairn.runtime.fence import AgentFence
from cairn.runtime.mailbox import Reply, WorkCounter
from cairn.runtime.messages import EmbedJob
from cairn.runtime.projection import Projection
from cairn.runtime.providers import ActiveEmbedder
from cairn.runtime.query_compiler import QueryCompiler
from cairn.runtime.recall import (
    RecallPlan,
    RecallRun,
    RecallServices,
    partial_margin_s,
)
from cairn.runtime.stall_watch import Stall, StallWatch
from cairn.runtime.threads import Limiters
from cairn.runtime.writes import (
    DeclareSession,
    IngestTurns,
    ReplayDeadLetters,
    StartClear,
    Write,
    WriteQueue,
)
from cairn.serde.recall import recall_from_bytes
from cairn.store.batches import count_pending
from cairn.store.evidence import load_events
from cairn.store.requests import Retention, load_recall_result
from cairn.vectors.keys import EmbedTarget
from cairn.vectors.manager import VectorStoreManager

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from cairn.domain.evidence import SessionInfo, Turn
    from cairn.store.evidence import IntakeResult
    from cairn.vectors.identity import EmbeddingIdentity

__all__ = ["AgentServices", "AgentSupervisor", "ClearOutcome", "open_agent_supervisor"]

T = TypeVar("T")

logger = logging.getLogger(__name__)


@attrs.frozen
class AgentServices:
    """What every agent's actors share: the runtime's store, providers and settings."""

    database: Database
    limiters: Limiters
    config: MemoryConfig
    clock: DomainClock
    embedder: ActiveEmbedder
    gateway: QueryEmbeddingGateway
    vectors: VectorStoreManager
    extractor: RuleExtractor
    text_provider: Callable[[], TextProvider | None]
    # After a commit that left forgotten text owed a purge or checkpoint
    # (cairn.runtime.scrubbing).
    wake_scrub: Callable[[], None] = lambda: None
    # The passes each agent's maintenance runs over its dirty work, in order.
    maintenance_passes: Callable[[], tuple[MaintenancePass[Any], ...]] = default_passes


@attrs.frozen
class ClearOutcome:
    """What a clear or retire job removed: claims and turns for a clear, rows per table
    for a retire."""

    claims_deleted: int
    rows_deleted: dict[str, int] | None
    events_deleted: int = 0


@attrs.define(eq=False)
class AgentSupervisor:
    agent_id: AgentId
    _services: AgentServices
    _fence: AgentFence
    _nursery: trio.Nursery
    _writes: WriteQueue
    _wake: Callable[[], None]
    _embed_jobs_send: trio.MemorySendChannel[EmbedJob]
    _clear_wake_send: trio.MemorySendChannel[None]
    _work: WorkCounter
    _projection: Projection
    _audit: AuditBuffer
    _maintenance: MaintenanceActor
    _ingestion: IngestionActor
    _embedding: EmbeddingActor
    _writer: WriteCoordinator
    _clearing: ClearJobActor
    _contributions: Contributions
    _stall: StallWatch
    _accepting: bool = True
    # The text model's query contract (off without a provider or a budget); its breaker
    # lives as long as this agent runs.
    _query_compiler: QueryCompiler | None = None
    # Calls in progress and the trio time of the last one: the registry stops an agent
    # that has had neither for its idle timeout.
    _calls: int = 0
    last_used: float = attrs.field(factory=trio.current_time)

    @property
    def _late(self) -> dict[str, Reply[Recall]]:
        """Recalls that missed their wait budget and still run."""
        return self._contributions.late

    # -- what the registry and tests may read ---------------------------------------------
    @property
    def fence(self) -> AgentFence:
        return self._fence

    @property
    def projection(self) -> Projection:
        return self._projection

    @property
    def clearing(self) -> ClearJobActor:
        return self._clearing

    @property
    def vector_identity(self) -> EmbeddingIdentity | None:
        return self._projection.identity

    def idle_since(self) -> float | None:
        """The trio time since which nothing is running or owed, or ``None`` if busy."""
        if self._calls or self._work.outstanding or self._late:
            return None
        return self.last_used

    @contextlib.contextmanager
    def _call(self) -> Any:
        self._calls += 1
        try:
            yield
        finally:
            self._calls -= 1
            self.last_used = trio.current_time()

    @property
    def accepting(self) -> bool:
        return self._accepting

    @accepting.setter
    def accepting(self, value: bool) -> None:
        """Not accepting (a drain, a stop, a retire) also pauses maintenance: no pass
        starts until it accepts again (``resume`` re-arms it)."""
        self._accepting = value
        if value:
            self._maintenance.resume()
        else:
            self._maintenance.pause()

    def _check_accepting(self) -> None:
        if not self.accepting:
            raise RuntimeClosedError(f"agent {self.agent_id!r} is not accepting work")

    # -- writes ----------------------------------------------------------------------------
    async def commit(self, request: Write[T]) -> T:
        """Hand one typed write to the agent's coordinator and wait for its answer."""
        with self._call():
            return await self._writes.commit(request)

    async def ingest(self, turns: Sequence[Turn]) -> list[IntakeResult]:
        self._check_accepting()
        with self._call():
            request = IngestTurns(tuple(turns))
            # Counted from the moment it is queued, so a drain waits for it even if this
            # caller is cancelled; the writer settles it (and wakes ingestion) after commit.
            self._work.add(1)
            try:
                await self._writes.send(request)
            except BaseException:
                self._work.done(1)  # a cancelled or refused send queued nothing
                raise
            results = await request.reply.wait()
            crashpoints.reach("ingest.after_commit")
            return results

    async def declare_session(self, info: SessionInfo) -> None:
        self._check_accepting()
        await self.commit(DeclareSession(info))

    async def replay_dead_letters(self) -> int:
        """Re-open the agent's dead extraction batches; returns how many."""
        return await self.commit(ReplayDeadLetters())

    def wake_ingestion(self) -> None:
        self._wake()

    async def embed_claim(self, rowid: int, text: str) -> None:
        """Queue a claim stored outside extraction (a remember) for embedding."""
        self._work.add(1)  # the embedding actor settles it
        try:
            await self._embed_jobs_send.send(EmbedJob(EmbedTarget.CLAIM, rowid, text))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            # Not lost: the next warm-up embeds every claim without a vector.
            self._work.done(1)
        except trio.Cancelled:
            # The caller was cancelled after its claim committed: the job was not sent
            # (a cancelled send delivers nothing), so no actor will settle it, and a
            # drain would wait for it forever. The warm-up embeds it, as above.
            self._work.done(1)
            raise

    def embed_backlog(self) -> None:
        """Rows arrived without vectors (an import): sweep and embed them in the
        background; ``wait_idle`` waits for it."""
        self._projection.expect_backlog()
        self._embedding.restart()

    async def remove_vectors(
        self,
        claims: Sequence[int],
        events: Sequence[int],
        *,
        reembed: Sequence[int] = (),
    ) -> None:
        """After a durable forget: the forgotten rows' vectors go, and turns that were
        embedded with a forgotten turn as context are embedded again without it. A crash
        in between leaves an orphan vector, which recall never serves (re-validation) and
        warm-up drops; the re-embedding is found by the next warm-up's sweep."""
        await self._projection.remove(claims, events, stale=reembed)
        if not reembed:
            return
        agent_id = self.agent_id
        replies = await self._services.database.read(
            lambda reader: load_events(reader.connection, agent_id, reembed)
        )
        for rowid, event in replies.items():
            self._work.add(1)  # the embedding actor settles it
            try:
                await self._embed_jobs_send.send(
                    EmbedJob(EmbedTarget.EVENT, rowid, event.embedding_text())
                )
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                self._work.done(1)

    async def wait_idle(self, *, give_up_on_stall: bool = False) -> None:
        """Return once everything accepted so far is extracted and embedded (dead
        letters excepted: they wait for a replay), and the projection of the current
        embedding identity has caught up (after a switch). While not accepting (a
        drain) also until the maintenance pass in flight has settled: a drain never
        ends beside a running pass.

        Storage faults are waited through while they clear: the actors retry with
        backoff. With ``give_up_on_stall`` (the public ``wait_idle``) the wait raises
        :class:`PipelineStalledError` instead once extraction or embedding is stalled
        (cairn.runtime.stall_watch: its last 3 writes failed on the store with no
        commit between, the latest during this wait); a drain passes nothing and waits
        within its own timeout. Nothing stored is lost either way: the pending turns
        are finished by the pipeline itself once the fault clears.
        """
        with self._call():
            if not give_up_on_stall:
                await self._settle()
                return
            stall = await self._settle_unless_stalled()
            if stall is not None:
                raise self._stalled_error(stall)

    async def _settle(self) -> None:
        while True:
            await self._drain()
            caught_up = self._projection.caught_up
            await caught_up.wait()
            if not self.accepting:
                await self._maintenance.wait_settled()
            # A switch during the wait replaced the event: wait for the new one.
            if caught_up is self._projection.caught_up and not self._work.outstanding:
                return

    async def _settle_unless_stalled(self) -> Stall | None:
        """Settle, or the stall that ended the wait first."""
        since = self._stall.mark()
        stall = await self._unless_stalled(self._settle, since)
        # Settled, but through a step that kept failing (vectors the store refused).
        return stall if stall is not None else self._stall.stalled(since)

    async def _unless_stalled(
        self, wait: Callable[[], Awaitable[None]], since: int
    ) -> Stall | None:
        """Run ``wait`` to its end, or until a step is stalled by a failure after
        ``since``; the stall that cut it short, if one did."""
        stall: Stall | None = None
        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                nonlocal stall
                stall = await self._stall.wait_stalled(since)
                nursery.cancel_scope.cancel(reason="the pipeline is stalled")

            nursery.start_soon(watch)
            await wait()
            nursery.cancel_scope.cancel(reason="done")
        return stall

    def _stalled_error(self, stall: Stall) -> PipelineStalledError:
        what = "extracted and embedded" if stall.step == "extraction" else "embedded"
        return PipelineStalledError(
            f"agent {self.agent_id!r}: background {stall.step} cannot commit: its last"
            f" {stall.failures} writes failed on the store ({stall.error}). Every"
            f" accepted turn stays stored; the pending ones are {what} once the fault"
            " clears"
        )

    async def _drain(self, *, extract: bool = True) -> None:
        """Return once everything accepted so far is extracted and embedded.

        Pending extraction is read from the database (the queue of record) while the
        ingestion actor batches at once instead of lingering; the work counter covers
        queued intake requests and embedding jobs. Without ``extract`` (a stop that
        deferred extraction) only the counted work is waited for.
        """
        if not extract:
            await self._work.wait_zero()
            return
        agent_id, database = self.agent_id, self._services.database
        with self._ingestion.flushing():
            while True:
                progress = self._ingestion.progress_event()
                self.wake_ingestion()
                await self._work.wait_zero()
                pending = await database.read(
                    lambda reader: count_pending(reader.connection, agent_id)
                )
                if not pending and not self._work.outstanding:
                    return
                if pending:
                    await progress.wait()

    # -- recall ------------------------------------------------------------------------
    async def recall(self, plan: RecallPlan, wait_s: float) -> Recall:
        """A turn's recorded contribution, or a new answer, recorded before it returns."""
        with self._call():
            return await self._contributions.contribute(plan, wait_s, self._answer)

    async def _answer(self, plan: RecallPlan, wait_s: float) -> Recall:
        request_id = uuid.uuid4().hex
        run = RecallRun(plan, request_id, self._recall_services())
        reply: Reply[Recall] = Reply()
        try:
            self._nursery.start_soon(self._run_recall, run, reply)
        except RuntimeError:
            # The agent stopped (a retire or clear discarded it) after this call was
            # handed to it: the caller gets the typed answer, not trio's.
            raise RuntimeClosedError(f"agent {self.agent_id!r} stopped") from None
        return await self._answer_on_time(run, reply, wait_s)

    async def _answer_on_time(
        self, run: RecallRun, reply: Reply[Recall], wait_s: float
    ) -> Recall:
        """The complete result if it is ready in time. Otherwise the work goes on (its
        result is stored for a fetch) and, within ``wait_s``, the caller gets what is
        ready: the lexical lists ranked without the query vector (``partial``, ranked from
        a margin before the end so that it is there at the end), or ``pending`` if not
        even they are in."""
        deadline = trio.current_time() + wait_s
        with trio.move_on_at(
            deadline - partial_margin_s(self._services.config, wait_s)
        ):
            return await reply.wait()
        if reply.done:  # it finished just as the margin began
            return await reply.wait()
        self._late[run.request_id] = reply
        answer = Recall(RecallStatus.PENDING, run.request_id)
        with trio.move_on_at(deadline):
            answer = await run.partial()
            # Until the budget ends the complete result is still the better answer (if
            # it fails, the partial one stands; a fetch reports the failure).
            with contextlib.suppress(Exception):
                return await reply.wait()
        return answer

    def _recall_services(self) -> RecallServices:
        services = self._services
        if self._query_compiler is None:
            ingestion = self._ingestion
            self._query_compiler = QueryCompiler(
                lambda: ingestion.text_provider, services.config.query_compile_s
            )
        return RecallServices(
            agent_id=self.agent_id,
            database=services.database,
            gateway=services.gateway,
            projection=self._projection,
            config=services.config,
            clock=services.clock,
            audit=self._audit,
            vector_limiter=services.limiters.vector_search,
            query_compiler=self._query_compiler,
        )

    async def _run_recall(self, run: RecallRun, reply: Reply[Recall]) -> None:
        request_id = run.request_id
        try:
            computed = await run.complete()
        except Exception as error:  # noqa: BLE001 - handed to the waiting caller
            reply.fail(error)
            if request_id in self._late:
                await self._store_late(request_id, None)
            return
        except BaseException:
            # Cancelled: the agent stopped or failed under it. Its caller (or a later
            # fetch) gets an answer, never a wait that cannot end.
            reply.fail(RuntimeClosedError(f"agent {self.agent_id!r} stopped"))
            self._late.pop(request_id, None)
            raise
        self._contributions.computed(request_id, computed.forget_epoch)
        reply.set(computed.recall)
        if request_id in self._late:
            await self._store_late(request_id, computed.recall, computed.forget_epoch)

    async def _store_late(
        self,
        request_id: str,
        recall: Recall | None,
        snapshot_epoch: int | None = None,
    ) -> None:
        try:
            # With the recall's record and its attention notice.
            await self._contributions.complete(request_id, recall, snapshot_epoch)
        finally:
            self._late.pop(request_id, None)

    async def fetch_recall(self, request_id: str) -> Recall:
        """A recall's answer by request ID: still pending, the complete result (of a
        ``pending`` or ``partial`` answer, or an on-time answer kept for a fetch), or
        unknown."""
        with self._call():
            if request_id in self._late:
                await trio.lowlevel.checkpoint()
                return Recall(RecallStatus.PENDING, request_id)
            agent_id = self.agent_id
            stored = await self._services.database.read(
                lambda reader: load_recall_result(
                    reader.connection, agent_id, request_id
                )
            )
            if stored is None:
                raise UnknownRequestError(
                    f"no recall result {request_id!r} (unknown, expired, or"
                    " dropped by a forget, clear or suppression)"
                )
            status, payload = stored
            if status != "ok" or payload is None:
                raise UnknownRequestError(f"recall {request_id} failed")
            return recall_from_bytes(payload)

    # -- clear and retire: one algorithm ----------------------------------------------------
    async def run_clear_job(self, purpose: str) -> ClearOutcome:
        """Persist a clear (or retire) job, fence the agent and run the job to its end.

        The job row and the epoch advance commit together, and the coordinator advances
        the live fence before it handles anything else, so in-flight extraction and
        embedding of the old epoch can no longer commit. A retire also stops accepting
        work: nothing the agent owned may run on.
        """
        with self._call():
            if purpose == "retire":
                self.accepting = False
            await self._writes.commit(StartClear(purpose))
            clearing = self._clearing
            before = clearing.claims_deleted, clearing.events_deleted
            with contextlib.suppress(trio.WouldBlock, trio.ClosedResourceError):
                self._clear_wake_send.send_nowait(None)
            await clearing.wait_finished()
            await self._after_clear()
            return ClearOutcome(
                clearing.claims_deleted - before[0],
                None if clearing.retired is None else dict(clearing.retired),
                clearing.events_deleted - before[1],
            )

    async def wait_cleared(self) -> None:
        """Until no clear job of the agent is pending (one left by a crash resumes when
        the agent starts)."""
        with self._call():
            await self._clearing.wait_finished()
            await self._after_clear()

    async def _after_clear(self) -> None:
        """Once a clear finished (run now, or resumed after a crash): turns that arrived
        meanwhile were left unextracted, and those that replied to a cleared turn are
        embedded again without it."""
        if self._clearing.retired is not None:
            return
        self.wake_ingestion()
        await self.remove_vectors((), (), reembed=self._clearing.take_reindexed())

    @property
    def retired(self) -> bool:
        """A retire job of this agent ran to its end (its namespace is gone)."""
        return self._clearing.retired is not None

    # -- providers ---------------------------------------------------------------------
    def switch_embedding(self) -> None:
        """The embedding identity changed.

        Synchronous on purpose (no checkpoint): the fence advances (the coordinator
        records the new epoch at its next transaction), the old projection stops serving,
        in-flight work of the old epoch is cancelled (and refused at commit if
        cancellation misses), and the embedding actor warms up again for the new identity.
        """
        self._fence.advance(self._fence.epoch + 1, "embedding identity changed")
        self._projection.retire()
        self._embedding.restart()

    def use_text_provider(self, provider: TextProvider | None) -> None:
        self._ingestion.text_provider = provider

    # -- lifecycle ---------------------------------------------------------------------
    async def stop(self) -> None:
        """Stop accepting, drain within the timeout, then cancel the actors."""
        self.accepting = False
        # A dirty batch in flight stops at its next checkpoint, its provider call
        # aborted rather than awaited: what it had not applied stays dirty for the next
        # start.
        self._maintenance.halt("agent stopping")
        # Provider calls are cancelled, not awaited: embedding is redone from the tables at
        # the next start, and so is extraction by a text model (a call may take its whole
        # timeout); rule extraction is local and drains as owed.
        self._embedding.defer()
        extract = self._ingestion.text_provider is None
        if not extract:
            self._ingestion.defer()
        limit_s = self._services.config.drain_timeout_s

        async def drain_owed() -> None:
            # Accepted work only: a background rebuild for a new embedding identity is
            # not owed to anyone and resumes at the next start.
            await self._drain(extract=extract)
            for reply in list(self._late.values()):
                with contextlib.suppress(Exception):
                    await reply.wait()

        stall: Stall | None = None
        with trio.move_on_after(limit_s) as drain_scope:
            # A pipeline stalled on the store (a full disk) cannot drain: what it owes
            # is stored and pending, and the next start finishes it. Its actors are in
            # backoff between failed commits, so stopping them closes under nothing.
            stall = await self._unless_stalled(drain_owed, since=0)
        if stall is not None:
            logger.warning(
                "agent %s stops with %s stalled on the store (%s); what is pending"
                " stays stored for the next start",
                self.agent_id,
                stall.step,
                stall.error,
            )
        elif drain_scope.cancelled_caught:
            raise DrainTimeoutError(
                f"agent {self.agent_id!r} did not drain in {limit_s} s"
            )
        # The last pass publishes the projection while the fence still holds; then the
        # fence cancels whatever is left (nothing owed: it was drained), in memory only,
        # since the coordinator writes nothing after it.
        await self._maintenance.run_pass()
        self._fence.advance(self._fence.epoch + 1, "stop")
        self._nursery.cancel_scope.cancel(reason="agent supervisor stopped")

    async def run_maintenance_pass(self) -> None:
        """One maintenance pass now (publish the projection, flush audit rows, ...)."""
        with self._call():
            await self._maintenance.run_pass()

    async def maintain(self, max_batches: int, budget_s: float) -> tuple[int, int]:
        """Maintenance now, until no dirty work is waiting, ``max_batches`` batches ran
        or ``budget_s`` has passed: (batches, seeds settled)."""
        with self._call():
            return await self._maintenance.work_now(max_batches, budget_s)

    def cancel(self, reason: str) -> None:
        """End the actors now, without draining (a retired agent's work is void)."""
        self.accepting = False
        self._nursery.cancel_scope.cancel(reason=reason)

    def statistics(self) -> AgentStatistics:
        ingestion, embedding = self._ingestion, self._embedding
        return AgentStatistics(
            outstanding_work=self._work.outstanding,
            extraction_batches=ingestion.batches,
            claims_extracted=ingestion.claims,
            extraction_failures=ingestion.failures,
            extraction_dead_letters=ingestion.dead,
            extraction_rejected_candidates=ingestion.rejected_candidates,
            vectors_embedded=embedding.embedded,
            embedding_failures=embedding.failed,
            stale_results_dropped=ingestion.stale + embedding.stale,
            writes_committed=self._writer.committed,
            writes_failed=self._writer.failed,
            writes_stale=self._writer.stale,
            vectors_live=len(self._projection),
            reindexing=self._projection.reindexing,
            embedding_restarts=embedding.restarts,
            maintenance_passes=self._maintenance.passes,
            maintenance_failed_steps=self._maintenance.failed_steps,
            maintenance_batches=self._maintenance.dirty.batches,
            maintenance_seeds_settled=self._maintenance.dirty.settled,
            maintenance_seeds_retried=self._maintenance.dirty.retried,
            maintenance_seeds_terminal=self._maintenance.dirty.terminal,
            pending_late_recalls=len(self._late),
            clear_jobs_completed=self._clearing.completed,
            audit_rows_dropped=self._audit.dropped,
        )


@contextlib.asynccontextmanager
async def open_agent_supervisor(
    agent_id: AgentId, services: AgentServices
) -> AsyncIterator[AgentSupervisor]:
    config, database, limiters = services.config, services.database, services.limiters
    size = config.channel_size
    write_send, write_receive = trio.open_memory_channel[Write[Any]](size)
    wake_send, wake_receive = trio.open_memory_channel[None](1)
    jobs_send, jobs_receive = trio.open_memory_channel[EmbedJob](size * 4)
    clear_wake_send, clear_wake_receive = trio.open_memory_channel[None](1)
    work = WorkCounter()
    stall = StallWatch()
    projection = Projection(limiters.index)
    audit = AuditBuffer()
    writes = WriteQueue(agent_id, write_send)

    def wake_ingestion() -> None:
        # Already woken, or the agent is stopping (its ingestion actor gone: what is
        # pending resumes at its next start, from the database).
        with contextlib.suppress(
            trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError
        ):
            wake_send.send_nowait(None)

    writer = WriteCoordinator(
        agent_id,
        database,
        services.clock,
        write_receive,
        work,
        wake_ingestion,
        wake_scrub=services.wake_scrub,
        event_max_bytes=config.event_max_bytes,
        max_segments=config.max_segments_per_message,
    )
    async with trio.open_nursery() as nursery:
        # The writer first: everything else sends to it, and it owns the fence.
        fence: AgentFence = await nursery.start(writer.run)
        embedding = EmbeddingActor(
            agent_id,
            database,
            limiters,
            fence,
            services.embedder,
            services.vectors,
            projection,
            jobs_receive,
            writes.clone(),
            work,
            config.embed_batch,
            config.embed_linger_s,
            slice_bytes=config.embed_slice_bytes,
            stall=stall,
        )
        ingestion = IngestionActor(
            agent_id,
            database,
            limiters,
            fence,
            services.extractor,
            wake_receive,
            writes.clone(),
            jobs_send.clone(),
            work,
            config.extraction_batch,
            config.timezone,
            config=config,
            clock=services.clock,
            text_provider=services.text_provider(),
            stall=stall,
        )
        clearing = ClearJobActor(
            agent_id,
            database,
            limiters,
            fence,
            writes.clone(),
            projection,
            clear_wake_receive,
            vectors=services.vectors,
        )
        # One way to the writer for the actor and its dirty worker: closed when it ends.
        maintenance_writes = writes.clone()
        maintenance = MaintenanceActor(
            agent_id,
            maintenance_writes,
            limiters,
            services.vectors,
            projection,
            audit,
            config.maintenance_interval_s,
            Retention(
                recall_max_age=dt.timedelta(seconds=config.recall_result_retention_s),
                recall_keep=config.recall_results_per_agent,
                audit_max_age=dt.timedelta(seconds=config.audit_retention_s),
                audit_keep=config.audit_rows_per_agent,
                batch=config.retention_batch,
                record_max_age=dt.timedelta(seconds=config.recall_record_retention_s),
                record_keep=config.recall_records_per_agent,
                attention_max_age=dt.timedelta(seconds=config.attention_retention_s),
            ),
            database,
            fence,
            services.clock,
            DirtyWorker(
                agent_id,
                maintenance_writes,
                limiters,
                database,
                projection,
                services.clock,
                services.maintenance_passes(),
                DirtySettings.of(config),
                services.text_provider,
                CircuitBreaker(
                    failure_threshold=config.breaker_failures,
                    window_s=config.breaker_window_s,
                    cooldown_s=config.breaker_cooldown_s,
                ),
            ),
            cooldown_s=config.maintenance_cooldown_s,
        )
        await nursery.start(embedding.run)
        await nursery.start(ingestion.run)
        await nursery.start(maintenance.run)
        await nursery.start(clearing.run)
        yield AgentSupervisor(
            agent_id,
            services,
            fence,
            nursery,
            writes,
            wake_ingestion,
            jobs_send,
            clear_wake_send,
            work,
            projection,
            audit,
            maintenance,
            ingestion,
            embedding,
            writer,
            clearing,
            Contributions(
                agent_id,
                database,
                writes,
                {},
                config.recall_results_per_agent,
            ),
            stall,
        )
