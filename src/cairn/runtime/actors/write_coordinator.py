"""The single writer of an agent: every mutation is serialised through here.

Each request runs as one SQLite transaction in the writer thread. Commits of async work
re-check the execution identity inside that transaction, so a result of an old epoch can
never land, whatever cancellation did or did not reach (tests/runtime/test_fence.py).
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any, cast

import attrs
import trio

from cairn.clock import DomainClock
from cairn.domain.ids import AgentId, EventId
from cairn.errors import (
    ClearPendingError,
    RuntimeClosedError,
    StaleResultError,
    StoreError,
)
from cairn.ingestion.intake import prepare_turns
from cairn.runtime.database import Database
from cairn.runtime.mailbox import WorkCounter
from cairn.runtime.messages import (
    CommitBatch,
    DeclareSession,
    IngestTurns,
    StoreEmbeddings,
    StoreRecallResult,
    WriteRequest,
)
from cairn.store.agents import check_identity
from cairn.store.batches import BatchReceipt, begin_commit, finish_commit
from cairn.store.claims import insert_claims
from cairn.store.clear_jobs import pending_clear
from cairn.store.directives import create_directive
from cairn.store.embeddings import store_embeddings
from cairn.store.evidence import (
    IntakeOutcome,
    IntakeResult,
    insert_events,
)
from cairn.store.requests import save_recall_result
from cairn.store.sessions import declare_session

if TYPE_CHECKING:
    from collections.abc import Callable

    import apsw

    from cairn.runtime.mailbox import Reply
    from cairn.vectors.keys import EmbedTarget

__all__ = ["WriteCoordinator"]

logger = logging.getLogger(__name__)


def _commit_batch(
    connection: apsw.Connection,
    agent_id: AgentId,
    request: CommitBatch,
    clock: DomainClock,
) -> BatchReceipt:
    """Identity fence, lease check (a retried commit gets its receipt back), then the
    batch's claims with their tombstone and conflict checks, lineage, dirty work and FTS,
    the directive drafts, the receipt and the events' state: all or nothing."""
    check_identity(connection, request.identity)
    if pending_clear(connection, agent_id) is not None:
        # Extraction that started after the clear's fence: its events stay pending and
        # are extracted once the clear is done (the supervisor wakes ingestion then).
        raise StaleResultError(f"a clear job is pending for {agent_id!r}")
    lease, batch = request.lease, request.batch
    earlier = begin_commit(connection, agent_id, lease)
    if earlier is not None:
        return earlier
    now = clock.now()
    rowids: dict[EventId, int] = {event.event_id: event.rowid for event in lease.events}
    committed = insert_claims(connection, agent_id, batch.drafts, rowids, now)
    for text in batch.directive_drafts:
        create_directive(connection, agent_id, "instruction", text, "draft", now)
    receipt = BatchReceipt(
        batch_id=lease.batch_id,
        event_ids=tuple(event.event_id for event in lease.events),
        claim_rowids=tuple(rowid for rowid, _ in committed.inserted),
        discarded=tuple(batch.discarded),
        rejected_candidates=batch.rejected_candidates,
        merged=committed.merged,
        superseded=committed.superseded,
        suppressed=committed.suppressed,
        directive_drafts=len(batch.directive_drafts),
    )
    finish_commit(connection, agent_id, lease, receipt, now)
    return receipt


@attrs.define(eq=False)
class WriteCoordinator:
    agent_id: AgentId
    database: Database
    clock: DomainClock
    requests_receive: trio.MemoryReceiveChannel[WriteRequest]
    work: WorkCounter
    wake_send: trio.MemorySendChannel[None]
    event_max_bytes: int = 2400
    committed: int = 0
    failed: int = 0

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with self.requests_receive:
            task_status.started()
            try:
                async for request in self.requests_receive:
                    await self._handle(request)
            finally:
                self._refuse_queued()

    def _refuse_queued(self) -> None:
        """The writer is going away (cancelled, e.g. by a retire): nobody may wait forever
        for a reply to a request it will never handle."""
        while True:
            try:
                request = self.requests_receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                return
            request.reply.fail(
                RuntimeClosedError(f"agent {self.agent_id!r} stopped before this write")
            )
            if isinstance(request, IngestTurns):
                self.work.done(1)

    async def _handle(self, request: WriteRequest) -> None:
        operation: Callable[[apsw.Connection], Any]
        agent_id, clock, max_bytes = self.agent_id, self.clock, self.event_max_bytes
        match request:
            case IngestTurns(turns=turns):
                # Redaction runs here, in the writer thread, before anything is stored.
                operation = lambda c: insert_events(  # noqa: E731
                    c, agent_id, prepare_turns(turns, max_bytes), clock.now()
                )
            case DeclareSession(info=info):
                operation = lambda c: declare_session(c, agent_id, info)  # noqa: E731
            case CommitBatch():
                operation = lambda c: _commit_batch(c, agent_id, request, clock)  # noqa: E731
            case StoreEmbeddings(
                identity=identity, embedding_identity=embedding, rows=rows
            ):

                def operation(c: apsw.Connection) -> list[tuple[EmbedTarget, int]]:
                    check_identity(c, identity)
                    return store_embeddings(c, agent_id, embedding, rows)

            case StoreRecallResult(request_id=request_id, status=status, result=result):
                operation = lambda c: save_recall_result(  # noqa: E731
                    c, agent_id, request_id, status, result, clock.now()
                )
        reply: Reply[Any] = request.reply
        try:
            value = await self.database.write(operation)
        except trio.Cancelled:
            # Whether or not the transaction landed, this caller gets an answer.
            reply.fail(RuntimeClosedError(f"agent {agent_id!r} stopped during a write"))
            raise
        except ClearPendingError:
            self.failed += 1
            reply.fail(ClearPendingError(f"a clear job is pending for {agent_id!r}"))
        except StoreError as error:
            self.failed += 1
            logger.warning(
                "write for agent %s failed: %s", agent_id, type(error).__name__
            )
            reply.fail(error)
        except Exception as error:  # noqa: BLE001 - typed errors go back to the one caller
            self.failed += 1
            reply.fail(error)
        else:
            self.committed += 1
            reply.set(value)
            if isinstance(request, IngestTurns):
                self._settle_intake(cast("list[IntakeResult]", value))
        finally:
            if isinstance(request, IngestTurns):
                self.work.done(1)

    def _settle_intake(self, results: list[IntakeResult]) -> None:
        """New evidence waits in the database; wake the ingestion actor for it. (Pending
        extraction is counted from the database, not here: cairn.runtime.supervisor.)"""
        # An edit or deletion queues nothing new itself but may re-open its session.
        if any(result.outcome is IntakeOutcome.INGESTED for result in results):
            with contextlib.suppress(trio.WouldBlock):
                self.wake_send.send_nowait(None)
