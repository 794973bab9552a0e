"""Ingestion: pending evidence → extraction → one commit per batch → embedding jobs.

The database is the queue: whatever is not marked extracted is pending, so work accepted
before a crash is picked up again at the next start. Claims of a batch and the batch's
"extracted" marks commit in one transaction; a cancelled or stale pass commits nothing
(tests/runtime/test_cancellation.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import attrs
import trio

from cairn.domain.ids import AgentId
from cairn.errors import StaleResultError
from cairn.ingestion.extract import ExtractionInput, RuleExtractor
from cairn.ingestion.validate import validate_drafts
from cairn.runtime.database import Database
from cairn.runtime.fence import AgentFence
from cairn.runtime.mailbox import WorkCounter
from cairn.runtime.messages import CommitExtraction, EmbedJob, WriteRequest
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.store.evidence import pending_events

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.domain.claim import ClaimDraft
    from cairn.domain.evidence import EvidenceEvent

__all__ = ["IngestionActor"]

logger = logging.getLogger(__name__)


@attrs.define(eq=False)
class IngestionActor:
    agent_id: AgentId
    database: Database
    limiters: Limiters
    fence: AgentFence
    extractor: RuleExtractor
    wake_receive: trio.MemoryReceiveChannel[None]
    write_requests_send: trio.MemorySendChannel[WriteRequest]
    embed_jobs_send: trio.MemorySendChannel[EmbedJob]
    work: WorkCounter
    batch_size: int
    timezone: str
    batches: int = 0
    claims: int = 0
    stale: int = 0
    failures: int = 0

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with self.wake_receive, self.write_requests_send, self.embed_jobs_send:
            task_status.started()
            await self._drain_pending()
            async for _ in self.wake_receive:
                await self._drain_pending()

    async def _drain_pending(self) -> None:
        agent_id, limit = self.agent_id, self.batch_size
        while True:
            events = await self.database.read(
                lambda reader: pending_events(reader.connection, agent_id, limit)
            )
            if not events:
                return
            await self._process(events)

    def _extract(self, events: Sequence[EvidenceEvent]) -> list[ClaimDraft]:
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
        return validate_drafts(drafts, events)

    async def _process(self, events: list[EvidenceEvent]) -> None:
        identity = self.fence.current()
        with self.fence.pass_scope(identity):
            try:
                drafts = await run_in_thread(
                    lambda: self._extract(events),
                    limiter=self.limiters.cpu,
                    background=self.limiters.background,
                )
            except Exception:
                # The evidence itself is stored and recallable; only its claims are lost,
                # and the failure is counted in status rather than retried forever.
                self.failures += 1
                logger.exception(
                    "extraction failed for a batch of %d events", len(events)
                )
                drafts = []
            request = CommitExtraction(identity, tuple(events), tuple(drafts))
            await self.write_requests_send.send(request)
            try:
                committed = await request.reply.wait()
            except StaleResultError:
                self.stale += 1
                return
            finally:
                # Settled either way: committed, or still pending in the database, where
                # wait_idle's own check finds it (cairn.runtime.supervisor).
                self.work.done(len(events))
            self.batches += 1
            self.claims += len(committed.inserted)
            # Claims cite these events and are found through the events' vectors.
            jobs = [
                EmbedJob("event", event.rowid, event.embedding_text())
                for event in events
            ]
            self.work.add(len(jobs))
            for job in jobs:
                await self.embed_jobs_send.send(job)
