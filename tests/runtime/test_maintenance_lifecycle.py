"""Maintenance's lifecycle on the real runtime: a stop cancels the batch in flight and
aborts its provider call (nothing of it commits; its seeds stay dirty and are worked
after the restart), a drain pauses maintenance and fails within its bound rather than
ending beside a running pass, a resume runs the pass that fell due meanwhile, and a
provider too slow for its timeout leaves the pass to decide alone."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.maintenance.fake_passes import (
    AskingPass,
    BlockingTextProvider,
    RecordingPass,
)

from cairn import Memory, MemoryConfig
from cairn.domain.ids import AgentId
from cairn.errors import DrainTimeoutError
from cairn.maintenance.passes import MaintenancePass
from cairn.runtime.core import runtime_core
from cairn.runtime.supervisor import AgentSupervisor
from cairn.store.dirty import load_seeds
from cairn.testing import FixedDomainClock

A = AgentId("a")
# Provider questions and batches would take (virtual) ages to time out on their own.
SLOW = attrs.evolve(
    TEST_CONFIG,
    maintenance_question_timeout_s=100_000.0,
    maintenance_pass_timeout_s=200_000.0,
)


async def _with_passes(
    memory: Memory, *passes: MaintenancePass[object]
) -> AgentSupervisor:
    registry = runtime_core(memory).registry
    registry.services = attrs.evolve(
        registry.services, maintenance_passes=lambda: passes
    )
    return await registry.get("a")


@attrs.frozen
class _Asking:
    memory: Memory
    supervisor: AgentSupervisor
    provider: BlockingTextProvider
    step: AskingPass


@contextlib.asynccontextmanager
async def _asking_about_bees(
    data: Path, config: MemoryConfig
) -> AsyncIterator[_Asking]:
    """One statement to maintain, and a pass that asks a provider about it: the provider
    answers only once the test sets its ``release``."""
    provider, step = BlockingTextProvider(), AskingPass()
    async with open_test_memory(data, config, text_provider=provider) as memory:
        supervisor = await _with_passes(memory, step)
        await memory.remember("a", "The user keeps bees.", by="user")
        yield _Asking(memory, supervisor, provider, step)


async def _maintained(memory: Memory) -> int:
    (count,) = await runtime_core(memory).database.read(
        lambda reader: reader.connection.execute(
            "SELECT count(*) FROM audit WHERE action = 'maintained'"
        ).fetchone()
    )
    return int(count)


async def _dirty(memory: Memory) -> list[tuple[int, int]]:
    """(generation, attempts) of each dirty seed."""
    return [
        (seed.generation, seed.attempts)
        for seed in await runtime_core(memory).database.read(
            lambda reader: load_seeds(reader.connection, A, 100)
        )
    ]


async def test_stop_during_a_pass_commits_nothing_and_aborts_its_provider_call(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    data, clock = tmp_path / "data", FixedDomainClock()
    provider = BlockingTextProvider()
    step = AskingPass()
    async with open_test_memory(
        data, SLOW, clock=clock, text_provider=provider
    ) as memory:
        supervisor = await _with_passes(memory, step)
        await memory.remember("a", "The user keeps bees.", by="user")
        await memory.remember("a", "The user plays the cello.", by="user")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supervisor.run_maintenance_pass)
            await provider.called.wait()
            asked_at = trio.current_time()
            await memory.aclose()  # the stop: halts maintenance, then the fence
        # The call was cancelled by the stop, not by its timeout, and never answered.
        assert trio.current_time() - asked_at < SLOW.maintenance_question_timeout_s
        assert provider.cancelled == 1
        assert step.answers == []
        assert supervisor.fence.epoch > 0

    # Restarted: nothing of the cancelled pass committed, its seeds are still dirty with
    # no attempt counted, and the first timed pass works them.
    answering = BlockingTextProvider()
    answering.release.set()
    config = attrs.evolve(SLOW, maintenance_interval_s=5.0)
    async with open_test_memory(
        data, config, clock=clock, text_provider=answering
    ) as memory:
        again = AskingPass()
        await _with_passes(memory, again)
        assert await _maintained(memory) == 0
        assert await _dirty(memory) == [(1, 0), (1, 0)]
        maintained: list[int] = []

        async def check() -> None:
            maintained.append(await _maintained(memory))

        with trio.fail_after(config.maintenance_interval_s * 2):
            while not maintained or maintained[-1] < 2:
                await trio.sleep(0.5)
                await check()
        assert again.answers == [{"same": True}]
        assert await _dirty(memory) == []


async def test_a_drain_fails_within_its_bound_beside_a_running_pass(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    async with _asking_about_bees(tmp_path / "data", SLOW) as asking:
        memory, supervisor, provider = asking.memory, asking.supervisor, asking.provider
        await memory.wait_idle("a")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supervisor.run_maintenance_pass)
            await provider.called.wait()
            started = trio.current_time()
            with pytest.raises(DrainTimeoutError):
                await memory.drain(timeout_s=5.0)
            assert trio.current_time() - started == pytest.approx(5.0, abs=0.5)
            assert provider.cancelled == 0  # a drain waits; it does not cancel
            provider.release.set()
        # The pass finished whole; now the drain settles.
        await memory.drain(timeout_s=5.0)
        assert asking.step.answers == [{"same": True}]
        assert await _maintained(memory) == 1
        assert await _dirty(memory) == []


async def test_a_drain_pauses_maintenance_and_resume_runs_the_pass_that_fell_due(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    config = attrs.evolve(
        TEST_CONFIG, maintenance_interval_s=60.0, agent_idle_timeout_s=100_000.0
    )
    async with open_test_memory(tmp_path / "data", config) as memory:
        step = RecordingPass()
        supervisor = await _with_passes(memory, step)
        await memory.remember("a", "The user keeps bees.", by="user")
        await memory.drain(timeout_s=10.0)
        passes = supervisor.statistics().maintenance_passes
        await trio.sleep(10 * config.maintenance_interval_s)
        # Drained: ten intervals went by and no pass started.
        assert supervisor.statistics().maintenance_passes == passes
        assert step.seen == []
        assert len(await _dirty(memory)) == 1

        resumed = trio.current_time()
        await memory.resume()
        # Due while drained, so it runs now, not at the next interval.
        with trio.fail_after(config.maintenance_interval_s / 2):
            await step.wait_applied(1)
        assert trio.current_time() - resumed < config.maintenance_interval_s
        await supervisor.run_maintenance_pass()  # after the timed one, in turn
        assert supervisor.statistics().maintenance_seeds_settled == 1


async def test_a_full_batch_is_followed_after_the_cooldown_not_the_interval(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    config = attrs.evolve(
        TEST_CONFIG,
        maintenance_interval_s=600.0,
        maintenance_cooldown_s=1.0,
        maintenance_seed_batch=2,
        agent_idle_timeout_s=100_000.0,
    )
    async with open_test_memory(tmp_path / "data", config) as memory:
        step = RecordingPass()
        supervisor = await _with_passes(memory, step)
        for text in ("bees", "figs", "cellos", "kites", "oboes"):
            await memory.remember("a", f"The user likes {text}.", by="user")
        started = trio.current_time()
        # The first timed pass finds a full batch; the next two follow after the
        # cooldown, well before a second interval.
        with trio.fail_after(config.maintenance_interval_s * 1.5):
            await step.wait_applied(5)
        assert trio.current_time() - started < config.maintenance_interval_s + 10
        assert supervisor.statistics().maintenance_batches == 3


async def test_a_provider_too_slow_for_its_timeout_leaves_the_pass_to_decide_alone(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    config = MemoryConfig(
        recall_wait_s=60.0,
        maintenance_interval_s=3600,
        maintenance_question_timeout_s=5.0,
    )
    async with _asking_about_bees(tmp_path / "data", config) as asking:
        memory, provider, step = asking.memory, asking.provider, asking.step
        started = trio.current_time()
        await asking.supervisor.run_maintenance_pass()
        assert trio.current_time() - started == pytest.approx(5.0, abs=1.0)
        assert provider.cancelled == 1  # by its own timeout
        assert step.answers == [None]
        assert await _maintained(memory) == 1
        assert await _dirty(memory) == []


async def test_a_batch_past_its_deadline_retries_its_seeds_later(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    config = attrs.evolve(SLOW, maintenance_pass_timeout_s=10.0)
    async with _asking_about_bees(tmp_path / "data", config) as asking:
        memory, provider, step = asking.memory, asking.provider, asking.step
        started = trio.current_time()
        await asking.supervisor.run_maintenance_pass()
        assert trio.current_time() - started == pytest.approx(10.0, abs=1.0)
        assert provider.cancelled == 1  # by the batch's deadline
        assert step.answers == []
        assert await _maintained(memory) == 0
        # Still owed, behind other work, with the attempt counted.
        (error,) = await runtime_core(memory).database.read(
            lambda reader: reader.connection.execute(
                "SELECT attempts, last_error FROM dirty_work"
            ).fetchall()
        )
        assert tuple(error) == (1, "MaintenanceDeadline")
        assert asking.supervisor.statistics().maintenance_seeds_retried == 1
        assert (await memory.status()).agent("a").dirty_seeds == 1


async def test_a_maintain_call_starts_no_batch_past_its_budget_and_the_next_goes_on(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    # Each batch waits out its provider question (5 s); the call's budget is 12 s.
    config = attrs.evolve(
        SLOW,
        maintenance_interval_s=100_000.0,
        maintenance_seed_batch=1,
        maintenance_question_timeout_s=5.0,
        maintain_budget_s=12.0,
        agent_idle_timeout_s=1_000_000.0,
    )
    async with _asking_about_bees(tmp_path / "data", config) as asking:
        memory, step = asking.memory, asking.step
        for text in ("figs", "cellos", "kites", "oboes"):
            await memory.remember("a", f"The user likes {text}.", by="user")
        started = trio.current_time()
        first = await memory.maintain("a")
        # Batches start at 0, 5 and 10 s; at 15 s the budget is spent.
        assert trio.current_time() - started == pytest.approx(15.0, abs=1.0)
        assert (first.batches, first.settled, first.remaining) == (3, 3, 2)
        # The batch the budget stopped short of was not charged an attempt.
        assert [attempts for _, attempts in await _dirty(memory)] == [0, 0]
        second = await memory.maintain("a")
        assert (second.batches, second.settled, second.remaining) == (2, 2, 0)
        assert len(step.answers) == 5
        assert await _maintained(memory) == 5
