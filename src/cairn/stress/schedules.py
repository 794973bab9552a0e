"""The ``schedules`` mode: many short workloads, each under a scheduler seed of its own.

A trial is an operation seed (what the clients do, :func:`cairn.stress.workload.generate`)
and a scheduler seed (how their tasks interleave, :mod:`cairn.stress.scheduling`): every
phase runs under :func:`seeded_scheduler` with a seed derived from it, and every client
yields a seeded number of times at each await point of its calls. Its history is checked
as the workload mode checks one (:mod:`cairn.stress.model`, :mod:`cairn.stress.checks`).

To make a trial cheap, a *batch* of trials shares one open memory and data directory,
each trial with agent IDs of its own (``t<trial>-<n>``), one after another. The answers
of a trial (I1–I3) are checked as soon as it ends; what is costly and looks at the whole
directory (the drain and file scan, I7; a restart and every answer again, I1; exports,
stored vectors, receipts and doctor, I2 and I4–I6; the import round trip) runs once per
batch over the union of the trials' expectations. That is as sound as checking each
trial alone because nothing a trial does reaches another trial's agents: every call
names an agent of its own trial, and the calls that are not per agent (a drain and
resume) leave data as it was. A trial brings no embedder switch and no restart of its
own (the workload mode has those), so the identity every vector is checked against is
the batch's one. Markers are checked on disk by their tails, so a trial whose markers
share a tail with a marker already in the batch starts a new batch instead (two
markers with one tail could hide or fake a copy on disk). A batch finding is charged to
the trial whose agent or marker it names, else to the batch's first trial, saying so.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import trio

from cairn.errors import DrainTimeoutError
from cairn.runtime.core import runtime_core
from cairn.stress.checks import check_answers, check_directory, check_files
from cairn.stress.embedders import DIMENSION
from cairn.stress.execute import Executor
from cairn.stress.history import History
from cairn.stress.ledger import read_ledger
from cairn.stress.markers import MARKER_PATTERN, marker_tail
from cairn.stress.model import Expectations, expectations
from cairn.stress.report import describe_error
from cairn.stress.runner import (
    CALL_BUDGET_S,
    STOP_BUDGET_S,
    AgentBackups,
    RunResult,
    executor_findings,
    import_round_trip,
    publish_projections,
    run_phase,
    settle,
    stress_memory,
)
from cairn.stress.scheduling import YieldInjector, seeded_scheduler
from cairn.stress.workload import generate
from cairn.testing import HashingEmbedder

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from cairn.runtime.memory import Memory
    from cairn.stress.checks import Finding
    from cairn.stress.profiles import Profile
    from cairn.stress.workload import Workload

__all__ = [
    "SEEDS_PER_BATCH",
    "ScheduleTrial",
    "phase_seed",
    "run_scheduled",
    "run_schedules",
    "schedule_workload",
]

SEEDS_PER_BATCH = 20
"""Trials sharing one data directory: enough to spread the batch checks thin, few enough
that the memory does not grow to thousands of agents."""


@attrs.frozen
class ScheduleTrial:
    trial: int
    workload_seed: int
    scheduler_seed: int


def schedule_workload(trial: ScheduleTrial, profile: Profile) -> Workload:
    """The operations of ``trial``: the profile's agents and clients, on fresh agent IDs,
    with drains but no restart or embedder switch (see the module docstring)."""
    return generate(
        trial.workload_seed,
        agents=profile.agents,
        clients=profile.clients,
        operations=profile.schedule_operations,
        restarts=False,
        switches=False,
        agent_prefix=f"t{trial.trial}",
    )


def phase_seed(scheduler_seed: int, phase: int) -> int:
    """trio's seed for one phase: each phase starts from a known state, whatever thread
    timing did to the coin's position in the phase before."""
    digest = hashlib.blake2b(f"{scheduler_seed}:{phase}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big") >> 1


def _owners(workload: Workload) -> dict[str, str]:
    return {op.marker: op.agent for op in workload.operations() if op.marker}


async def run_scheduled(
    memory: Memory,
    workload: Workload,
    scheduler_seed: int,
    *,
    owners: dict[str, str] | None = None,
    backups: Path,
) -> RunResult:
    """Run ``workload`` on the open ``memory`` under ``scheduler_seed`` and check its
    answers (I1–I3, I8, typed errors). ``owners`` is every marker the memory holds →
    its agent (other trials' too, so a leak from them is seen); ``backups`` is where the
    clients keep their exports."""
    history = History()
    result = RunResult(workload, history)
    known = {**(owners or {}), **_owners(workload)}
    executor = Executor(
        history, known, CALL_BUDGET_S, injector=YieldInjector(scheduler_seed)
    )
    await trio.Path(backups).mkdir(parents=True, exist_ok=True)
    executor.backups = AgentBackups(backups, memory)

    async def maintain(agent: str) -> None:
        supervisor = await runtime_core(memory).registry.get(agent)
        await supervisor.run_maintenance_pass()

    executor.maintenance = maintain
    # Phases here are only fresh starts of the seeded scheduler, with every client
    # starting together; the runtime settles once, before the answers are checked.
    for number, phase in enumerate(workload.phases):
        with seeded_scheduler(phase_seed(scheduler_seed, number)):
            await run_phase([memory], phase.clients, executor)
    await settle(memory)
    expected = expectations(workload, history)
    result.undecided = expected.undecided
    result.checked_live = sum(len(v) for v in expected.live.values())
    result.checked_gone = sum(len(v) for v in expected.gone.values())
    result.checked_erased = len(expected.erased)
    result.checked_history = expected.checked_history
    result.findings += await check_answers(memory, expected, executor, wait_s=30.0)
    result.findings += executor_findings(executor)
    return result


def _merged(every: Sequence[Expectations]) -> Expectations:
    """One trial's expectations beside another's: their agents are disjoint."""
    merged = Expectations({}, {}, {}, set(), {}, 0)
    for expected in every:
        merged.owners.update(expected.owners)
        merged.live.update(expected.live)
        merged.gone.update(expected.gone)
        merged.erased.update(expected.erased)
        merged.directives.update(expected.directives)
        merged.history.update(expected.history)
    return attrs.evolve(merged, undecided=sum(e.undecided for e in every))


@attrs.define
class _Batch:
    directory: Path
    runs: list[tuple[ScheduleTrial, RunResult]] = attrs.field(factory=list)
    owners: dict[str, str] = attrs.field(factory=dict)
    tails: set[str] = attrs.field(factory=set)

    def admits(self, workload: Workload) -> bool:
        tails = {marker_tail(marker) for marker in _owners(workload)}
        return not tails & self.tails

    def add(self, trial: ScheduleTrial, result: RunResult) -> None:
        self.runs.append((trial, result))
        self.owners.update(_owners(result.workload))
        self.tails.update(marker_tail(marker) for marker in _owners(result.workload))

    def charge(self, findings: list[Finding]) -> None:
        """Give each batch finding to the trial it names (see the module docstring)."""
        by_agent = {
            agent: result for _, result in self.runs for agent in result.workload.agents
        }
        first_trial, first = self.runs[0]
        last_trial = self.runs[-1][0]
        for invariant, found in findings:
            message = found
            named = [self.owners[m] for m in MARKER_PATTERN.findall(message)]
            named += [agent for agent in by_agent if message.startswith(f"{agent}:")]
            owner = next((by_agent[a] for a in named if a in by_agent), None)
            if owner is None:
                owner = first
                message = (
                    f"{message} (in the batch of trials {first_trial.trial}"
                    f"–{last_trial.trial})"
                )
            owner.findings.append((invariant, message))


async def _check_batch(memory: Memory, batch: _Batch) -> list[Finding]:
    """The directory-wide checks over every trial of the batch (module docstring)."""
    expected = _merged(
        [expectations(result.workload, result.history) for _, result in batch.runs]
    )
    findings: list[Finding] = []
    await settle(memory)
    try:
        await memory.drain(timeout_s=STOP_BUDGET_S)
    except DrainTimeoutError as error:
        findings.append(("I8", f"the batch's drain did not finish: {error}"))
    findings += await check_files(memory, expected)
    return findings


async def _after_restart(memory: Memory, batch: _Batch) -> list[Finding]:
    expected = _merged(
        [expectations(result.workload, result.history) for _, result in batch.runs]
    )
    executor = Executor(History(), dict(batch.owners), CALL_BUDGET_S)
    await settle(memory)
    findings = [
        (invariant, f"after a restart: {message}")
        for invariant, message in await check_answers(
            memory, expected, executor, wait_s=30.0
        )
    ]
    await publish_projections(memory)
    findings += await check_directory(memory, expected, executor)
    findings += await import_round_trip(memory, expected, executor)
    return findings + executor_findings(executor)


async def _run_batch(
    batch: _Batch,
    pending: list[tuple[ScheduleTrial, Workload]],
    progress: Callable[[str], None],
) -> None:
    """Run trials from the front of ``pending`` in one directory while they fit it."""
    data = batch.directory / "data"
    findings: list[Finding] = []
    async with stress_memory(data, HashingEmbedder(DIMENSION)) as memory:
        while pending and len(batch.runs) < SEEDS_PER_BATCH:
            trial, workload = pending[0]
            if batch.runs and not batch.admits(workload):
                break
            pending.pop(0)
            try:
                result = await run_scheduled(
                    memory,
                    workload,
                    trial.scheduler_seed,
                    owners=batch.owners,
                    backups=batch.directory / f"trial-{trial.trial}",
                )
            except Exception as error:  # noqa: BLE001 - any crash of a run is a finding
                result = RunResult(workload, History())
                result.findings.append(
                    ("TE", f"the run crashed: {describe_error(error)}")
                )
                batch.add(trial, result)
                # The memory may be left in any state: the next trial starts a batch.
                break
            batch.add(trial, result)
            state = result.findings[0][1] if result.failed else "ok"
            progress(
                f"schedules trial {trial.trial} (scheduler seed"
                f" {trial.scheduler_seed}): {state}"
            )
        findings += await _check_batch(memory, batch)
    async with stress_memory(data, HashingEmbedder(DIMENSION)) as memory:
        findings += await _after_restart(memory, batch)
        # One memory for the batch: what maintenance did is counted once, on its first
        # trial.
        batch.runs[0][1].ledger = await read_ledger(memory)
    batch.charge(findings)


async def run_schedules(
    root: Path,
    trials: Sequence[ScheduleTrial],
    profile: Profile,
    progress: Callable[[str], None] = lambda _: None,
) -> list[tuple[ScheduleTrial, RunResult]]:
    """Every trial, in batches under ``root``; a batch's directory is kept when one of
    its trials failed, removed otherwise."""
    pending = [(trial, schedule_workload(trial, profile)) for trial in trials]
    done: list[tuple[ScheduleTrial, RunResult]] = []
    while pending:
        batch = _Batch(root / f"batch-{pending[0][0].trial}")
        await trio.Path(batch.directory).mkdir(parents=True)
        try:
            await _run_batch(batch, pending, progress)
        except Exception as error:  # noqa: BLE001 - any crash of a batch is a finding
            if not batch.runs:
                trial, workload = pending.pop(0)
                batch.add(trial, RunResult(workload, History()))
            batch.charge([("TE", f"the batch crashed: {describe_error(error)}")])
        done += batch.runs
        if any(result.failed for _, result in batch.runs):
            progress(f"schedules: kept {batch.directory}")
        else:
            shutil.rmtree(batch.directory, ignore_errors=True)
    return done
