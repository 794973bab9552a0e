"""The schedules mode: a scheduler seed fixes how tasks that only yield to each other
interleave (and nothing else: thread timing stays real), an ordering bug shows under some
seeds and replays under the same one, and a failure names both seeds and its trial."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import trio
import trio._core._run as trio_run

from cairn.domain.outcomes import RememberOutcome, RememberResult
from cairn.runtime.database import Database
from cairn.runtime.memory import Memory
from cairn.stress.embedders import DIMENSION
from cairn.stress.harness import run_stress
from cairn.stress.history import History
from cairn.stress.markers import MARKER_PATTERN, MarkerSource
from cairn.stress.profiles import Profile
from cairn.stress.runner import RunResult, stress_memory
from cairn.stress.schedules import run_scheduled
from cairn.stress.scheduling import (
    SchedulerUnavailableError,
    YieldInjector,
    seeded_scheduler,
)
from cairn.stress.workload import Kind, Operation, Phase, Workload, generate
from cairn.testing import HashingEmbedder

SMALL = Profile(
    "test",
    agents=2,
    clients=3,
    operations=60,
    workload_runs=0,
    socket_runs=0,
    kill_trials=0,
    crash_point_seeds=0,
    crash_points=0,
    fault_indexes=1,
    fault_trials=0,
    load_seconds=0,
    load_warmup_seconds=0,
    load_clients=0,
    schedule_seeds=2,
    schedule_operations=60,
)


async def _task_order(
    seed: int, tasks: int = 4, steps: int = 6
) -> list[tuple[int, int]]:
    """The order in which tasks that only yield to each other take their steps."""
    seen: list[tuple[int, int]] = []
    injector = YieldInjector(seed)

    async def task(number: int) -> None:
        for step in range(steps):
            await injector.pause(number, step, 0)
            seen.append((number, step))
            await trio.lowlevel.checkpoint()

    with seeded_scheduler(seed):
        async with trio.open_nursery() as nursery:
            for number in range(tasks):
                nursery.start_soon(task, number)
    return seen


async def test_a_scheduler_seed_fixes_the_order_of_tasks_that_yield() -> None:
    first = await _task_order(7)
    assert await _task_order(7) == first
    orders = {tuple(await _task_order(seed)) for seed in range(6)}
    assert len(orders) > 1


async def test_seeding_the_scheduler_leaves_trio_as_it_was() -> None:
    state = trio_run._r.getstate()
    mode = trio_run._ALLOW_DETERMINISTIC_SCHEDULING
    with seeded_scheduler(3):
        await trio.lowlevel.checkpoint()
        assert trio_run._ALLOW_DETERMINISTIC_SCHEDULING is False
    assert trio_run._r.getstate() == state
    assert mode == trio_run._ALLOW_DETERMINISTIC_SCHEDULING


def test_a_trio_without_the_batch_randomiser_is_a_clear_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(trio_run, "_r")
    with pytest.raises(SchedulerUnavailableError, match="cannot seed it"):  # noqa: SIM117
        with seeded_scheduler(1):
            pass


def _first_calls(workload: Workload, history: History) -> list[list[int]]:
    """Per phase, the clients in the order their first calls were invoked."""
    invoked = {id(call.operation): call.invoked for call in history.calls}
    order = []
    for phase in workload.phases:
        firsts = [
            (invoked[id(lane[0])], client)
            for client, lane in enumerate(phase.clients)
            if lane
        ]
        order.append([client for _, client in sorted(firsts)])
    return order


async def test_the_same_scheduler_seed_starts_every_phase_in_the_same_order(
    tmp_path: Path,
) -> None:
    """What a seed decides on the real runtime: the order in which the clients of a phase
    make their first call (each only yields before it). Later calls follow calls that
    waited on SQLite threads, whose timing no seed fixes, so they are not compared."""
    workload = generate(
        5, agents=2, clients=6, operations=36, restarts=False, switches=False
    )

    async def order(scheduler_seed: int, name: str) -> list[list[int]]:
        async with stress_memory(
            tmp_path / name / "data", HashingEmbedder(DIMENSION)
        ) as memory:
            result = await run_scheduled(
                memory, workload, scheduler_seed, backups=tmp_path / name / "backups"
            )
        assert not result.failed, result.findings
        return _first_calls(workload, result.history)

    first = await order(11, "first")
    assert await order(11, "again") == first
    assert await order(12, "other") != first


def _racing_remembers(agent: str, clients: int) -> Workload:
    """One phase: every client's one call is a remember for the same agent."""
    markers = MarkerSource(random.Random(agent))
    lanes = tuple(
        (
            Operation(
                Kind.REMEMBER, agent, marker, text=f"The spare key is in {marker}."
            ),
        )
        for marker in (markers() for _ in range(clients))
    )
    return Workload(
        0, (agent,), (Phase(lanes, restart_after=False, switch_after=False),)
    )


@pytest.fixture
def racy_remember(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ordering bug: a remember that sees another of the same agent arrive while it
    checks in is acknowledged and dropped (a check-then-act across an await)."""
    arriving: list[str] = []
    original = Memory.remember

    async def remember(self: Memory, agent_id: str, text: str, **kwargs: Any) -> Any:
        arriving.append(agent_id)
        await trio.lowlevel.checkpoint()
        raced = arriving.count(agent_id) > 1
        arriving.remove(agent_id)
        if raced:
            return RememberResult(RememberOutcome.STORED, None)
        return await original(self, agent_id, text, **kwargs)

    monkeypatch.setattr(Memory, "remember", remember)


async def _run_race(directory: Path, memory: Memory, seed: int) -> RunResult:
    return await run_scheduled(
        memory,
        _racing_remembers(f"t{seed}-0", clients=3),
        seed,
        backups=directory / f"backups-{seed}",
    )


@pytest.mark.usefixtures("racy_remember")
async def test_an_ordering_bug_shows_under_some_scheduler_seeds_and_replays(
    tmp_path: Path,
) -> None:
    seeds = range(12)
    async with stress_memory(
        tmp_path / "sweep" / "data", HashingEmbedder(DIMENSION)
    ) as memory:
        swept = {
            seed: await _run_race(tmp_path / "sweep", memory, seed) for seed in seeds
        }
    failing = [seed for seed in seeds if swept[seed].failed]
    passing = [seed for seed in seeds if not swept[seed].failed]
    assert failing
    assert passing
    assert {invariant for invariant, _ in swept[failing[0]].findings} == {"I1"}
    # The same seeds again, each on a fresh directory: the same verdicts.
    async with stress_memory(
        tmp_path / "replay" / "data", HashingEmbedder(DIMENSION)
    ) as memory:
        again = await _run_race(tmp_path / "replay", memory, failing[0])
        still = await _run_race(tmp_path / "replay", memory, passing[0])
    assert again.findings == swept[failing[0]].findings
    assert not still.failed


async def test_a_clean_engine_passes_the_schedules_mode_with_counts_behind_it(
    tmp_path: Path,
) -> None:
    report = await run_stress(tmp_path, 3, SMALL, modes=("schedules",))
    assert report.ok, [v.as_json() for v in report.violations]
    (mode,) = report.modes
    assert mode.trials == SMALL.schedule_seeds
    assert mode.operations >= SMALL.schedule_operations
    assert mode.figures["acknowledged writes checked recallable"] > 0
    assert mode.figures["gone memories checked absent"] > 0


async def test_a_failure_names_both_seeds_and_its_trial_replays_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def lost_forget(self: Memory, agent_id: str, item_id: str) -> Any:
        return None  # acknowledged, and nothing done

    monkeypatch.setattr(Memory, "forget", lost_forget)
    report = await run_stress(tmp_path / "all", 3, SMALL, modes=("schedules",))
    resurrections = [v for v in report.violations if v.invariant == "I2"]
    assert resurrections
    found = resurrections[0]
    shown = found.as_json()
    assert shown["scheduler_seed"] == found.scheduler_seed is not None
    assert shown["trial"] == found.trial is not None
    assert any(" invoke forget " in line for line in found.history)
    replay = await run_stress(
        tmp_path / "one", 3, SMALL, modes=("schedules",), trial=found.trial
    )
    replayed = [v for v in replay.violations if v.invariant == "I2"]
    assert replayed
    assert {(v.seed, v.scheduler_seed, v.trial) for v in replayed} == {
        (found.seed, found.scheduler_seed, found.trial)
    }
    # The failing batch's directory is kept for inspection.
    assert list((tmp_path / "one" / "schedules").glob("batch-*/data"))


async def test_forgotten_text_left_on_disk_is_charged_to_the_trial_that_wrote_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file scan runs once for the batch; each finding still names its trial."""

    async def no_checkpoint(self: Database, *, quiesce: bool = False) -> bool:
        return True  # says the WAL was cut, leaves it as it is

    monkeypatch.setattr(Database, "truncate_wal", no_checkpoint)
    report = await run_stress(tmp_path, 3, SMALL, modes=("schedules",))
    on_disk = [v for v in report.violations if v.invariant == "I7"]
    assert on_disk, [v.as_json() for v in report.violations]
    for violation in on_disk:
        (marker,) = MARKER_PATTERN.findall(violation.message)
        assert any(f" t{violation.trial}-" in line for line in violation.history)
        assert any(marker in line for line in violation.history)
