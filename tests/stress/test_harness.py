"""The harness finds what it is for: a clean engine passes every check with real counts
behind them, and an engine that loses a forget, or leaves forgotten text on disk, is
caught, named by invariant and seed, with a shrunk history that still shows it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.conftest import open_test_memory

from cairn.runtime.database import Database
from cairn.runtime.memory import Memory
from cairn.stress.checks import check_directory
from cairn.stress.execute import Executor
from cairn.stress.harness import run_stress
from cairn.stress.history import History
from cairn.stress.model import Expectations
from cairn.stress.profiles import PROFILES, Profile
from cairn.stress.workload import Kind, generate

SMALL = Profile(
    "test",
    agents=2,
    clients=3,
    operations=60,
    workload_runs=1,
    socket_runs=1,
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


def test_the_same_seed_gives_the_same_workload() -> None:
    first, again = (
        generate(5, agents=3, clients=4, operations=90),
        generate(5, agents=3, clients=4, operations=90),
    )
    assert first == again
    assert first != generate(6, agents=3, clients=4, operations=90)


async def test_a_clean_engine_passes_with_counts_behind_it(tmp_path: Path) -> None:
    report = await run_stress(tmp_path, 11, SMALL, modes=("workload",))
    assert report.ok, [v.as_json() for v in report.violations]
    (mode,) = report.modes
    assert mode.trials == 1
    assert mode.figures["acknowledged writes checked recallable"] > 0
    assert mode.figures["gone memories checked absent"] > 0


async def test_a_lost_forget_is_a_resurrection_with_a_shrunk_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def lost_forget(self: Memory, agent_id: str, item_id: str) -> Any:
        return None  # acknowledged, and nothing done

    monkeypatch.setattr(Memory, "forget", lost_forget)
    # A seed whose workload forgets several memories once each: a forget of the same
    # memory twice, both acknowledged, is a history no order explains (undecided).
    seed = 12
    report = await run_stress(
        tmp_path, seed, SMALL, modes=("workload",), shrink_attempts=8
    )
    assert not report.ok
    resurrections = [v for v in report.violations if v.invariant == "I2"]
    assert resurrections
    shortest = resurrections[0]
    assert any(" invoke forget " in line for line in shortest.history)
    assert len(shortest.history) < 2 * SMALL.operations
    # The trial's directory is kept for inspection, passing ones are not.
    assert (tmp_path / "workload" / "workload-0" / "attempt-1").is_dir()


async def test_forgotten_text_left_on_disk_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def no_checkpoint(self: Database, *, quiesce: bool = False) -> bool:
        return True  # says the WAL was cut, leaves it as it is

    monkeypatch.setattr(Database, "truncate_wal", no_checkpoint)
    report = await run_stress(
        tmp_path, 11, SMALL, modes=("workload",), shrink_attempts=0
    )
    on_disk = [v for v in report.violations if v.invariant == "I7"]
    assert on_disk, [v.as_json() for v in report.violations]
    assert "forgotten text" in on_disk[0].message


def test_a_workload_exercises_every_kind_of_operation() -> None:
    workload = generate(3, agents=4, clients=6, operations=400)
    kinds = {operation.kind for operation in workload.operations()}
    assert kinds == set(Kind)


async def test_maintenance_merges_and_supersedes_under_the_quick_profile(
    tmp_path: Path,
) -> None:
    """Restatements and changes give maintenance real work under load: the quick
    profile's workload trials end with merged claims, superseded values and remembered
    values keyed by the challenge pass in their memories, replaced values checked to be
    recalled as history, and every invariant held."""
    report = await run_stress(tmp_path, 1, PROFILES["quick"], modes=("workload",))
    assert report.ok, [v.as_json() for v in report.violations]
    (mode,) = report.modes
    assert mode.figures["maintenance merges"] > 0
    assert mode.figures["supersessions"] > 0
    assert mode.figures["remembered values keyed by the challenge pass"] > 0
    assert mode.figures["replaced values checked recalled as history"] > 0


async def test_an_agent_never_stored_is_checked_without_an_export(
    data_dir: Path,
) -> None:
    """An agent of the workload that was never stored (every write of it refused or cut
    off, or it was retired) has nothing to export: the directory check goes on, and it
    charges I1 only for what had to be recallable there."""
    owners = {"qzghostmark": "ghost"}
    executor = Executor(History(), owners, call_budget_s=30.0)
    async with open_test_memory(data_dir) as memory:
        quiet = Expectations(owners, {}, {}, set(), {}, 0)
        assert not [
            f for f in await check_directory(memory, quiet, executor) if "ghost" in f[1]
        ]
        owed = Expectations(owners, {"ghost": {"qzghostmark"}}, {}, set(), {}, 0)
        assert (
            "I1",
            "ghost: qzghostmark must be recallable, but the agent is gone",
        ) in (await check_directory(memory, owed, executor))
