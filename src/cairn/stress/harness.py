"""``cairn stress``: every mode of a profile, each trial with a seed derived from the run's
seed, so ``--seed N --profile P`` replays the same trials (``--mode`` and ``--trial``
narrow it to one). A failing workload trial is shrunk to the shortest history that still
shows it; its data directory is kept, passing ones are removed. A schedules trial is not
shrunk (fewer operations would be another interleaving): its violation names both of
its seeds and its trial."""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from cairn.stress.crash import run_crash_points, run_kill_trials
from cairn.stress.faults import run_faults
from cairn.stress.history import History
from cairn.stress.load import run_load
from cairn.stress.markers import MARKER_PATTERN
from cairn.stress.model import calls_touching
from cairn.stress.report import ModeResult, StressReport, Violation, describe_error
from cairn.stress.runner import RunResult, run_in_process, run_over_socket
from cairn.stress.schedules import ScheduleTrial, run_schedules
from cairn.stress.shrink import shrink
from cairn.stress.workload import generate

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator, Sequence

    from cairn.stress.profiles import Profile
    from cairn.stress.workload import Workload

__all__ = ["MODES", "run_stress", "trial_seed"]

MODES = (
    "workload",
    "socket",
    "schedules",
    "crash-points",
    "kill-trials",
    "faults",
    "load",
)
SHRINK_ATTEMPTS = 24
SHRINK_BUDGET_S = 120.0


def trial_seed(seed: int, mode: str, trial: int) -> int:
    """The seed of one trial: stable across runs, machines and Python versions."""
    digest = hashlib.blake2b(f"{seed}:{mode}:{trial}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def _workload(seed: int, profile: Profile, *, socket: bool) -> Workload:
    return generate(
        seed,
        agents=profile.agents,
        clients=profile.clients,
        operations=profile.operations,
        switches=not socket,
        # Over the socket a drain would stop the shared server for every client; the
        # socket mode's restarts are real SIGTERM drains instead.
        drains=not socket,
        in_process=not socket,
    )


@contextlib.contextmanager
def _short_directory() -> Iterator[Path]:
    """A directory for a socket: a Unix socket's path must stay short (108 bytes on
    Linux), and the trial's own directory may be deep."""
    path = Path(tempfile.mkdtemp(prefix="cairn-stress-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _evidence(result: RunResult, message: str) -> tuple[str, ...]:
    """The history behind a finding: the calls that touched the marker it names (with
    its agent's clears and retires), else the whole (shrunk) history."""
    owners = {op.marker: op.agent for op in result.workload.operations() if op.marker}
    named = [marker for marker in MARKER_PATTERN.findall(message) if marker in owners]
    if not named:
        return result.history.lines()
    calls = calls_touching(result.history, named[0], owners[named[0]])
    return result.history.lines(calls)


def _count(mode: ModeResult, result: RunResult) -> None:
    mode.trials += 1
    mode.operations += len(result.history.calls)
    mode.count("acknowledged writes checked recallable", result.checked_live)
    mode.count("gone memories checked absent", result.checked_gone)
    mode.count("erased memories checked off the disk", result.checked_erased)
    mode.count("replaced values checked recalled as history", result.checked_history)
    mode.count("memories left undecided by overlapping calls", result.undecided)
    mode.count("restarts", result.restarts)
    mode.count("embedder switches", result.switches)
    for figure, amount in result.ledger.figures().items():
        mode.count(figure, amount)
    for outcome in ("ok", "fail", "unknown"):
        mode.count(
            f"calls {outcome}",
            sum(1 for c in result.history.calls if c.outcome and c.outcome == outcome),
        )


async def _workload_mode(
    name: str,
    root: Path,
    seed: int,
    profile: Profile,
    trials: Sequence[int],
    progress: Callable[[str], None],
    shrink_attempts: int,
) -> ModeResult:
    mode = ModeResult(name)
    socket = name == "socket"
    for trial in trials:
        trial_root = root / f"{name}-{trial}"
        attempt = 0

        async def run(workload: Workload, trial_root: Path = trial_root) -> RunResult:
            nonlocal attempt
            attempt += 1
            directory = trial_root / f"attempt-{attempt}"
            directory.mkdir(parents=True)
            try:
                if socket:
                    with _short_directory() as sockets:
                        return await run_over_socket(
                            directory / "data",
                            sockets / "cairn.sock",
                            workload,
                            profile.clients,
                        )
                return await run_in_process(directory / "data", workload)
            except Exception as error:  # noqa: BLE001 - any crash of a run is a finding
                crashed = RunResult(workload, History())
                crashed.findings.append(
                    ("TE", f"the run crashed: {describe_error(error)}")
                )
                return crashed

        workload_seed = trial_seed(seed, name, trial)
        result = await run(_workload(workload_seed, profile, socket=socket))
        _count(mode, result)
        if result.failed:
            progress(f"{name} trial {trial}: {result.findings[0][1]}; shrinking")
            shortest = await shrink(
                run, result, attempts=shrink_attempts, budget_s=SHRINK_BUDGET_S
            )
            mode.violations.extend(
                Violation(
                    invariant,
                    message,
                    name,
                    workload_seed,
                    _evidence(shortest, message),
                )
                for invariant, message in shortest.findings
            )
            progress(f"{name} trial {trial}: kept {trial_root}")
        else:
            shutil.rmtree(trial_root, ignore_errors=True)
            progress(f"{name} trial {trial}: ok ({len(result.history.calls)} calls)")
    return mode


async def _schedules_mode(
    root: Path,
    seed: int,
    profile: Profile,
    trials: Sequence[int],
    progress: Callable[[str], None],
) -> ModeResult:
    mode = ModeResult("schedules")
    chosen = [
        ScheduleTrial(
            number,
            trial_seed(seed, "schedules", number),
            trial_seed(seed, "schedules-scheduler", number),
        )
        for number in trials
    ]
    for trial, result in await run_schedules(root, chosen, profile, progress):
        _count(mode, result)
        mode.violations.extend(
            Violation(
                invariant,
                message,
                "schedules",
                trial.workload_seed,
                _evidence(result, message),
                scheduler_seed=trial.scheduler_seed,
                trial=trial.trial,
            )
            for invariant, message in result.findings
        )
    return mode


_EXTERNAL: dict[str, Callable[[Path, int, Profile], Awaitable[ModeResult]]] = {
    "crash-points": run_crash_points,
    "kill-trials": run_kill_trials,
    "faults": run_faults,
    "load": run_load,
}
"""The modes that run real processes and faults, each in its own module."""


async def run_stress(
    root: Path,
    seed: int,
    profile: Profile,
    *,
    modes: Sequence[str] = MODES,
    trial: int | None = None,
    progress: Callable[[str], None] = lambda _: None,
    shrink_attempts: int = SHRINK_ATTEMPTS,
) -> StressReport:
    """Run ``modes`` of ``profile`` under ``root`` (trial directories are made there)."""
    report = StressReport(seed, profile.name, str(root))
    for name in modes:
        started = trio.current_time()
        mode_root = root / name
        mode_root.mkdir(parents=True, exist_ok=True)
        if name in {"workload", "socket"}:
            count = profile.workload_runs if name == "workload" else profile.socket_runs
            trials = range(count) if trial is None else [trial]
            result = await _workload_mode(
                name, mode_root, seed, profile, trials, progress, shrink_attempts
            )
        elif name == "schedules":
            count = profile.schedule_seeds
            trials = range(count) if trial is None else [trial]
            result = await _schedules_mode(mode_root, seed, profile, trials, progress)
        else:
            result = await _EXTERNAL[name](mode_root, seed, profile)
        result.seconds = trio.current_time() - started
        report.modes.append(result)
        progress(
            f"{name}: {result.trials} trials, {len(result.violations)} violations,"
            f" {result.seconds:.1f} s"
        )
        if not result.violations:
            shutil.rmtree(mode_root, ignore_errors=True)
    return report
