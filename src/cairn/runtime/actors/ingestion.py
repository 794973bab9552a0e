"""Ingestion: pending evidence → leased batch → extraction → validation → one commit.

The database is the queue: pending events form batches of up to ``extraction_batch``
events once the batch is full, an urgent event (task finished/failed/blocked, needs
input) arrives, the oldest has waited ``extraction_linger_s`` on the trio clock
(``rules_linger_s`` when the rules extract: nothing is shared by waiting), or a drain
asks for a flush. Each batch is worked under a lease with a token
(cairn.store.batches); its claims, lineage, dirty work, FTS rows, receipt and events'
state commit in one transaction under both the lease and the execution identity, so a
cancelled, fenced or taken-over pass commits nothing (tests/runtime/test_batches.py,
tests/runtime/test_cancellation.py). A failing batch keeps its events and backs off;
after ``extraction_max_attempts`` it is a dead letter, counted in status, until replayed.
A write the store itself refuses (a full disk) is retried with backoff, never hot, and
reported to the agent's stall watch (cairn.runtime.stall_watch), so a wait for idle
gives up on a store that stays broken instead of waiting forever.

Extraction is the text provider when one is configured (one call per batch, a JSON
schema, a token cap and a timeout; one batch at a time per agent), else the rule
extractor.
"""

from __future__ import annotations

import contextlib
import logging
import math
from typing import TYPE_CHECKING

import attrs
import trio

from cairn import crashpoints
from cairn.clock import DomainClock, SystemDomainClock
from cairn.config import MemoryConfig
from cairn.domain.evidence import URGENT_KINDS
from cairn.domain.ids import AgentId
from cairn.entities.extract import mentions_in
from cairn.entities.model import model_mentions
from cairn.errors import StaleLeaseError, StaleResultError, StoreError
from cairn.ingestion.extract import ExtractionInput, RuleExtractor
from cairn.ingestion.extraction_schema import (
    Citation,
    ExtractionAnswer,
    build_prompt,
    proposal_from_answer,
)
from cairn.ingestion.proposal import Proposal, proposal_from_drafts
from cairn.ingestion.validate import ValidatedBatch, validate_proposal
from cairn.providers.http.text import TextProvider
from cairn.runtime.backoff import Backoff
from cairn.runtime.database import Database, Reader
from cairn.runtime.fairness import Share, current_share
from cairn.runtime.fence import AgentFence
from cairn.runtime.mailbox import WorkCounter
from cairn.runtime.messages import EmbedJob
from cairn.runtime.stall_watch import StallWatch, is_storage_fault
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.runtime.writes import (
    CommitBatch,
    FailBatch,
    ReleaseLease,
    ReleaseLeases,
    TakeLease,
    WriteQueue,
)
from cairn.store.batches import Lease, PendingWork, pending_work
from cairn.store.clear_jobs import pending_clear
from cairn.vectors.keys import EmbedTarget

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from cairn.domain.evidence import EvidenceEvent
    from cairn.entities.vocabulary import EventMentions

__all__ = ["IngestionActor"]

logger = logging.getLogger(__name__)

_URGENT = tuple(sorted(kind.value for kind in URGENT_KINDS))


# How often a waiting extraction re-checks whether a pending clear has finished.
_CLEAR_RECHECK_S = 1.0
# The step this actor's writes are reported under (cairn.runtime.stall_watch).
STEP = "extraction"


def _cited(sources: Sequence[Citation]) -> list[str]:
    return [source.event_id for source in sources]


@attrs.define(eq=False)
class IngestionActor:
    agent_id: AgentId
    database: Database
    limiters: Limiters
    fence: AgentFence
    extractor: RuleExtractor
    wake_receive: trio.MemoryReceiveChannel[None]
    writes: WriteQueue
    embed_jobs_send: trio.MemorySendChannel[EmbedJob]
    work: WorkCounter
    batch_size: int
    timezone: str
    config: MemoryConfig = attrs.field(factory=MemoryConfig)
    clock: DomainClock = attrs.field(factory=SystemDomainClock)
    text_provider: TextProvider | None = None
    stall: StallWatch = attrs.field(factory=StallWatch)
    batches: int = 0
    claims: int = 0
    stale: int = 0
    failures: int = 0
    dead: int = 0
    rejected_candidates: int = 0
    _flushing: int = 0
    _deferring: bool = False
    _serving: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    _first_seen: float | None = None
    _progress: trio.Event = attrs.field(factory=trio.Event)
    _store_retry: Backoff = attrs.field(factory=lambda: Backoff("batch selection"))
    _record_retry: Backoff = attrs.field(
        factory=lambda: Backoff("recording a failed batch")
    )

    def progress_event(self) -> trio.Event:
        """Set after the next batch settles or fails, or when the actor finds nothing to
        do; take it *before* checking the database, so no progress is missed between."""
        return self._progress

    def _made_progress(self) -> None:
        self._progress.set()
        self._progress = trio.Event()

    @contextlib.contextmanager
    def flushing(self) -> Iterator[None]:
        """While inside, batch whatever is pending at once instead of lingering (a caller
        waiting for idle, or a drain)."""
        self._flushing += 1
        try:
            yield
        finally:
            self._flushing -= 1

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        # Whose turn this actor's background work takes (cairn.runtime.fairness).
        current_share.set(Share(self.agent_id))
        async with self.wake_receive, self.writes, self.embed_jobs_send:
            # Leases and retry times of an earlier runtime are on its trio clock.
            await self.writes.commit(ReleaseLeases())
            task_status.started()
            with self._serving:
                while (lease := await self._next_lease()) is not None:
                    try:
                        await self._process(lease)
                    finally:
                        self._made_progress()
            if self._deferring:
                # Stopping: take wakes (writers still send them) but start no batch.
                async for _ in self.wake_receive:
                    pass

    def defer(self) -> None:
        """Stop extracting for good (the agent is stopping) and cancel the model call in
        flight instead of awaiting it: its lease is released with the cancel and the turns
        stay pending, extracted at the next start."""
        self._deferring = True
        self._serving.cancel(reason="agent stopping")

    # -- batch selection -----------------------------------------------------------------
    def _trigger(self, work: PendingWork, now: float) -> str | None:
        if work.reclaimable:
            return "retry"
        if work.unbatched == 0:
            self._first_seen = None
            return None
        if self._first_seen is None:
            self._first_seen = now
        if (
            work.unbatched >= self.batch_size
            or work.unbatched_bytes >= self.config.extraction_batch_bytes
        ):
            return "full"
        if work.urgent:
            return "urgent"
        if self._flushing:
            return "flush"
        if now - self._first_seen >= self._linger_s():
            return "linger"
        return None

    def _linger_s(self) -> float:
        """How long the oldest pending turn waits for company: a text-model call is
        shared by the batch, the rules are not (cairn.config: ``rules_linger_s``)."""
        config = self.config
        if self.text_provider is None:
            return min(config.extraction_linger_s, config.rules_linger_s)
        return config.extraction_linger_s

    def _wake_at(self, work: PendingWork) -> float:
        wake = math.inf if work.next_wake_s is None else work.next_wake_s
        if work.unbatched and self._first_seen is not None:
            wake = min(wake, self._first_seen + self._linger_s())
        return wake

    async def _next_lease(self) -> Lease | None:
        """The next batch to work on; ``None`` once the wake channel is closed."""
        agent_id, config = self.agent_id, self.config
        while True:
            now = trio.current_time()

            def overview(reader: Reader, now: float = now) -> tuple[PendingWork, bool]:
                connection = reader.connection
                return (
                    pending_work(connection, agent_id, now, _URGENT),
                    pending_clear(connection, agent_id) is not None,
                )

            work, clearing = await self.database.read(overview)
            trigger = self._trigger(work, now)
            if trigger is not None and clearing:
                # A clear fences claim writes, so a batch now would only be refused:
                # wait for the wake that follows the clear (re-checking now and then,
                # for a clear resumed at start).
                with trio.move_on_after(_CLEAR_RECHECK_S):
                    try:
                        await self.wake_receive.receive()
                    except trio.EndOfChannel:
                        return None
                continue
            if trigger is not None:
                request = TakeLease(
                    now_s=now,
                    lease_s=config.extraction_lease_s,
                    max_events=self.batch_size,
                    max_bytes=config.extraction_batch_bytes,
                    form_new=trigger != "retry",
                    trigger=trigger,
                    identity=self.fence.current(),
                )
                try:
                    lease = await self.writes.commit(request)
                except StaleResultError as error:
                    # The fence moved between the read and the write (a switch or a
                    # clear: the next try succeeds), or the stored epoch is ahead of
                    # it: never retried hot either way.
                    self.stale += 1
                    await trio.sleep(self._store_retry.failed(error))
                    continue
                except StoreError as error:
                    # E.g. a full disk: pending turns stay pending; try again later,
                    # never hot and never the end of the agent.
                    self.stall.failed(STEP, error)
                    await trio.sleep(self._store_retry.failed(error))
                    continue
                self._store_retry.succeeded()
                self.stall.committed(STEP)
                if lease is not None:
                    return lease
                continue
            if work.unbatched == 0 and work.next_wake_s is None:
                self._made_progress()  # idle: nothing pending for this actor
            with trio.move_on_at(self._wake_at(work)):
                try:
                    await self.wake_receive.receive()
                except trio.EndOfChannel:
                    return None

    # -- one batch -------------------------------------------------------------------------
    def _rule_proposal(self, events: Sequence[EvidenceEvent]) -> Proposal:
        inputs = [
            ExtractionInput(
                event_id=event.event_id,
                role=event.role,
                text=event.text,
                occurred_at=event.occurred_at,
                speaker=event.speaker,
                session_id=event.session_id,
            )
            for event in events
        ]
        drafts = self.extractor.extract(inputs, timezone=self.timezone)
        return proposal_from_drafts(drafts, events)

    async def _extract(
        self, lease: Lease
    ) -> tuple[ValidatedBatch, list[EventMentions]]:
        """The validated batch, and the text model's entity drafts (none from rules)."""
        timezone = self.timezone
        # Noise turns (cairn.ingestion.classify) reach no extractor, rule or model: they
        # are discarded by name, so the batch still accounts for every event.
        events = [event for event in lease.events if not event.evidence_class.is_noise]
        noise = tuple(
            event.event_id for event in lease.events if event.evidence_class.is_noise
        )
        drafted: list[EventMentions] = []
        if not events:
            proposal = Proposal()
        elif self.text_provider is None:
            proposal = await run_in_thread(
                lambda: self._rule_proposal(events),
                limiter=self.limiters.cpu,
                background=self.limiters.background,
            )
        else:
            system, user = build_prompt(events)
            # One call per batch, and this actor works one batch at a time: concurrency
            # 1 per agent by construction.
            with trio.fail_after(self.config.extraction_timeout_s):
                answer = await self.text_provider.complete_json(
                    system,
                    user,
                    ExtractionAnswer,
                    max_tokens=self.config.extraction_max_tokens,
                )
            proposal = proposal_from_answer(answer)
            texts = {str(event.event_id): (event.rowid, event.text) for event in events}
            drafted = model_mentions(
                [
                    (entity.name, entity.kind, entity.aliases, _cited(entity.sources))
                    for entity in answer.entities
                ]
                + [
                    (name, "person", (), _cited(relation.sources))
                    for relation in answer.relations
                    for name in (relation.subject, relation.object)
                ],
                texts,
            )
        if noise:
            proposal = attrs.evolve(proposal, discarded=(*proposal.discarded, *noise))
        batch = await run_in_thread(
            lambda: validate_proposal(proposal, lease.events, timezone),
            limiter=self.limiters.cpu,
            background=self.limiters.background,
        )
        return batch, drafted

    async def _mentions(
        self, lease: Lease, drafted: list[EventMentions]
    ) -> tuple[EventMentions, ...]:
        """The entity drafts of the batch's turns: the offline rules' always, and the text
        model's when it extracted the batch; noise turns name no one."""
        events = [event for event in lease.events if not event.evidence_class.is_noise]
        model = dict(drafted)
        return await run_in_thread(
            lambda: tuple(
                (
                    event.rowid,
                    (
                        *mentions_in(event.text, event.speaker, event.role),
                        *model.get(event.rowid, ()),
                    ),
                )
                for event in events
            ),
            limiter=self.limiters.cpu,
            background=self.limiters.background,
        )

    async def _process(self, lease: Lease) -> None:
        identity = self.fence.current()
        with self.fence.pass_scope(identity) as pass_scope:
            try:
                batch, drafted = await self._extract(lease)
                mentions = await self._mentions(lease, drafted)
            except Exception as error:  # noqa: BLE001 - any failure backs the batch off
                await self._fail(lease, error)
                return
            request = CommitBatch(
                lease=lease, batch=batch, identity=identity, mentions=mentions
            )
            try:
                receipt = await self.writes.commit(request)
                crashpoints.reach("batch.after_commit")
            except StaleResultError as error:
                # Taken over, fenced, or its events changed under it (an edit). Never
                # retried hot: the batch backs off like a failure and, if it keeps
                # going stale, ends as a dead letter (a stale fence would otherwise
                # spin: tests/runtime/test_batches.py).
                self.stale += 1
                await self._fail(lease, error)
                return
            except Exception as error:  # noqa: BLE001 - e.g. a pending clear refuses claims
                self.stall.failed(STEP, error)  # counted if the store itself failed
                await self._fail(lease, error)
                return
        if pass_scope.cancelled_caught:
            # Fenced off before the commit: give the lease back so the next epoch's pass
            # need not wait for it to expire.
            self.stale += 1
            await self._release(lease)
            return
        self.stall.committed(STEP)
        self.batches += 1
        self.claims += len(receipt.claim_rowids)
        self.rejected_candidates += receipt.rejected_candidates
        # Claims cite these events and are found through the events' vectors.
        jobs = [
            EmbedJob(EmbedTarget.EVENT, event.rowid, event.embedding_text())
            for event in lease.events
        ]
        self.work.add(len(jobs))
        for job in jobs:
            await self.embed_jobs_send.send(job)

    async def _release(self, lease: Lease) -> None:
        """Give a fenced-off lease back; retried with backoff while the store itself
        refuses it (a full disk), so the next epoch's pass need not wait out the lease."""
        while True:
            try:
                await self.writes.commit(ReleaseLease(lease))
            except StoreError as error:
                self.stall.failed(STEP, error)
                if not is_storage_fault(error):
                    raise
                await trio.sleep(self._record_retry.failed(error))
                continue
            self._record_retry.succeeded()
            self.stall.committed(STEP)
            return

    async def _fail(self, lease: Lease, error: Exception) -> None:
        """Back the batch off (its events kept); the error's class only, never its text,
        reaches the log and the database: messages can quote model or user text.

        Recording the failure is retried with backoff while the store itself refuses it
        (a full disk): each refusal is reported to the stall watch, and once the fault
        clears the batch is backed off and retried at once instead of waiting out its
        lease."""
        self.failures += 1
        kind = type(error).__name__
        agent_id, config = self.agent_id, self.config
        while True:
            request = FailBatch(
                lease=lease,
                error=kind,
                now_s=trio.current_time(),
                max_attempts=config.extraction_max_attempts,
                backoff_s=config.extraction_backoff_s,
                backoff_cap_s=config.extraction_backoff_cap_s,
            )
            try:
                dead = await self.writes.commit(request)
            except StaleLeaseError:
                self.stale += 1
                return
            except StoreError as store_error:
                self.stall.failed(STEP, store_error)
                if is_storage_fault(store_error):
                    await trio.sleep(self._record_retry.failed(store_error))
                    continue
                # The lease expires by itself and the batch is taken again then.
                logger.warning(
                    "recording a failed batch of agent %s failed: %s",
                    agent_id,
                    type(store_error).__name__,
                )
                return
            self._record_retry.succeeded()
            self.stall.committed(STEP)
            break
        logger.warning(
            "extraction batch %d of agent %s failed (%s), attempt %d%s",
            lease.batch_id,
            agent_id,
            kind,
            lease.attempt,
            ": dead letter" if dead else "",
        )
        if dead:
            self.dead += 1
