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
from typing import TYPE_CHECKING

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
from cairn.runtime.actors.dirty_work import DirtyWorker
from cairn.runtime.backoff import Backoff
from cairn.runtime.database import Database
from cairn.runtime.fairness import Share, current_share
from cairn.runtime.fence import AgentFence
from cairn.runtime.projection import Projection
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.runtime.writes import AppendAudit, PruneRetention, WriteQueue
from cairn.store.requests import Retention
from cairn.vectors.manager import VectorStoreManager

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

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
    """The agent's maintenance: its own timer, cooldown and lifecycle.

    A timed pass runs every ``interval_s``; after one whose dirty batch came back full
    (more work waiting) the next runs after ``cooldown_s`` instead. :meth:`pause` (a
    drain) lets the pass in flight finish and starts none until :meth:`resume`; a pass
    that fell due meanwhile runs at once then, so the first pass of a start (which works
    dirty rows a crash left) is never lost. :meth:`halt` (a stop) cancels the dirty batch
    in flight at its next checkpoint, its provider call included, and starts no other;
    what the batch had not applied stays dirty for the next start.
    """

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
    dirty: DirtyWorker
    cooldown_s: float = 0.25
    passes: int = 0
    pruned: int = 0
    # Audit rows this actor appended since the audit cap was last enforced (None: not
    # yet in this run): the cap's boundary costs a walk of the newest rows, so it is
    # looked for once a batch's worth has arrived, or while the excess lasts.
    _audit_since_trim: int | None = None
    failed_steps: int = 0
    # One backoff per step: a failing save must not hold back the audit flush.
    _retry: dict[str, Backoff] = attrs.field(factory=dict)
    _retry_at: dict[str, float] = attrs.field(factory=dict)
    # Lifecycle: passes run one at a time (the timer's, an explicit one, the stop's last).
    _running: trio.Lock = attrs.field(factory=trio.Lock)
    _paused: bool = False
    _halted: bool = False
    _armed: trio.Event = attrs.field(factory=trio.Event)
    _batch: trio.CancelScope | None = None
    _backlog: bool = False

    def __attrs_post_init__(self) -> None:
        self._armed.set()

    @property
    def settled(self) -> int:
        return self.dirty.settled

    @property
    def paused(self) -> bool:
        return self._paused or self._halted

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        # Whose turn this actor's background work takes (cairn.runtime.fairness).
        current_share.set(Share(self.agent_id))
        async with self.writes:
            task_status.started()
            delay = self.interval_s
            while True:
                await trio.sleep(delay)
                # Due: while paused it waits here, and runs as soon as it is resumed.
                while self.paused:
                    await self._armed.wait()
                await self.run_pass()
                delay = self.cooldown_s if self._backlog else self.interval_s

    # -- lifecycle ---------------------------------------------------------------------
    def pause(self) -> None:
        """Start no pass until :meth:`resume` (the one in flight finishes)."""
        if not self._paused:
            self._paused = True
            self._armed = trio.Event()

    def resume(self) -> None:
        self._paused = False
        if not self._halted:
            self._armed.set()

    def halt(self, reason: str) -> None:
        """For good (the agent is stopping): no new dirty batch, the one in flight
        cancelled at its next checkpoint. Housekeeping passes still run."""
        self._halted = True
        self._armed = trio.Event()
        if self._batch is not None:
            self._batch.cancel(reason=reason)

    async def wait_settled(self) -> None:
        """Until no pass is in flight (a drain waits for this under its bound)."""
        async with self._running:
            await trio.lowlevel.checkpoint()

    async def run_pass(self) -> None:
        """One bounded pass; also called once more by the supervisor when it stops.

        Each step fails alone: an I/O error (a full disk, no file descriptors left) is
        logged once, the step is retried with backoff at later passes, and the agent and
        the runtime go on serving (tests/runtime/test_faults.py). While paused or halted
        the pass does its housekeeping only: no dirty batch starts.
        """
        async with self._running:
            await self._step("projection save", self._publish)
            await self._step("audit flush", self._flush_audit)
            await self._step("retention prune", self._prune)
            self._backlog = False
            if not self.paused:
                await self._step("dirty work", self._work_dirty)
            self.passes += 1

    async def work_now(self, max_batches: int, budget_s: float) -> tuple[int, int]:
        """Passes now, one after another, while dirty seeds are ready (at most
        ``max_batches`` batches, and none started once ``budget_s`` has passed): what a
        ``maintain`` call asks. Returns (batches worked, seeds settled). Paused or
        halted, it works nothing."""
        batches = 0
        settled = self.dirty.settled
        # The budget is checked between batches, never inside one: a batch cut short
        # would count an attempt against each of its seeds for no fault of theirs.
        deadline = trio.current_time() + budget_s
        # Dirty batches only: the housekeeping (publish, audit, prune) stays the timer's,
        # so a call of many batches saves the vector file once, not once a batch.
        async with self._running:
            while (
                batches < max_batches
                and not self.paused
                and (batches == 0 or trio.current_time() < deadline)
            ):
                before = self.dirty.batches
                await self._step("dirty work", self._work_dirty)
                if self.dirty.batches == before:
                    break  # no seed was ready: the queue is worked (or all wait to retry)
                # A worked batch may queue more (a merge's survivor, a superseded value).
                batches += 1
        return batches, self.dirty.settled - settled

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
            return  # planned under a fence that moved: nothing committed, seeds stay dirty
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

    async def _work_dirty(self) -> None:
        """One batch of dirty claims through every pass (cairn.runtime.actors.dirty_work).

        The fence is captured once: a stop, clear or switch during the batch cancels it
        here and the coordinator refuses its commits anyway; a cancelled batch settles
        nothing and counts no attempt.
        """
        identity = self.fence.current()
        found = 0
        with self.fence.pass_scope(identity) as scope:
            self._batch = scope
            try:
                found = await self.dirty.work_batch(identity)
            except StaleResultError:
                self.dirty.stale += 1  # fenced between its read and its apply
            finally:
                self._batch = None
        self._backlog = (
            not scope.cancelled_caught and found >= self.dirty.settings.seed_batch
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
