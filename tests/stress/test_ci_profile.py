"""The harness's ci profile, as an operator runs it: ``cairn stress --profile ci`` in a
real process finds no violation of any invariant, with real trials behind each mode.
Each mode is its own run (``--mode``), the same trials as the whole profile's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cairn.stress.harness import MODES

pytestmark = pytest.mark.subprocess

# A fixed seed: CI runs the same trials every time (a failure replays with it).
SEED = 20261202
# The whole profile takes one to three minutes of CPU on a 2-core machine, the slowest
# mode (faults) under a minute.
BOUND_S = 600


# The load mode runs in-process with its figures checked (tests/stress/test_load.py).
@pytest.mark.parametrize("mode", [mode for mode in MODES if mode != "load"])
def test_the_ci_profile_holds_every_invariant(tmp_path: Path, mode: str) -> None:
    finished = subprocess.run(
        [
            sys.executable,
            "-m",
            "cairn",
            "--data",
            str(tmp_path / "stress"),
            "stress",
            "--seed",
            str(SEED),
            "--profile",
            "ci",
            "--mode",
            mode,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        check=False,
    )
    assert finished.stdout, finished.stderr[-2000:]
    report = json.loads(finished.stdout)
    failures = [
        f"{v['invariant']} {v['mode']} seed {v['seed']}: {v['message']}\n"
        + "\n".join(v["history"][-40:])
        for ran in report["modes"]
        for v in ran["violations"]
    ]
    assert failures == []
    assert finished.returncode == 0
    assert report["ok"]
    (ran,) = report["modes"]
    assert ran["mode"] == mode
    assert ran["trials"] > 0
    # Nothing of a passing run is left behind in the scratch directory.
    assert list((tmp_path / "stress").rglob("*.db")) == []
