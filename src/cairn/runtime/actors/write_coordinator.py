"""The single writer of an agent, and the runtime's writer for shared structures.

Every mutation of an agent's data is a typed request (cairn.runtime.writes) handled here,
one SQLite transaction each, in arrival order. The coordinator owns the agent's fence:

- it creates the agent row and reads the stored epoch before it serves anything;
- inside every transaction it first records the live fence's epoch (an embedding switch
  advances the fence without a transaction of its own), then, for a result of
  asynchronous work, checks that the identity it started under is still current, in
  memory and as stored, so a result of an old epoch never lands whatever cancellation did
  or did not reach (tests/runtime/test_fence.py);
- a request that advances the epoch (a clear or retire job) advances the live fence as
  soon as it commits, before the next request is handled;
- once a retire's namespace purge has committed it writes nothing more for the agent:
  whatever was queued behind the purge (a maintenance pass's audit flush, a recall's
  record) is refused, so no row of the retired agent outlives it;
- a transaction that left an FTS purge or a WAL checkpoint owed (a forget, clear or
  retire) wakes the runtime's scrubber once it has committed (cairn.runtime.scrubbing);
- a privacy-critical request (``Write.durable``: forget, clear, retire, import) commits
  with ``synchronous=FULL``, so no power loss undoes it.

:class:`SharedWriter` serialises the few writes that belong to no agent: the open-time
repair, the scrubber's FTS purges and checkpoint bookkeeping, and operator repairs of
indexes all agents share (FTS integrity and rebuild, vectors whose target is gone). No
other module calls ``Database.write`` (tests/test_single_writer.py).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import apsw
import attrs
import trio

from cairn.clock import DomainClock
from cairn.domain.ids import AgentId
from cairn.errors import (
    ClearPendingError,
    RuntimeClosedError,
    StaleResultError,
    StoreError,
)
from cairn.runtime.database import Database
from cairn.runtime.fairness import Share, current_share
from cairn.runtime.fence import AgentFence
from cairn.runtime.mailbox import WorkCounter
from cairn.runtime.writes import (
    IngestTurns,
    PurgeNamespace,
    ReplayDeadLetters,
    StartClear,
    Write,
    WriteContext,
)
from cairn.store.agents import catch_up_epoch, check_identity, ensure_agent
from cairn.store.evidence import IntakeOutcome, IntakeResult
from cairn.store.fts_purge import scrub_owed

__all__ = ["SharedWrite", "SharedWriter", "WriteCoordinator"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


@attrs.define(eq=False)
class WriteCoordinator:
    agent_id: AgentId
    database: Database
    clock: DomainClock
    requests_receive: trio.MemoryReceiveChannel[Write[Any]]
    work: WorkCounter
    wake_ingestion: Callable[[], None]
    # Wakes the runtime's scrubber (cairn.runtime.scrubbing) after a commit that left an
    # FTS purge or a WAL checkpoint owed.
    wake_scrub: Callable[[], None] = lambda: None
    event_max_bytes: int = 2400
    max_segments: int = 1000
    committed: int = 0
    failed: int = 0
    stale: int = 0
    _fence: AgentFence | None = None
    # Set when a retire's namespace purge committed: the agent's data is gone for good.
    _purged: bool = False

    @property
    def fence(self) -> AgentFence:
        """The agent's fence; exists once :meth:`run` has started."""
        assert self._fence is not None, "the coordinator has not started"  # noqa: S101
        return self._fence

    async def run(
        self, *, task_status: trio.TaskStatus[AgentFence] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Create the agent row, start the fence at the stored epoch, then serve."""
        agent_id, clock = self.agent_id, self.clock
        async with self.requests_receive:
            epoch = await self.database.write(
                lambda connection: ensure_agent(connection, agent_id, clock.now())
            )
            self._fence = AgentFence(agent_id, epoch)
            task_status.started(self._fence)
            try:
                async for request in self.requests_receive:
                    await self._handle(request)
            finally:
                self._refuse_queued()

    def _refuse_queued(self) -> None:
        """The writer is going away (stopped, failed, retired): nobody may wait forever
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

    def _transaction(
        self, request: Write[T]
    ) -> Callable[[apsw.Connection], tuple[T, bool]]:
        """The request's transaction; it also answers whether forgotten text is owed a
        purge or checkpoint afterwards (a forget, clear or retire asked for one)."""
        fence = self.fence
        context = WriteContext(
            self.agent_id, self.clock.now(), self.event_max_bytes, self.max_segments
        )

        def transaction(connection: apsw.Connection) -> tuple[T, bool]:
            catch_up_epoch(connection, fence.agent_id, fence.epoch)
            identity = request.fenced_by
            if identity is not None:
                if not fence.is_current(identity):
                    raise StaleResultError(
                        f"result of epoch {identity.config_epoch} for agent"
                        f" {identity.agent_id!r} is stale"
                    )
                check_identity(connection, identity)
            return request.apply(connection, context), scrub_owed(connection)

        return transaction

    async def _handle(self, request: Write[Any]) -> None:
        reply = request.reply
        if self._purged:
            # Queued behind the purge by this agent's own actors or callers: writing
            # it would bring back a row of the retired namespace.
            reply.fail(RuntimeClosedError(f"agent {self.agent_id!r} was retired"))
            if isinstance(request, IngestTurns):
                self.work.done(1)
            return
        # The writer thread is background capacity too: taken in this agent's turn, a
        # user's own write before bulk work (cairn.runtime.fairness).
        share = current_share.set(Share(self.agent_id, request.priority))
        try:
            value, scrub = await self.database.write(
                self._transaction(request), durable=request.durable
            )
        except trio.Cancelled:
            # Whether or not the transaction landed, this caller gets an answer.
            reply.fail(
                RuntimeClosedError(f"agent {self.agent_id!r} stopped during a write")
            )
            raise
        except StaleResultError as error:
            self.stale += 1
            reply.fail(error)
        except ClearPendingError:
            # The clear-fence trigger refused a claim write (cairn.store.errors).
            self.failed += 1
            reply.fail(
                ClearPendingError(f"a clear job is pending for {self.agent_id!r}")
            )
        except StoreError as error:
            self.failed += 1
            logger.warning(
                "write for agent %s failed: %s", self.agent_id, type(error).__name__
            )
            reply.fail(error)
        except Exception as error:  # noqa: BLE001 - typed errors go back to the one caller
            self.failed += 1
            reply.fail(error)
        else:
            self.committed += 1
            self._after_commit(request, value)
            if scrub:
                # Forgotten text leaves the disk now, not at a timed pass.
                self.wake_scrub()
            reply.set(value)
        finally:
            current_share.reset(share)
            if isinstance(request, IngestTurns):
                self.work.done(1)

    def _after_commit(self, request: Write[Any], value: Any) -> None:
        """Effects of a commit that must precede the next request (no checkpoint)."""
        match request:
            case StartClear(purpose=purpose):
                job, epoch = value
                self.fence.advance(epoch, f"{purpose} job {job.job_id}")
            case IngestTurns():
                # New evidence waits in the database; an edit or deletion queues nothing
                # new itself but may re-open its session.
                results: list[IntakeResult] = value
                if any(result.outcome is IntakeOutcome.INGESTED for result in results):
                    self.wake_ingestion()
            case ReplayDeadLetters():
                self.wake_ingestion()
            case PurgeNamespace():
                self._purged = True
            case _:
                pass


@attrs.frozen
class SharedWrite(Generic[T]):
    """A write to a structure no single agent owns; ``apply`` runs in one transaction."""

    apply: Callable[[apsw.Connection, dt.datetime], T]
    # What it is, for the log: a repair of shared indexes is an operator's act.
    purpose: str
    # Shared writes are rare and most are privacy work (the open-time repair writes
    # tombstones; the scrubber's purge and the settling of its checkpoint, whose synced
    # WAL header also makes the checkpoint's truncation of the log durable), so they
    # commit with `synchronous=FULL` unless they say otherwise.
    durable: bool = True


@attrs.define(eq=False)
class SharedWriter:
    """Serialises runtime-wide writes (the writer connection is one, like an agent's)."""

    database: Database
    clock: DomainClock
    _lock: trio.Lock = attrs.field(factory=trio.Lock)

    async def commit(self, request: SharedWrite[T]) -> T:
        now = self.clock.now()
        async with self._lock:
            logger.debug("shared write: %s", request.purpose)
            return await self.database.write(
                lambda connection: request.apply(connection, now),
                durable=request.durable,
            )
