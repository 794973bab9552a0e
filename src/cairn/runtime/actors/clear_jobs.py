"""Clear jobs: resumes a pending job at start, runs new ones, one bounded batch at a time.

Phases (cairn.store.clear_jobs): claims in transactions of at most 256 rows, yielding
between batches; then lineage and dirty work; then the vector projection; the job row goes
last. A crash anywhere resumes from the stored phase (tests/runtime/test_clear.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs
import numpy as np
import trio

from cairn.clock import DomainClock
from cairn.domain.ids import AgentId
from cairn.runtime.actors.embedding import VectorSlot
from cairn.runtime.database import Database
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.store.clear_jobs import (
    ClearJob,
    clear_claims_batch,
    clear_lineage,
    finish_clear,
    pending_clear,
)
from cairn.store.retire import purge_namespace
from cairn.vectors.keys import EmbedTarget, is_claim_key, vector_key
from cairn.vectors.manager import VectorStoreManager

__all__ = ["ClearJobActor"]

logger = logging.getLogger(__name__)


@attrs.define(eq=False)
class ClearJobActor:
    agent_id: AgentId
    database: Database
    limiters: Limiters
    clock: DomainClock
    slot: VectorSlot
    wake_receive: trio.MemoryReceiveChannel[None]
    completed: int = 0
    claims_deleted: int = 0
    # Called before each step with the step's name ("claims", "lineage", "vectors",
    # "finish") and the job as stored: lets tests crash the process at a precise
    # boundary (tests/runtime/test_clear_crash.py). Never set in production.
    observer: Callable[[str, ClearJob], None] | None = None
    # Where a retire deletes the agent's vector files; rows deleted per table by it.
    vectors: VectorStoreManager | None = None
    retired: dict[str, int] | None = None
    _finished: trio.Event = attrs.field(factory=trio.Event)

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with self.wake_receive:
            task_status.started()
            await self._run_pending()
            async for _ in self.wake_receive:
                await self._run_pending()

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
            await finished.wait()

    async def _run_pending(self) -> None:
        agent_id, clock = self.agent_id, self.clock
        while True:
            job = await self.database.read(
                lambda reader: pending_clear(reader.connection, agent_id)
            )
            if job is None:
                finished, self._finished = self._finished, trio.Event()
                finished.set()
                return
            await self._run_phase(job, clock)

    def _observe(self, step: str, job: ClearJob) -> None:
        if self.observer is not None:
            self.observer(step, job)

    async def _run_phase(self, job: ClearJob, clock: DomainClock) -> None:
        self._observe(job.phase, job)
        if job.phase == "claims":
            deleted = await self.database.write(
                lambda connection: clear_claims_batch(connection, job, clock.now())
            )
            self.claims_deleted += len(deleted)
            # Yield between batches: other agents' work and this agent's recalls go on.
            await trio.lowlevel.checkpoint()
        elif job.phase == "lineage":
            await self.database.write(
                lambda connection: clear_lineage(connection, job, clock.now())
            )
        elif job.purpose == "retire":
            await self._drop_vector_files()
            self._observe("finish", job)
            self.retired = await self.database.write(
                lambda connection: purge_namespace(
                    connection, self.agent_id, clock.now()
                )
            )
            self.completed += 1
            logger.info("agent %s retired", job.agent_id)
        else:
            await self._clear_vectors(job)
            self._observe("finish", job)
            await self.database.write(lambda connection: finish_clear(connection, job))
            self.completed += 1
            logger.info("clear job %d of agent %s finished", job.job_id, job.agent_id)

    async def _drop_vector_files(self) -> None:
        self.slot.index = None
        vectors, agent_id = self.vectors, self.agent_id
        if vectors is not None:
            await run_in_thread(
                lambda: vectors.drop_agent(agent_id), limiter=self.limiters.index
            )

    async def _clear_vectors(self, job: ClearJob) -> None:
        # First: an embedding commit that raced the clear must not re-add a vector.
        self.slot.cleared_up_to = max(self.slot.cleared_up_to, job.rowid_cutoff)
        await self.slot.ready.wait()
        index = self.slot.index
        if index is None:
            return

        def remove() -> None:
            keys = index.keys()
            cutoff = vector_key(EmbedTarget.CLAIM, job.rowid_cutoff)
            cleared = keys[is_claim_key(keys) & (keys <= cutoff)]
            index.remove(np.asarray(cleared, dtype=np.int64))

        await run_in_thread(remove, limiter=self.limiters.index)
