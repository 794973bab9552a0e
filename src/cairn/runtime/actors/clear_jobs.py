"""Clear jobs: resumes a pending job at start, runs new ones, one bounded batch at a time.

Phases (cairn.store.clear_jobs): claims, then the turns they were learned from, in
transactions of at most 256 rows, yielding between batches; then lineage and dirty work; then the vector projection; the job row goes
last. A crash anywhere resumes from the stored phase (tests/runtime/test_clear.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs
import trio

from cairn import crashpoints
from cairn.domain.ids import AgentId
from cairn.errors import (
    AgentUnavailableError,
    RuntimeClosedError,
    StaleResultError,
    StoreError,
)
from cairn.runtime.backoff import Backoff
from cairn.runtime.database import Database
from cairn.runtime.fence import AgentFence
from cairn.runtime.projection import Projection
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.runtime.writes import (
    ClearBatch,
    ClearLineage,
    FinishClear,
    PurgeNamespace,
    WriteQueue,
)
from cairn.store.clear_jobs import ClearJob, pending_clear
from cairn.vectors.manager import VectorStoreManager

__all__ = ["ClearJobActor"]

logger = logging.getLogger(__name__)


@attrs.define(eq=False)
class ClearJobActor:
    agent_id: AgentId
    database: Database
    limiters: Limiters
    fence: AgentFence
    writes: WriteQueue
    projection: Projection
    wake_receive: trio.MemoryReceiveChannel[None]
    completed: int = 0
    claims_deleted: int = 0
    events_deleted: int = 0
    # Turns after a cleared one, re-indexed without it: the supervisor re-embeds them.
    reindexed: list[int] = attrs.field(factory=list)
    # Called before each step with the step's name ("claims", "lineage", "vectors",
    # "finish") and the job as stored: lets tests crash the process at a precise
    # boundary (tests/runtime/test_clear_crash.py). Never set in production.
    observer: Callable[[str, ClearJob], None] | None = None
    # Where a retire deletes the agent's vector files; rows deleted per table by it.
    vectors: VectorStoreManager | None = None
    retired: dict[str, int] | None = None
    _finished: trio.Event = attrs.field(factory=trio.Event)
    # Why this actor ended (a step's error, or a stop): waiters are told, never left
    # waiting for a job nobody runs any more (the job stays stored and resumes at the
    # agent's next start).
    _ended: BaseException | None = None
    # A step that failed on the store (an I/O error, a full disk) fails alone: the job
    # stays stored and fenced, the step is retried after a backoff, and whoever waits for
    # the job is told at once (the error of the last failed step, until one succeeds).
    _step_failed: StoreError | None = None
    _backoff: Backoff = attrs.field(factory=lambda: Backoff("a clear job step"))

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with self.wake_receive, self.writes:
            task_status.started()
            try:
                await self._run_pending()
                async for _ in self.wake_receive:
                    await self._run_pending()
            except BaseException as error:
                self._ended = error
                self._finished.set()
                raise

    def take_reindexed(self) -> list[int]:
        """The turns re-indexed since the last call (their vectors must be re-embedded)."""
        taken, self.reindexed = self.reindexed, []
        return taken

    async def wait_finished(self) -> None:
        """Return once no clear job of this agent is pending."""
        agent_id = self.agent_id
        while True:
            # Captured before the check, so a job finishing in between still wakes us.
            finished = self._finished
            if not await self.database.read(
                lambda reader: pending_clear(reader.connection, agent_id) is not None
            ):
                return
            self._raise_if_ended()
            await finished.wait()
            failed = self._step_failed
            if failed is not None:
                raise type(failed)(
                    f"the clear job of agent {agent_id!r} could not go on ({failed});"
                    " it is kept, what it clears stays hidden, and it resumes by itself"
                )

    def _raise_if_ended(self) -> None:
        ended = self._ended
        if ended is None:
            return
        if isinstance(ended, Exception):
            raise AgentUnavailableError(
                f"agent {self.agent_id!r} failed during its clear job"
                f" ({type(ended).__name__}); the job is kept and resumes when the agent"
                " restarts, on its next call"
            )
        raise RuntimeClosedError(
            f"agent {self.agent_id!r} stopped before its clear job finished; the job"
            " is kept and resumes at its next start"
        )

    async def _run_pending(self) -> None:
        agent_id = self.agent_id
        while True:
            job = await self.database.read(
                lambda reader: pending_clear(reader.connection, agent_id)
            )
            if job is None:
                finished, self._finished = self._finished, trio.Event()
                finished.set()
                return
            try:
                await self._run_phase(job)
            except StaleResultError:
                # The epoch moved on under this step (an embedding switch): the step
                # is idempotent, so it runs again under the new epoch.
                continue
            except StoreError as error:
                self._step_failed = error
                failed, self._finished = self._finished, trio.Event()
                failed.set()
                await trio.sleep(self._backoff.failed(error))
                continue
            self._step_failed = None
            self._backoff.succeeded()

    def _observe(self, step: str, job: ClearJob) -> None:
        crashpoints.reach(f"{job.purpose}.phase")
        if self.observer is not None:
            self.observer(step, job)

    async def _run_phase(self, job: ClearJob) -> None:
        """One step of the job, as one fenced write: each batch is a bounded transaction
        and the coordinator takes other agents' and this agent's writes between them."""
        self._observe(job.phase, job)
        identity = self.fence.current()
        if job.phase == "claims":
            batch = await self.writes.commit(ClearBatch(job=job, identity=identity))
            self.claims_deleted += len(batch.claims)
            self.events_deleted += len(batch.events)
            if batch.reindexed:
                await self.projection.remove(stale=batch.reindexed)
                self.reindexed.extend(batch.reindexed)
        elif job.phase == "lineage":
            await self.writes.commit(ClearLineage(job=job, identity=identity))
        elif job.purpose == "retire":
            self.projection.drop()
            vectors, agent_id = self.vectors, self.agent_id
            if vectors is not None:
                await run_in_thread(
                    lambda: vectors.drop_agent(agent_id), limiter=self.limiters.index
                )
            self._observe("finish", job)
            self.retired = await self.writes.commit(PurgeNamespace(identity=identity))
            self.completed += 1
            logger.info("agent %s retired", job.agent_id)
        else:
            await self.projection.remove_cleared(job.rowid_cutoff, job.event_cutoff)
            self._observe("finish", job)
            finished = await self.writes.commit(FinishClear(job=job, identity=identity))
            if finished is None:
                return  # a later clear extended the job: its phases run again
            self.completed += 1
            logger.info("clear job %d of agent %s finished", job.job_id, job.agent_id)
