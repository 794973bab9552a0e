"""One agent's supervisor: a nursery running its actors over bounded channels.

Started lazily by the runtime on first use of an agent. Stop order (architecture §2): stop
accepting, drain accepted work within a bounded timeout (a timeout fails the stop, it never
closes under running passes), fence, cancel the actors, run a last maintenance pass.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING

import attrs
import trio

from cairn.api.status import AgentStatistics
from cairn.clock import DomainClock
from cairn.config import MemoryConfig
from cairn.domain.ids import AgentId
from cairn.errors import DrainTimeoutError, RuntimeClosedError, UnknownRequestError
from cairn.providers.gateway import QueryEmbeddingGateway
from cairn.retrieval.types import Recall, RecallStatus
from cairn.runtime.actors.clear_jobs import ClearJobActor
from cairn.runtime.actors.embedding import EmbeddingActor, VectorSlot
from cairn.runtime.actors.ingestion import IngestionActor
from cairn.runtime.actors.maintenance import AuditBuffer, MaintenanceActor
from cairn.runtime.actors.write_coordinator import WriteCoordinator
from cairn.runtime.database import Database
from cairn.runtime.fence import AgentFence
from cairn.runtime.mailbox import Reply, WorkCounter
from cairn.runtime.messages import (
    DeclareSession,
    EmbedJob,
    IngestTurns,
    StoreRecallResult,
    WriteRequest,
)
from cairn.runtime.providers import ActiveEmbedder
from cairn.runtime.recall import RecallPlan, compute_recall
from cairn.runtime.threads import Limiters
from cairn.serde.recall import recall_from_bytes, recall_to_bytes
from cairn.store.agents import ensure_agent
from cairn.store.batches import count_pending, replay_dead
from cairn.store.clear_jobs import start_clear
from cairn.store.requests import load_recall_result

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from cairn.domain.evidence import SessionInfo, Turn
    from cairn.ingestion.extract import RuleExtractor
    from cairn.providers.http.text import TextProvider
    from cairn.store.evidence import IntakeResult
    from cairn.vectors.manager import VectorStoreManager

__all__ = ["AgentSupervisor", "open_agent_supervisor"]


@attrs.define(eq=False)
class AgentSupervisor:
    agent_id: AgentId
    database: Database
    limiters: Limiters
    config: MemoryConfig
    clock: DomainClock
    embedder: ActiveEmbedder
    gateway: QueryEmbeddingGateway
    fence: AgentFence
    nursery: trio.Nursery
    write_requests_send: trio.MemorySendChannel[WriteRequest]
    wake_send: trio.MemorySendChannel[None]
    embed_jobs_send: trio.MemorySendChannel[EmbedJob]
    work: WorkCounter
    slot: VectorSlot
    audit: AuditBuffer
    maintenance: MaintenanceActor
    ingestion: IngestionActor
    embedding: EmbeddingActor
    writer: WriteCoordinator
    clearing: ClearJobActor
    clear_wake_send: trio.MemorySendChannel[None]
    accepting: bool = True
    _late: dict[str, Reply[Recall]] = attrs.field(factory=dict)

    # -- ingestion ---------------------------------------------------------------------
    async def ingest(self, turns: Sequence[Turn]) -> list[IntakeResult]:
        if not self.accepting:
            raise RuntimeClosedError(f"agent {self.agent_id!r} is not accepting work")
        request = IngestTurns(tuple(turns))
        # Counted from the moment it is queued, so a drain waits for it even if this
        # caller is cancelled; the writer settles it (and wakes ingestion) after commit.
        self.work.add(1)
        try:
            await self.write_requests_send.send(request)
        except BaseException:
            self.work.done(1)  # a cancelled send queued nothing
            raise
        return await request.reply.wait()

    async def declare_session(self, info: SessionInfo) -> None:
        if not self.accepting:
            raise RuntimeClosedError(f"agent {self.agent_id!r} is not accepting work")
        request = DeclareSession(info)
        await self.write_requests_send.send(request)
        await request.reply.wait()

    async def replay_dead_letters(self) -> int:
        """Re-open the agent's dead extraction batches; returns how many."""
        agent_id = self.agent_id
        replayed = await self.database.write(lambda c: replay_dead(c, agent_id))
        with contextlib.suppress(trio.WouldBlock):
            self.wake_send.send_nowait(None)
        return replayed

    async def wait_idle(self) -> None:
        """Return once everything accepted so far is extracted and embedded (dead
        letters excepted: they wait for a replay), and the projection of the current
        embedding identity has caught up (after a switch)."""
        while True:
            await self._drain()
            caught_up = self.slot.caught_up
            await caught_up.wait()
            # A switch during the wait replaced the event: wait for the new one.
            if caught_up is self.slot.caught_up and not self.work.outstanding:
                return

    async def _drain(self, *, extract: bool = True) -> None:
        """Return once everything accepted so far is extracted and embedded.

        Pending extraction is read from the database (the queue of record) while the
        ingestion actor batches at once instead of lingering; the work counter covers
        queued intake requests and embedding jobs. Without ``extract`` (a stop that
        deferred extraction) only the counted work is waited for.
        """
        if not extract:
            await self.work.wait_zero()
            return
        agent_id = self.agent_id
        with self.ingestion.flushing():
            while True:
                progress = self.ingestion.progress_event()
                with contextlib.suppress(trio.WouldBlock):
                    self.wake_send.send_nowait(None)
                await self.work.wait_zero()
                pending = await self.database.read(
                    lambda reader: count_pending(reader.connection, agent_id)
                )
                if not pending and not self.work.outstanding:
                    return
                if pending:
                    await progress.wait()

    # -- recall ------------------------------------------------------------------------
    async def recall(self, plan: RecallPlan, wait_s: float) -> Recall:
        request_id = uuid.uuid4().hex
        reply: Reply[Recall] = Reply()
        self.nursery.start_soon(self._run_recall, plan, request_id, reply)
        with trio.move_on_after(wait_s):
            return await reply.wait()
        # Missed the wait budget: the work goes on; its result is stored for a later fetch.
        self._late[request_id] = reply
        return Recall(RecallStatus.PENDING, request_id)

    async def _run_recall(
        self, plan: RecallPlan, request_id: str, reply: Reply[Recall]
    ) -> None:
        await self.slot.ready.wait()
        try:
            result = await compute_recall(
                plan,
                request_id=request_id,
                agent_id=self.agent_id,
                database=self.database,
                gateway=self.gateway,
                slot=self.slot,
                config=self.config,
                clock=self.clock,
                audit=self.audit,
                vector_limiter=self.limiters.vector_search,
            )
        except Exception as error:  # noqa: BLE001 - handed to the waiting caller
            reply.fail(error)
            if request_id in self._late:
                await self._store_late(request_id, "failed", None)
            return
        reply.set(result)
        if request_id in self._late:
            await self._store_late(request_id, "ok", recall_to_bytes(result))

    async def _store_late(
        self, request_id: str, status: str, payload: bytes | None
    ) -> None:
        request = StoreRecallResult(request_id, status, payload)
        await self.write_requests_send.send(request)
        await request.reply.wait()
        self._late.pop(request_id, None)

    async def fetch_recall(self, request_id: str) -> Recall:
        """The late result of a ``pending`` recall: still pending, the result, or unknown."""
        if request_id in self._late:
            await trio.lowlevel.checkpoint()
            return Recall(RecallStatus.PENDING, request_id)
        agent_id = self.agent_id
        stored = await self.database.read(
            lambda reader: load_recall_result(reader.connection, agent_id, request_id)
        )
        if stored is None:
            raise UnknownRequestError(request_id)
        status, payload = stored
        if status != "ok" or payload is None:
            raise UnknownRequestError(f"recall {request_id} failed")
        return recall_from_bytes(payload)

    # -- forgetting ----------------------------------------------------------------------
    async def clear(self) -> int:
        """Clear every claim of the agent through a durable job; returns how many.

        Evidence and directives are kept. The job row and the epoch advance commit together,
        so in-flight extraction and embedding of the old epoch can no longer commit.
        """
        agent_id, clock = self.agent_id, self.clock
        job, epoch = await self.database.write(
            lambda connection: start_clear(connection, agent_id, clock.now())
        )
        self.fence.advance(epoch, f"clear job {job.job_id}")
        before = self.clearing.claims_deleted
        with contextlib.suppress(trio.WouldBlock):
            self.clear_wake_send.send_nowait(None)
        await self.clearing.wait_finished()
        # Turns that arrived during the clear were left unextracted: extract them now.
        with contextlib.suppress(trio.WouldBlock):
            self.wake_send.send_nowait(None)
        return self.clearing.claims_deleted - before

    # -- providers ---------------------------------------------------------------------
    def switch_embedding(self, epoch: int) -> None:
        """The embedding identity changed and the stored epoch is now ``epoch``.

        Synchronous on purpose (no checkpoint): the old projection stops serving, in-flight
        work of the old epoch is cancelled (and refused at commit if cancellation misses),
        and the embedding actor warms up again for the new identity.
        """
        self.fence.advance(epoch, "embedding identity changed")
        self.slot.retire()
        self.embedding.restart()

    # -- lifecycle ---------------------------------------------------------------------
    async def stop(self) -> None:
        """Stop accepting, drain within the timeout, then cancel the actors."""
        self.accepting = False
        # Provider calls are cancelled, not awaited: embedding is redone from the tables at
        # the next start, and so is extraction by a text model (a call may take its whole
        # timeout); rule extraction is local and drains as owed.
        self.embedding.defer()
        extract = self.ingestion.text_provider is None
        if not extract:
            self.ingestion.defer()
        with trio.move_on_after(self.config.drain_timeout_s) as drain_scope:
            # Accepted work only: a background rebuild for a new embedding identity is
            # not owed to anyone and resumes at the next start.
            await self._drain(extract=extract)
            for reply in list(self._late.values()):
                with contextlib.suppress(Exception):
                    await reply.wait()
        if drain_scope.cancelled_caught:
            raise DrainTimeoutError(
                f"agent {self.agent_id!r} did not drain in {self.config.drain_timeout_s} s"
            )
        self.fence.advance(self.fence.epoch + 1, "stop")
        await self.maintenance.run_pass()
        self.nursery.cancel_scope.cancel(reason="agent supervisor stopped")

    def statistics(self) -> AgentStatistics:
        index = self.slot.index
        return AgentStatistics(
            outstanding_work=self.work.outstanding,
            extraction_batches=self.ingestion.batches,
            claims_extracted=self.ingestion.claims,
            extraction_failures=self.ingestion.failures,
            extraction_dead_letters=self.ingestion.dead,
            extraction_rejected_candidates=self.ingestion.rejected_candidates,
            vectors_embedded=self.embedding.embedded,
            embedding_failures=self.embedding.failed,
            stale_results_dropped=self.ingestion.stale + self.embedding.stale,
            writes_committed=self.writer.committed,
            writes_failed=self.writer.failed,
            vectors_live=0 if index is None else len(index),
            reindexing=self.slot.reindexing,
            embedding_restarts=self.embedding.restarts,
            maintenance_passes=self.maintenance.passes,
            pending_late_recalls=len(self._late),
            clear_jobs_completed=self.clearing.completed,
            audit_rows_dropped=self.audit.dropped,
        )


@contextlib.asynccontextmanager
async def open_agent_supervisor(
    agent_id: AgentId,
    *,
    database: Database,
    limiters: Limiters,
    config: MemoryConfig,
    clock: DomainClock,
    embedder: ActiveEmbedder,
    gateway: QueryEmbeddingGateway,
    vectors: VectorStoreManager,
    extractor: RuleExtractor,
    text_provider: TextProvider | None = None,
) -> AsyncIterator[AgentSupervisor]:
    epoch = await database.write(
        lambda connection: ensure_agent(connection, agent_id, clock.now())
    )
    fence = AgentFence(agent_id, epoch)
    size = config.channel_size
    write_send, write_receive = trio.open_memory_channel[WriteRequest](size)
    wake_send, wake_receive = trio.open_memory_channel[None](1)
    jobs_send, jobs_receive = trio.open_memory_channel[EmbedJob](size * 4)
    work = WorkCounter()
    slot = VectorSlot()
    audit = AuditBuffer()
    writer = WriteCoordinator(
        agent_id,
        database,
        clock,
        write_receive,
        work,
        wake_send.clone(),
        event_max_bytes=config.event_max_bytes,
    )
    embedding = EmbeddingActor(
        agent_id,
        database,
        limiters,
        fence,
        embedder,
        vectors,
        slot,
        jobs_receive,
        write_send.clone(),
        work,
        config.embed_batch,
        config.embed_linger_s,
    )
    ingestion = IngestionActor(
        agent_id,
        database,
        limiters,
        fence,
        extractor,
        wake_receive,
        write_send.clone(),
        jobs_send.clone(),
        work,
        config.extraction_batch,
        config.timezone,
        config=config,
        clock=clock,
        text_provider=text_provider,
    )
    clear_wake_send, clear_wake_receive = trio.open_memory_channel[None](1)
    clearing = ClearJobActor(
        agent_id, database, limiters, clock, slot, clear_wake_receive, vectors=vectors
    )
    maintenance = MaintenanceActor(
        agent_id,
        database,
        limiters,
        vectors,
        slot,
        audit,
        config.maintenance_interval_s,
    )
    async with trio.open_nursery() as nursery:
        # The writer first: everything else sends to it.
        await nursery.start(writer.run)
        await nursery.start(embedding.run)
        await nursery.start(ingestion.run)
        await nursery.start(maintenance.run)
        await nursery.start(clearing.run)
        supervisor = AgentSupervisor(
            agent_id,
            database,
            limiters,
            config,
            clock,
            embedder,
            gateway,
            fence,
            nursery,
            write_send,
            wake_send,
            jobs_send,
            work,
            slot,
            audit,
            maintenance,
            ingestion,
            embedding,
            writer,
            clearing,
            clear_wake_send,
        )
        yield supervisor
