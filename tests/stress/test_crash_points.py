"""Real processes killed with SIGKILL at every named crash point and at random moments;
after each, the reopened data directory keeps every promise (cairn.stress.crash)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from cairn import open_memory
from cairn.crashpoints import CRASH_POINTS
from cairn.stress import crash
from cairn.stress.crash_worker import WORKER_CONFIG, user_turn
from cairn.stress.report import ModeResult
from cairn.testing import HashingEmbedder

pytestmark = pytest.mark.subprocess


def test_every_declared_crash_point_has_a_scenario() -> None:
    assert set(crash.CRASH_SCENARIOS) == set(CRASH_POINTS)


@pytest.mark.parametrize("point", sorted(CRASH_POINTS))
async def test_a_kill_at_each_crash_point_keeps_every_invariant(
    tmp_path: Path, point: str
) -> None:
    result = ModeResult("crash-points")
    run, violations = await crash.crash_point_trial(tmp_path, point, 1, result)
    assert run.crashed_at(point), run.stderr[-2000:]
    assert [v.as_json() for v in violations] == []
    assert result.figures["kills"] == 1
    assert result.figures["doctor runs"] == 1


@pytest.mark.parametrize(
    "trial",
    [crash.workload_kill_trial, crash.serve_kill_trial, crash.ingest_kill_trial],
    ids=["workload", "serve", "ingest"],
)
async def test_a_kill_at_a_random_moment_loses_and_resurrects_nothing(
    tmp_path: Path, trial: crash.KillTrial
) -> None:
    result = ModeResult("kill-trials")
    violations = await trial(tmp_path, 7, result)
    assert [v.as_json() for v in violations] == []
    assert result.figures["kills"] == 1
    assert result.figures["acknowledged writes checked"] > 0
    assert result.figures["scan controls seen"] > 0
    assert result.figures["scan controls missed"] == 0


async def test_the_checks_see_a_lost_write_and_a_forget_that_did_not_happen(
    tmp_path: Path,
) -> None:
    # The checker against a history that lies: what was "forgotten" is still stored,
    # what was "acknowledged" never was. Every check must say so.
    data_dir = tmp_path / "data"
    stored = ["e1", "s0", "My locker code word is qbcdfghjkl."]
    async with open_memory(
        data_dir, WORKER_CONFIG, embedder=HashingEmbedder()
    ) as memory:
        await memory.ingest("a", [user_turn(*stored)])
        await memory.wait_idle("a")
    model = crash.model_of(
        [
            {
                "event": "ok",
                "op": "ingest",
                "agent": "a",
                "turns": [["qbcdfghjkl", *stored]],
            },
            {"event": "ok", "op": "forget", "agent": "a", "marker": "qbcdfghjkl"},
            {
                "event": "ok",
                "op": "ingest",
                "agent": "a",
                "turns": [["qzzzzzzzzz", "e2", "s0", "Never sent qzzzzzzzzz."]],
            },
        ]
    )
    with trio.fail_after(60):
        violations = await crash.verify(data_dir, model, ModeResult("check"), 0)
    found = {(v.invariant, v.message.split()[0]) for v in violations}
    assert ("I1", "acknowledged") in found
    assert ("I2", "forget") in found
    assert ("I7", "removed") in found


def test_a_replay_the_engine_stored_again_is_a_resurrection() -> None:
    turn = ["qbcdfghjkl", "e1", "s0", "My locker code word is qbcdfghjkl."]
    model = crash.model_of(
        [
            {"event": "ok", "op": "ingest", "agent": "a", "turns": [turn]},
            {"event": "ok", "op": "clear", "agent": "a"},
            {
                "event": "ok",
                "op": "replay",
                "agent": "a",
                "turns": [turn],
                "outcome": "ingested",
            },
        ]
    )
    assert model.violations == [
        ("I2", "a replay of clear qbcdfghjkl of a was ingested")
    ]
    assert ("a", "qbcdfghjkl") in model.gone


def test_what_a_kill_cut_off_is_checked_neither_way() -> None:
    kept = ["qbcdfghjkl", "e1", "s0", "My locker code word is qbcdfghjkl."]
    cut = ["qzzzzzzzzz", "e2", "s0", "My locker code word is qzzzzzzzzz."]
    model = crash.model_of(
        [
            {"event": "ok", "op": "ingest", "agent": "a", "turns": [kept]},
            {"event": "ok", "op": "forget", "agent": "a", "marker": "qbcdfghjkl"},
            {"event": "ok", "op": "ingest", "agent": "a", "turns": [cut]},
            {"event": "invoke", "op": "retire", "agent": "a"},
        ]
    )
    # The retire may have run: the cut-off write is unknown, and the forgotten turn
    # stays gone but may be stored again by a replay (its tombstone went with it).
    assert model.live == {}
    assert model.uncertain == {("a", "qzzzzzzzzz")}
    assert model.gone[("a", "qbcdfghjkl")][1] == "retire"
