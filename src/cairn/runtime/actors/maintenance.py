"""Maintenance: timed, bounded passes that keep projections and bookkeeping current.

A pass publishes the vector projection when it changed (atomically, see
cairn.vectors.publish), flushes buffered audit rows, prunes expired and over-cap late
results and audit rows (a bounded number per pass), and works a bounded batch of dirty
claims through the passes of cairn.maintenance (plan on a snapshot, apply through the
write coordinator under the fence captured at the start, settle each seed at the
generation it read). Purging forgotten text from the disk is not a timed step: the
runtime's scrubber does it as soon as the forget commits (cairn.runtime.scrubbing).
"""

from __future__ import annotations

import collections
import datetime as dt
import math
from typing import TYPE_CHECKING, Any

import attrs
import trio

from cairn.clock import DomainClock
from cairn.domain.ids import AgentId
from cairn.errors import (
    RuntimeClosedError,
    StaleResultError,
    StoreError,
    VectorIndexError,
)
from cairn.maintenance.passes import MaintenancePass, PassResult, SeedOutcome, Work
from cairn.runtime.backoff import Backoff
from cairn.runtime.database import Database
from cairn.runtime.fence import AgentFence
from cairn.runtime.projection import Projection
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.runtime.writes import (
    AppendAudit,
    ApplyMaintenance,
    PruneRetention,
    SettleDirty,
    WriteQueue,
)
from cairn.store.dirty import load_seeds
from cairn.store.requests import Retention
from cairn.vectors.manager import VectorStoreManager

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from cairn.domain.identity import ExecutionIdentity

__all__ = ["AuditBuffer", "MaintenanceActor"]


@attrs.define(eq=False)
class AuditBuffer:
    """Audit rows from the recall hot path, written in batches instead of one per recall."""

    # Bounded: if maintenance falls behind, the oldest rows are dropped and counted rather
    # than letting the recall path grow memory without limit.
    rows: collections.deque[tuple[AgentId, dt.datetime, str, str]] = attrs.field(
        factory=lambda: collections.deque(maxlen=10_000)
    )
    dropped: int = 0

    def add(self, agent_id: AgentId, at: dt.datetime, action: str, detail: str) -> None:
        if len(self.rows) == self.rows.maxlen:
            self.dropped += 1
        self.rows.append((agent_id, at, action, detail))

    def take(self) -> list[tuple[AgentId, dt.datetime, str, str]]:
        rows = list(self.rows)
        self.rows.clear()
        return rows

    def restore(self, rows: list[tuple[AgentId, dt.datetime, str, str]]) -> None:
        """Rows whose write failed go back in front (the bound still holds)."""
        for row in reversed(rows):
            if len(self.rows) == self.rows.maxlen:
                self.dropped += 1
                continue
            self.rows.appendleft(row)


@attrs.define(eq=False)
class MaintenanceActor:
    agent_id: AgentId
    writes: WriteQueue
    limiters: Limiters
    vectors: VectorStoreManager
    projection: Projection
    audit: AuditBuffer
    interval_s: float
    retention: Retention
    database: Database
    fence: AgentFence
    clock: DomainClock
    dirty_passes: tuple[MaintenancePass[Any], ...] = ()
    seed_batch: int = 64
    """Dirty claims worked per pass: bounded so a pass never holds the writer long."""
    passes: int = 0
    settled: int = 0
    pruned: int = 0
    # Audit rows this actor appended since the audit cap was last enforced (None: not
    # yet in this run): the cap's boundary costs a walk of the newest rows, so it is
    # looked for once a batch's worth has arrived, or while the excess lasts.
    _audit_since_trim: int | None = None
    failed_steps: int = 0
    # One backoff per step: a failing save must not hold back the audit flush.
    _retry: dict[str, Backoff] = attrs.field(factory=dict)
    _retry_at: dict[str, float] = attrs.field(factory=dict)

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with self.writes:
            task_status.started()
            while True:
                await trio.sleep(self.interval_s)
                await self.run_pass()

    async def run_pass(self) -> None:
        """One bounded pass; also called once more by the supervisor when it stops.

        Each step fails alone: an I/O error (a full disk, no file descriptors left) is
        logged once, the step is retried with backoff at later passes, and the agent and
        the runtime go on serving (tests/runtime/test_faults.py).
        """
        await self._step("projection save", self._publish)
        await self._step("audit flush", self._flush_audit)
        await self._step("retention prune", self._prune)
        await self._step("dirty settle", self._settle)
        self.passes += 1

    async def _step(self, name: str, step: Callable[[], Awaitable[None]]) -> None:
        now = trio.current_time()
        if now < self._retry_at.get(name, -math.inf):
            return
        retry = self._retry.setdefault(
            name, Backoff(f"{name} of agent {self.agent_id}")
        )
        try:
            await step()
        except (OSError, StoreError, VectorIndexError) as error:
            self.failed_steps += 1
            self._retry_at[name] = now + retry.failed(error)
            if name == "projection save":
                self.projection.save_error = retry.last_error
            return
        except RuntimeClosedError:
            return  # the agent is stopping; its writer is gone
        except StaleResultError:
            return  # a clear, stop or switch moved the fence: this pass's work is void
        retry.succeeded()
        if name == "projection save":
            self.projection.save_error = None

    async def _publish(self) -> None:
        # The manager knows whether the index changed since its last save (a version
        # compare); asking costs nothing, the file is written only then. Only the
        # projection serving now: one that stopped serving was saved when it was released.
        agent_id, identity = self.agent_id, self.projection.identity
        if identity is not None and self.vectors.is_dirty(agent_id, identity):
            await run_in_thread(
                lambda: self.vectors.publish(agent_id, identity),
                limiter=self.limiters.index,
            )

    async def _flush_audit(self) -> None:
        rows = self.audit.take()
        if rows:
            try:
                await self.writes.commit(AppendAudit(tuple(rows)))
            except StoreError:
                self.audit.restore(rows)
                raise
            if self._audit_since_trim is not None:
                self._audit_since_trim += len(rows)

    async def _settle(self) -> None:
        """Work one batch of dirty claims through every pass, then settle it.

        The fence is captured once: a stop, clear or switch during the batch cancels it
        here and the coordinator refuses its commits anyway. A seed a pass answers
        ``RETRY`` for stays dirty.
        """
        agent_id = self.agent_id
        seeds = await self.database.read(
            lambda reader: load_seeds(reader.connection, agent_id, self.seed_batch)
        )
        # A pass that finds its own bounded work (``sweeps``: the learning pass reads new
        # recall records and reviews old beliefs) runs without seeds too.
        steps = [
            step
            for step in self.dirty_passes
            if seeds or getattr(step, "sweeps", False)
        ]
        if not steps:
            return
        identity = self.fence.current()
        retry: set[int] = set()
        with self.fence.pass_scope(identity):
            work = Work(agent_id, self.clock.now(), tuple(seeds))
            for step in steps:
                await trio.lowlevel.checkpoint()
                result = await self._run_step(step, work, identity)
                retry.update(
                    rowid
                    for rowid, outcome in result.outcomes.items()
                    if outcome is SeedOutcome.RETRY
                )
            settled = tuple(seed for seed in seeds if seed.claim_rowid not in retry)
            if settled:
                self.settled += await self.writes.commit(SettleDirty(settled))

    async def _run_step(
        self, step: MaintenancePass[Any], work: Work, identity: ExecutionIdentity
    ) -> PassResult:
        plan = await self.database.read(
            lambda reader: step.plan(reader.connection, work)
        )
        if plan is None:
            return PassResult()
        question = step.question(plan)
        if question is not None:
            plan = step.answered(plan, None)
            if plan is None:
                return PassResult()
        return await self.writes.commit(
            ApplyMaintenance(step=step, work=work, plan=plan, identity=identity)
        )

    async def _prune(self) -> None:
        since = self._audit_since_trim
        trim = since is None or since >= self.retention.batch
        pruned = await self.writes.commit(
            PruneRetention(self.retention, trim_audit=trim)
        )
        self.pruned += pruned.recall_results + pruned.audit_rows
        if trim:
            # A full batch deleted: more may be over the cap, so look again next pass.
            self._audit_since_trim = (
                None if pruned.audit_rows >= self.retention.batch else 0
            )
