"""One batch of dirty work: seeds, their neighbours, every pass, then settle or rotate.

The maintenance actor calls :meth:`DirtyWorker.work_batch` inside the agent's fence (a
stop, clear or switch cancels it; the coordinator refuses a stale apply anyway) and under
the batch's deadline. Per pass (cairn.maintenance.passes): plan on a reader snapshot, at
most one question to the configured text provider (under its own timeout, the batch's
deadline and a circuit breaker; cancelled, not awaited, by a stop), then apply through the
write coordinator. Reads hold the runtime-wide maintenance limiter, so many agents'
maintenance never takes every reader from recall and ingest.

A pass that raises for a batch of several seeds is run again seed by seed, so only the
seeds it fails on retry: a failing seed never holds back the others
(tests/maintenance/test_dirty_queue.py). Errors of the store or the disk are not a
seed's fault: they end the batch and the actor's step backs off (nothing is counted).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import msgspec
import trio

from cairn.clock import DomainClock
from cairn.domain.ids import AgentId
from cairn.errors import (
    ClearPendingError,
    ProviderError,
    RuntimeClosedError,
    StaleResultError,
    StorageCorruptError,
    StorageFullError,
    StorageIOError,
    VectorIndexError,
)
from cairn.maintenance.neighbours import (
    NeighbourLimits,
    probe_seeds,
    resolve_neighbours,
    search_probes,
)
from cairn.maintenance.passes import MaintenancePass, PassResult, SeedOutcome, Work
from cairn.maintenance.schedule import merge_outcomes, verdict
from cairn.providers.http.breaker import AbandonReason, CircuitBreaker, FailureKind
from cairn.providers.http.text import TextProvider
from cairn.runtime.database import Database
from cairn.runtime.fairness import Priority, Share
from cairn.runtime.projection import Projection
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.runtime.writes import ApplyMaintenance, RotateDirty, SettleDirty, WriteQueue
from cairn.store.dirty import DirtySeed, load_seeds

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Mapping

    from cairn.config import MemoryConfig
    from cairn.domain.identity import ExecutionIdentity
    from cairn.maintenance.passes import ProviderQuestion
    from cairn.runtime.database import Reader

__all__ = ["DirtySettings", "DirtyWorker"]

logger = logging.getLogger("cairn.runtime")

# Not a seed's fault: the batch ends, and the actor's step handles it (backoff, or the
# agent stopping).
_BATCH_ERRORS: tuple[type[BaseException], ...] = (
    StaleResultError,
    RuntimeClosedError,
    ClearPendingError,
    StorageFullError,
    StorageIOError,
    StorageCorruptError,
    VectorIndexError,
    OSError,
)
# The error class name recorded for seeds a batch's deadline cut short.
DEADLINE = "MaintenanceDeadline"


@attrs.frozen
class DirtySettings:
    """The dirty-work knobs of ``MemoryConfig`` (``maintenance_*``)."""

    seed_batch: int = 64
    neighbours: NeighbourLimits = attrs.field(
        factory=lambda: NeighbourLimits(8, 8, 256)
    )
    pass_timeout_s: float = 60.0
    question_timeout_s: float = 30.0
    max_tokens: int = 1024
    max_attempts: int = 5
    retry_backoff_s: float = 30.0
    retry_backoff_cap_s: float = 3600.0

    @classmethod
    def of(cls, config: MemoryConfig) -> DirtySettings:
        return cls(
            seed_batch=config.maintenance_seed_batch,
            neighbours=NeighbourLimits(
                config.maintenance_vector_neighbours,
                config.maintenance_lexical_neighbours,
                config.maintenance_neighbour_budget,
            ),
            pass_timeout_s=config.maintenance_pass_timeout_s,
            question_timeout_s=config.maintenance_question_timeout_s,
            max_tokens=config.maintenance_max_tokens,
            max_attempts=config.maintenance_max_attempts,
            retry_backoff_s=config.maintenance_retry_backoff_s,
            retry_backoff_cap_s=config.maintenance_retry_backoff_cap_s,
        )


def _no_text_provider() -> TextProvider | None:
    return None


@attrs.define(eq=False)
class DirtyWorker:
    agent_id: AgentId
    writes: WriteQueue
    limiters: Limiters
    database: Database
    projection: Projection
    clock: DomainClock
    passes: tuple[MaintenancePass[Any], ...] = ()
    settings: DirtySettings = attrs.field(factory=DirtySettings)
    text_provider: Callable[[], TextProvider | None] = _no_text_provider
    breaker: CircuitBreaker = attrs.field(factory=CircuitBreaker)
    # Counters for status.
    batches: int = 0
    settled: int = 0
    retried: int = 0
    terminal: int = 0
    stale: int = 0
    questions: int = 0
    question_failures: int = 0
    # (pass, error class) pairs already logged: a failing pass warns once, not per seed.
    _logged: set[tuple[str, str]] = attrs.field(factory=set)

    async def work_batch(self, identity: ExecutionIdentity) -> int:
        """Work one batch from the front of the queue; returns how many seeds it held."""
        agent_id, settings = self.agent_id, self.settings
        now = self.clock.now()
        seeds = await self._read(
            lambda reader: load_seeds(
                reader.connection, agent_id, settings.seed_batch, now=now
            )
        )
        if not seeds:
            await self._sweep(identity, now)
            return 0
        self.batches += 1
        outcomes: dict[int, SeedOutcome] = {}
        errors: dict[int, str] = {}
        if self.passes:
            with trio.move_on_after(settings.pass_timeout_s) as deadline:
                neighbours = await self._neighbours(seeds)
                work = Work(agent_id, now, tuple(seeds), neighbours)
                for step in self.passes:
                    await trio.lowlevel.checkpoint()
                    result = await self._run_step(step, work, identity, errors)
                    merge_outcomes(outcomes, result.outcomes)
            if deadline.cancelled_caught:
                # The batch was cut short: every pass owes every seed another look.
                for seed in seeds:
                    if outcomes.get(seed.claim_rowid) is not SeedOutcome.TERMINAL:
                        outcomes[seed.claim_rowid] = SeedOutcome.RETRY
                        errors.setdefault(seed.claim_rowid, DEADLINE)
                logger.warning(
                    "maintenance batch of agent %s missed its %s s deadline; its %d"
                    " seeds retry later",
                    agent_id,
                    settings.pass_timeout_s,
                    len(seeds),
                )
        await self._settle(seeds, outcomes, errors, now)
        return len(seeds)

    async def _sweep(self, identity: ExecutionIdentity, now: dt.datetime) -> None:
        """With no seeds, the passes that find bounded work of their own (``sweeps``:
        the learning pass reads new recall records and reviews old beliefs) still run."""
        sweeping = [step for step in self.passes if getattr(step, "sweeps", False)]
        if not sweeping:
            return
        with trio.move_on_after(self.settings.pass_timeout_s):
            work = Work(self.agent_id, now, ())
            for step in sweeping:
                await trio.lowlevel.checkpoint()
                try:
                    await self._attempt(step, work, identity)
                except _BATCH_ERRORS:
                    raise
                except Exception as error:  # noqa: BLE001 - it sweeps again next pass
                    # The class only: a message can quote stored text.
                    logger.warning(
                        "maintenance sweep %s of agent %s failed (%s); it runs again"
                        " at the next pass",
                        step.name,
                        self.agent_id,
                        type(error).__name__,
                    )

    # -- reads, under the runtime-wide maintenance share ------------------------------
    async def _read(self, function: Callable[[Reader], Any]) -> Any:
        async with self.limiters.maintenance.slot(Share(self.agent_id, Priority.BULK)):
            return await self.database.read(function)

    async def _neighbours(
        self, seeds: list[DirtySeed]
    ) -> Mapping[int, tuple[int, ...]]:
        agent_id, limits = self.agent_id, self.settings.neighbours
        index, identity = self.projection.index, self.projection.identity
        key = (
            None
            if index is None
            or identity is None
            or index.dimension != identity.dimension
            else (identity.key(), identity.dimension)
        )
        probes = await self._read(
            lambda reader: probe_seeds(
                reader.connection,
                agent_id,
                seeds,
                reader.lexical,
                lexical_limit=limits.lexical,
                identity=key,
            )
        )
        vector_keys: dict[int, tuple[int, ...]] = {}
        if index is not None and key is not None:
            try:
                async with self.limiters.maintenance.slot(Share(agent_id)):
                    vector_keys = await run_in_thread(
                        lambda: search_probes(index.search, probes, limits.vector),
                        limiter=self.limiters.vector_search,
                    )
            except Exception as error:  # noqa: BLE001 - lexical neighbours still serve
                # The projection changed under the search (a switch): no vector ones.
                logger.debug("neighbour search of agent %s failed: %r", agent_id, error)
        return dict(
            await self._read(
                lambda reader: resolve_neighbours(
                    reader.connection, agent_id, probes, vector_keys, limits
                )
            )
        )

    # -- one pass ----------------------------------------------------------------------
    async def _run_step(
        self,
        step: MaintenancePass[Any],
        work: Work,
        identity: ExecutionIdentity,
        errors: dict[int, str],
    ) -> PassResult:
        try:
            return await self._attempt(step, work, identity)
        except _BATCH_ERRORS:
            raise
        except Exception as error:  # noqa: BLE001 - a pass's failure is its seeds'
            if len(work.seeds) == 1:
                self._failed(step, work.seeds[0], error, errors)
                return PassResult({work.seeds[0].claim_rowid: SeedOutcome.RETRY})
        # Which seed made it fail? Each alone, so the others go on.
        outcomes: dict[int, SeedOutcome] = {}
        for seed in work.seeds:
            rowid = seed.claim_rowid
            alone = Work(
                work.agent_id,
                work.now,
                (seed,),
                {rowid: work.neighbours[rowid]} if rowid in work.neighbours else {},
            )
            try:
                result = await self._attempt(step, alone, identity)
            except _BATCH_ERRORS:
                raise
            except Exception as error:  # noqa: BLE001 - this seed's failure alone
                self._failed(step, seed, error, errors)
                outcomes[rowid] = SeedOutcome.RETRY
                continue
            merge_outcomes(outcomes, result.outcomes)
        return PassResult(outcomes)

    def _failed(
        self,
        step: MaintenancePass[Any],
        seed: DirtySeed,
        error: Exception,
        errors: dict[int, str],
    ) -> None:
        kind = type(error).__name__
        errors.setdefault(seed.claim_rowid, kind)
        if (step.name, kind) not in self._logged:
            self._logged.add((step.name, kind))
            # The class only: a message can quote stored text.
            logger.warning(
                "maintenance pass %s failed on a claim of agent %s (%s); the seed"
                " retries behind other work",
                step.name,
                self.agent_id,
                kind,
            )

    async def _attempt(
        self, step: MaintenancePass[Any], work: Work, identity: ExecutionIdentity
    ) -> PassResult:
        plan = await self._read(lambda reader: step.plan(reader.connection, work))
        if plan is None:
            return PassResult()
        question = step.question(plan)
        if question is not None:
            plan = step.answered(plan, await self._ask(question))
            if plan is None:
                return PassResult()
        await trio.lowlevel.checkpoint()
        result: PassResult = await self.writes.commit(
            ApplyMaintenance(step=step, work=work, plan=plan, identity=identity)
        )
        if result.removed:
            # Claims the pass deleted (a merge's absorbed claim): their live vectors go.
            await self.projection.remove(result.removed)
        return result

    async def _ask(self, question: ProviderQuestion) -> Mapping[str, Any] | None:
        """The provider's answer, or ``None`` (none configured, breaker open, failed or
        too slow: the pass decides without it). Cancellation goes through: a stop
        aborts the call instead of waiting for it."""
        provider = self.text_provider()
        if provider is None or not self.breaker.allow():
            return None
        self.questions += 1
        try:
            with trio.fail_after(self.settings.question_timeout_s):
                answer = await provider.complete_json(
                    question.system,
                    question.user,
                    question.answer_struct(),
                    max_tokens=question.max_tokens or self.settings.max_tokens,
                )
        except trio.TooSlowError:
            self.breaker.record_failure(FailureKind.DEADLINE)
            self.question_failures += 1
            return None
        except ProviderError as error:
            self.breaker.record_failure(FailureKind.TRANSPORT)
            self.question_failures += 1
            logger.debug("maintenance question failed: %s", type(error).__name__)
            return None
        except BaseException:
            # Cancelled (a stop, the batch's deadline) or the pass's own bug: says
            # nothing about the provider.
            self.breaker.record_abandoned(AbandonReason.CANCELLED)
            raise
        self.breaker.record_success()
        decoded: Mapping[str, Any] = msgspec.to_builtins(answer)
        return decoded

    # -- settling ----------------------------------------------------------------------
    async def _settle(
        self,
        seeds: list[DirtySeed],
        outcomes: Mapping[int, SeedOutcome],
        errors: Mapping[int, str],
        now: dt.datetime,
    ) -> None:
        settings = self.settings
        split = verdict(
            seeds,
            outcomes,
            errors,
            now,
            base_s=settings.retry_backoff_s,
            cap_s=settings.retry_backoff_cap_s,
        )
        for seed in split.terminal:
            logger.warning(
                "maintenance settled claim row %d of agent %s as terminal: a pass"
                " cannot work it",
                seed.claim_rowid,
                self.agent_id,
            )
        self.terminal += len(split.terminal)
        if split.settle:
            self.settled += await self.writes.commit(SettleDirty(split.settle))
        if split.retry:
            rotated, gave_up = await self.writes.commit(
                RotateDirty(split.retry, settings.max_attempts)
            )
            self.retried += rotated
            self.terminal += len(gave_up)
            for seed in gave_up:
                logger.warning(
                    "maintenance gave up on claim row %d of agent %s after %d"
                    " attempts (%s)",
                    seed.claim_rowid,
                    self.agent_id,
                    seed.attempts + 1,
                    errors.get(seed.claim_rowid, "retry"),
                )
