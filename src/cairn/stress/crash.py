"""Crash trials in real processes: SIGKILL at every named crash point and at random moments.

:func:`run_crash_points` starts the crash worker (cairn.stress.crash_worker) once per
declared crash point and seed with ``CAIRN_CRASH_AT=point:occurrence``; the process must
die by SIGKILL at that point (its stderr names it). :func:`run_kill_trials` SIGKILLs, at a
seeded random moment, the worker's random workload, a real ``cairn serve`` while socket
clients write, and a real ``cairn ingest FILE`` (both through cairn.stress.server).

After every kill the data directory is reopened in this process and checked against what
was *acknowledged* before the kill (the worker's ``ok`` lines, the clients' answers, a
finished ingest command):

- I1: every acknowledged, still-live marker is recalled;
- I2: no acknowledged forgotten, cleared or retired marker is recalled or exported, and a
  replay of the same turns after the reopen brings none back;
- I7: none of them is in any file of the data directory after the reopen's scrub
  (:func:`cairn.stress.markers.holds_marker`);
- I6: ``PRAGMA integrity_check`` and the doctor's checks pass once the reopened runtime
  has settled (pending clears resumed, extraction and embedding caught up).

An operation cut off by the kill (invoked, never answered) may or may not have happened:
what it wrote or removed is checked neither way.
"""

from __future__ import annotations

import io
import json
import random
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import trio

from cairn.crashpoints import CRASH_POINTS, ENVIRONMENT_VARIABLE
from cairn.domain.outcomes import IntakeOutcome
from cairn.errors import CairnError, ConnectionLostError
from cairn.ipc.client import open_unix_client
from cairn.runtime.memory import Memory, open_memory
from cairn.runtime.threads import run_in_thread
from cairn.runtime.transfer import export_memory, import_memory
from cairn.runtime.upkeep import check
from cairn.stress.checks import files_holding
from cairn.stress.crash_worker import WORKER_CONFIG, user_turn
from cairn.stress.load_server import server_environment
from cairn.stress.markers import MarkerSource
from cairn.stress.report import ModeResult, Violation
from cairn.testing import HashingEmbedder

if TYPE_CHECKING:
    from collections.abc import Iterable

    from cairn.stress.profiles import Profile

__all__ = [
    "CRASH_SCENARIOS",
    "KillTrial",
    "TrialModel",
    "WorkerRun",
    "crash_point_trial",
    "ingest_kill_trial",
    "model_of",
    "run_crash_points",
    "run_kill_trials",
    "run_worker",
    "serve_kill_trial",
    "verify",
    "workload_kill_trial",
]

T = TypeVar("T")
# A kill trial: (root directory, seed, the mode's result) -> the violations it found.
KillTrial = Callable[[Path, int, ModeResult], Awaitable[list[Violation]]]

# Crash point -> (worker scenario, highest occurrence the scenario is sure to reach, what
# the kill leaves of the operation it interrupts: "done" when that operation's effect is
# durable by then (committed, or a job that resumes at the next open), "undone" when
# nothing of it is committed, None when no worker operation is running or it is unknown).
CRASH_SCENARIOS: dict[str, tuple[str, int, str | None]] = {
    "forget.after_tombstone": ("forget", 4, "undone"),
    "forget.after_commit": ("forget", 4, "done"),
    "clear.after_tombstone": ("clear", 1, "done"),
    "clear.phase": ("clear", 4, "done"),
    "retire.phase": ("retire", 4, "done"),
    "vectors.publish": ("vectors", 2, None),
    "batch.after_commit": ("batch", 3, None),
    "embedding.after_commit": ("batch", 3, None),
    "migration.step": ("migration", 6, None),
    "migration.committed": ("migration", 6, None),
    "import.records": ("import", 2, None),
    "ingest.after_commit": ("ingest", 6, "done"),
}
# Bounds one process's run and one reopen's checks, generous for a loaded machine.
PROCESS_TIMEOUT_S = 120.0
# The provider configuration of the machine must not leak into the trial processes.
_ENVIRONMENT = {
    key: value
    for key, value in server_environment().items()
    if key != ENVIRONMENT_VARIABLE
}


# -- what was acknowledged -----------------------------------------------------------------
@attrs.define
class _Memory:
    """One written text: a turn (with the IDs a replay sends again) or a claim."""

    agent: str
    marker: str
    text: str
    event_id: str | None = None
    session_id: str | None = None


@attrs.define
class TrialModel:
    """What the engine must hold after the kill, built from the acknowledged history."""

    live: dict[tuple[str, str], _Memory] = attrs.field(factory=dict)
    gone: dict[tuple[str, str], tuple[_Memory, str]] = attrs.field(factory=dict)
    """Forgotten, cleared or retired (the operation that removed it)."""
    uncertain: set[tuple[str, str]] = attrs.field(factory=set)
    lines: list[str] = attrs.field(factory=list)
    in_flight: dict[str, Any] | None = None
    violations: list[tuple[str, str]] = attrs.field(factory=list)
    """Broken promises seen in the answers themselves (invariant, message)."""
    resuming: set[tuple[str, str]] = attrs.field(factory=set)
    """Removed by a clear or retire the kill interrupted after its job was stored: the
    reopened runtime finishes it in the background, so its text leaves the disk only
    then (checked once the runtime settled and closed)."""

    def apply(self, line: dict[str, Any]) -> None:
        """One history line (cairn.stress.crash_worker's format)."""
        event = line.get("event")
        if event not in {"invoke", "ok", "fail"}:
            return
        self.lines.append(_short(line))
        if event == "invoke":
            self.in_flight = line
            return
        self.in_flight = None
        if event == "ok":
            self._acknowledged(line)

    def _acknowledged(self, line: dict[str, Any]) -> None:
        op, agent = line["op"], line.get("agent", "")
        if op == "ingest":
            for marker, event_id, session, text in line["turns"]:
                self.live[agent, marker] = _Memory(
                    agent, marker, text, event_id, session
                )
        elif op in {"remember", "stored"}:
            self.live[agent, line["marker"]] = _Memory(
                agent, line["marker"], line["text"]
            )
        elif op == "replay":
            ((marker, event_id, session, text),) = line["turns"]
            key = (agent, marker)
            if key in self.gone:
                _, how = self.gone[key]
                if how == "retire":
                    # A retired agent's namespace is gone, tombstones too: the replay
                    # is a new agent's first write, stored and live again.
                    del self.gone[key]
                    self.live[key] = _Memory(agent, marker, text, event_id, session)
                elif line.get("outcome") == IntakeOutcome.INGESTED.value:
                    self.violations.append(
                        ("I2", f"a replay of {how} {marker} of {agent} was ingested")
                    )
            elif key not in self.live and key not in self.uncertain:
                self.live[key] = _Memory(agent, marker, text, event_id, session)
        elif op == "forget":
            key = (agent, line["marker"])
            if key in self.live:
                self.gone[key] = (self.live.pop(key), "forget")
        elif op in {"clear", "retire"}:
            for key in [key for key in self.live if key[0] == agent]:
                self.gone[key] = (self.live.pop(key), op)
            if op == "retire":
                for key, (memory, _) in list(self.gone.items()):
                    if key[0] == agent:
                        self.gone[key] = (memory, "retire")

    def cut_off(self) -> None:
        """The operation the kill interrupted: what it touched is checked neither way
        (a replay in flight still never brings back what is forgotten or cleared)."""
        line, self.in_flight = self.in_flight, None
        if line is None:
            return
        op, agent = line["op"], line.get("agent", "")
        touched: list[tuple[str, str]] = []
        if op in {"ingest", "replay"}:
            touched = [(agent, marker) for marker, *_ in line["turns"]]
        elif op in {"remember", "forget"}:
            touched = [(agent, line["marker"])]
        elif op in {"clear", "retire"}:
            touched = [key for key in self.live if key[0] == agent]
        if op == "retire":
            # Whether or not it ran, what was forgotten or cleared stays gone; but had it
            # run, the tombstones went with the namespace and a replay is a new write.
            for key, (memory, _) in list(self.gone.items()):
                if key[0] == agent:
                    self.gone[key] = (memory, "retire")
        for key in touched:
            if op == "replay" and self.gone.get(key, (None, ""))[1] != "retire":
                # A replay leaves a live turn live, and can never bring back what is
                # forgotten or cleared; only a retired turn may now be stored again.
                continue
            self.live.pop(key, None)
            self.gone.pop(key, None)
            self.uncertain.add(key)

    def history(self, agent: str | None = None, marker: str = "") -> tuple[str, ...]:
        """The lines that show a finding about ``marker`` of ``agent``: the calls that
        wrote or removed it and the agent's clears and retires (the last 40 lines when
        the finding names no marker)."""
        if agent is None or not marker:
            return tuple(self.lines[-40:])
        return tuple(
            line
            for line in self.lines
            if line.split()[2:3] == [agent]
            and (marker in line or line.split()[1] in {"clear", "retire"})
        )

    def agents(self) -> set[str]:
        return {agent for agent, _ in (*self.live, *self.gone, *self.uncertain)}


def _short(line: dict[str, Any]) -> str:
    parts = [line["event"], line.get("op", ""), line.get("agent", "")]
    if "turns" in line:
        parts.append(" ".join(f"+{t[0]}#{t[1]}" for t in line["turns"]))
    if "marker" in line:
        parts.append(f"@{line['marker']}")
    if "item_id" in line:
        parts.append(f"id={line['item_id']}")
    if "outcome" in line:
        parts.append(f"-> {line['outcome']}")
    if "error" in line:
        parts.append(f"({line['error']})")
    return " ".join(part for part in parts if part)


# -- running a worker ----------------------------------------------------------------------
@attrs.define
class WorkerRun:
    returncode: int
    lines: list[dict[str, Any]]
    stderr: str

    @property
    def killed(self) -> bool:
        return self.returncode == -signal.SIGKILL

    def crashed_at(self, point: str) -> bool:
        """Died by SIGKILL at ``point`` (the line cairn.crashpoints writes first)."""
        return self.killed and f"cairn: crash point {point} " in self.stderr


def _stream(stream: trio.abc.ReceiveStream | None) -> trio.abc.ReceiveStream:
    if stream is None:
        raise RuntimeError("the process was started without this pipe")
    return stream


def _fresh(directory: Path) -> None:
    """An empty trial directory (a rerun of the same seed starts over)."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)


async def _kept_if_failed(directory: Path, found: list[Violation]) -> list[Violation]:
    """A trial's directory is deleted when it found nothing, kept (and named) otherwise."""
    if not found:

        def remove() -> None:
            # With the files a trial keeps beside it (an export, a log, turn files).
            for path in [directory, *directory.parent.glob(f"{directory.name}-*")]:
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)

        await _off_loop(remove)
        return found
    return [
        attrs.evolve(violation, message=f"{violation.message} (kept: {directory})")
        for violation in found
    ]


async def _off_loop(function: Callable[[], T]) -> T:
    """File work of the checks (scans, temporary directories) off the trio loop."""
    return await run_in_thread(function, limiter=trio.CapacityLimiter(1))


def _cli_command(*args: str) -> list[str]:
    """``cairn ARGS`` with the hashing embedder, as a real process (cairn.stress.server)."""
    return [sys.executable, "-m", "cairn.stress.server", *args]


def _worker_command(data_dir: Path, scenario: str, seed: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "cairn.stress.crash_worker",
        "--data",
        str(data_dir),
        "--scenario",
        scenario,
        "--seed",
        str(seed),
    ]


async def _run_process(
    command: list[str],
    *,
    crash_at: str | None = None,
    kill_after_s: float | None = None,
    ready: str = '"event": "ready"',
) -> WorkerRun:
    """Run ``command`` to its end; with ``kill_after_s``, SIGKILL it that long after its
    ``ready`` line (or at once, should it end first)."""
    environment = dict(_ENVIRONMENT)
    if crash_at is not None:
        environment[ENVIRONMENT_VARIABLE] = crash_at
    out, err = bytearray(), bytearray()
    started = trio.Event()
    if not ready:
        started.set()  # no readiness line: the moment counts from the start
    with trio.fail_after(PROCESS_TIMEOUT_S):
        process = await trio.lowlevel.open_process(
            command,
            stdin=None,
            stdout=-1,
            stderr=-1,
            env=environment,
        )
        try:
            async with trio.open_nursery() as nursery:

                async def read_out() -> None:
                    async for chunk in _stream(process.stdout):
                        out.extend(chunk)
                        if ready.encode() in out:
                            started.set()
                    started.set()

                async def read_err() -> None:
                    async for chunk in _stream(process.stderr):
                        err.extend(chunk)

                nursery.start_soon(read_out)
                nursery.start_soon(read_err)
                if kill_after_s is not None:
                    await started.wait()
                    # The random moment of a kill trial: real time, from the seed.
                    await trio.sleep(kill_after_s)
                    if process.returncode is None:
                        process.kill()
                await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                with trio.CancelScope(shield=True):
                    await process.wait()
    lines = []
    for raw in out.decode("utf-8", "replace").splitlines():
        # The last line may be cut by the kill: it was never acknowledged.
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:
            continue
    return WorkerRun(
        int(process.returncode or 0), lines, err.decode("utf-8", "replace")
    )


async def run_worker(
    data_dir: Path,
    scenario: str,
    seed: int,
    *,
    crash_at: str | None = None,
    kill_after_s: float | None = None,
) -> WorkerRun:
    """One crash worker process on ``data_dir`` (see cairn.stress.crash_worker)."""
    return await _run_process(
        _worker_command(data_dir, scenario, seed),
        crash_at=crash_at,
        kill_after_s=kill_after_s,
    )


def model_of(lines: Iterable[dict[str, Any]]) -> TrialModel:
    model = TrialModel()
    for line in lines:
        model.apply(line)
    model.cut_off()
    return model


# -- checking a reopened directory ------------------------------------------------------------
def _files_holding(data_dir: Path, markers: Iterable[str]) -> dict[str, list[str]]:
    """Per marker, the names of the directory's files holding a copy of it."""
    return {
        marker: [Path(path).name for path in paths]
        for marker, paths in files_holding(data_dir, markers).items()
    }


async def _recalled(memory: Memory, agent: str, marker: str) -> bool:
    recall = await memory.recall(agent, marker, k=20)
    return marker in recall.memory_block or any(
        marker in item.text for item in recall.items
    )


async def _settle(memory: Memory, agents: Iterable[str]) -> None:
    for agent in sorted(agents):
        await memory.wait_cleared(agent)
        await memory.wait_idle(agent)


@attrs.define
class _Checks:
    """The checks of one reopened directory against one model, and what they found."""

    data_dir: Path
    model: TrialModel
    result: ModeResult
    seed: int
    found: list[Violation] = attrs.field(factory=list)

    def owner(self, *, resumed: bool = True) -> dict[str, str]:
        """Each removed marker's agent (with ``resumed``, also those a resumed job
        removes)."""
        return {
            marker: agent
            for agent, marker in self.model.gone
            if resumed or (agent, marker) not in self.model.resuming
        }

    def violation(
        self, invariant: str, message: str, agent: str | None = None, marker: str = ""
    ) -> None:
        self.found.append(
            Violation(
                invariant,
                message,
                self.result.mode,
                self.seed,
                self.model.history(agent, marker),
            )
        )

    async def scan(
        self, when: str, controls: frozenset[str] = frozenset(), *, resumed: bool = True
    ) -> None:
        """I7: no removed marker in any file; ``controls`` (live markers) must be seen."""
        owner, data_dir = self.owner(resumed=resumed), self.data_dir
        on_disk = await _off_loop(
            lambda: _files_holding(data_dir, set(owner) | controls)
        )
        seen = controls & set(on_disk)
        if controls:
            self.result.count("scan controls seen", len(seen))
            self.result.count("scan controls missed", len(controls - seen))
        for marker, files in sorted(on_disk.items()):
            if marker in owner:
                self.violation(
                    "I7",
                    f"removed marker {marker} in {', '.join(files)} {when}",
                    owner[marker],
                    marker,
                )

    async def recalls(self, memory: Memory, *, after_replay: bool = False) -> None:
        """I1 for live markers (before the replays), I2 for removed ones."""
        if not after_replay:
            for agent, marker in sorted(self.model.live):
                self.result.count("acknowledged writes checked")
                if not await _recalled(memory, agent, marker):
                    self.violation(
                        "I1",
                        f"acknowledged {marker} of {agent} is not recalled",
                        agent,
                        marker,
                    )
        for (agent, marker), (_, how) in sorted(self.model.gone.items()):
            if not after_replay:
                self.result.count(f"{how}s checked")
            if await _recalled(memory, agent, marker):
                later = " after replay" if after_replay else ""
                self.violation(
                    "I2", f"{how} {marker} of {agent} is recalled{later}", agent, marker
                )

    async def export(self, memory: Memory) -> None:
        sink = io.StringIO()
        await export_memory(memory, sink)
        exported = sink.getvalue()
        for marker, agent in sorted(self.owner().items()):
            if marker in exported:
                self.violation(
                    "I2", f"removed marker {marker} is exported", agent, marker
                )

    async def replays(self, memory: Memory) -> None:
        """The host sends again every turn it ever sent that was forgotten or cleared."""
        for (agent, marker), (row, how) in sorted(self.model.gone.items()):
            if how == "retire" or row.event_id is None:
                continue
            turn = user_turn(row.event_id, row.session_id or "s0", row.text)
            report = await memory.ingest(agent, [turn])
            self.result.count("replays checked")
            if report.results[0].outcome is IntakeOutcome.INGESTED:
                self.violation(
                    "I2",
                    f"a replay of {how} {marker} of {agent} is stored",
                    agent,
                    marker,
                )

    async def doctor(self) -> None:
        """I6, as an operator runs it: a fresh open of the settled directory (the
        projection files are published by the previous close)."""
        with trio.fail_after(PROCESS_TIMEOUT_S):
            async with open_memory(
                self.data_dir, WORKER_CONFIG, embedder=HashingEmbedder()
            ) as memory:
                report = await check(memory)
        self.result.count("doctor runs")
        if report.sqlite_integrity != "ok":
            self.violation("I6", f"integrity_check: {report.sqlite_integrity}")
        if not report.ok:
            self.violation("I6", "doctor: " + "; ".join(report.problems))


async def verify(
    data_dir: Path,
    model: TrialModel,
    result: ModeResult,
    seed: int,
    *,
    finish_import: Path | None = None,
) -> list[Violation]:
    """Reopen ``data_dir`` and check I1, I2, I6 and I7 against ``model``."""
    checks = _Checks(data_dir, model, result, seed)
    for invariant, message in model.violations:
        checks.violation(invariant, message)
    agents = model.agents()
    with trio.fail_after(PROCESS_TIMEOUT_S):
        async with open_memory(
            data_dir, WORKER_CONFIG, embedder=HashingEmbedder()
        ) as memory:
            # The open scrubbed what acknowledged forgets, clears and retires owe. A few
            # live markers go along: the scan must see those (else it sees nothing).
            # (Not before an interrupted import is run again: they are not there yet.)
            controls = frozenset(
                marker for _, marker in sorted(model.live)[: 0 if finish_import else 5]
            )
            await checks.scan("after the reopen", controls, resumed=False)
            if finish_import is not None:
                # The host runs the interrupted import again: it completes, once.
                await import_memory(memory, finish_import)
            await _settle(memory, agents)
            await checks.recalls(memory)
            await checks.export(memory)
            await checks.replays(memory)
            await _settle(memory, agents)
            await checks.recalls(memory, after_replay=True)
    await checks.scan("after the replays")
    await checks.doctor()
    return checks.found


# -- named crash points ------------------------------------------------------------------------
async def crash_point_trial(
    root: Path, point: str, seed: int, result: ModeResult
) -> tuple[WorkerRun, list[Violation]]:
    """One SIGKILL at ``point`` (its occurrence from ``seed``), then the reopen's checks."""
    scenario, most, fate = CRASH_SCENARIOS[point]
    occurrence = random.Random(f"{point}:{seed}").randint(1, most)
    data_dir = root / f"{point.replace('.', '-')}-{seed}"
    await _off_loop(lambda: _fresh(data_dir))
    run = await run_worker(data_dir, scenario, seed, crash_at=f"{point}:{occurrence}")
    result.trials += 1
    model = TrialModel()
    for line in run.lines:
        model.apply(line)
    interrupted = model.in_flight
    if interrupted is not None and fate == "done":
        before = set(model.gone)
        model.apply({**interrupted, "event": "ok"})
        if interrupted["op"] in {"clear", "retire"}:
            model.resuming = set(model.gone) - before
    elif interrupted is not None and fate == "undone":
        model.apply({**interrupted, "event": "fail", "error": "killed"})
    model.cut_off()
    result.operations += len(model.lines)
    if not run.crashed_at(point):
        return run, [
            Violation(
                "I6",
                f"crash point {point}:{occurrence} was not reached (exit"
                f" {run.returncode}): {run.stderr.strip()[-400:]}",
                result.mode,
                seed,
                tuple(model.lines[-40:]),
            )
        ]
    result.count("kills")
    result.count("crash points reached")
    exported = [line for line in run.lines if line.get("event") == "exported"]
    finish_import = None
    if exported and not any(
        line.get("op") == "import" and line["event"] == "ok" for line in run.lines
    ):
        # The import was cut off: the host runs it again after the reopen. What the
        # source held when it was exported is what the directory must then hold.
        finish_import = Path(exported[-1]["file"])
    found = await verify(data_dir, model, result, seed, finish_import=finish_import)
    return run, await _kept_if_failed(data_dir, found)


async def run_crash_points(root: Path, seed: int, profile: Profile) -> ModeResult:
    """Every declared crash point (or a seeded sample of ``profile.crash_points``) ×
    ``profile.crash_point_seeds`` seeds."""
    result = ModeResult("crash-points")
    started = time.monotonic()
    missing = set(CRASH_POINTS) - set(CRASH_SCENARIOS)
    for point in sorted(missing):
        result.violations.append(
            Violation("I6", f"crash point {point} has no scenario", result.mode, seed)
        )
    points = sorted(CRASH_SCENARIOS)
    rng = random.Random(f"crash-points:{seed}")
    for number in range(profile.crash_point_seeds):
        chosen = points
        if 0 < profile.crash_points < len(points):
            chosen = sorted(rng.sample(points, profile.crash_points))
        for point in chosen:
            _, violations = await crash_point_trial(root, point, seed + number, result)
            result.violations.extend(violations)
    result.seconds = time.monotonic() - started
    return result


# -- kills at random moments -----------------------------------------------------------------
async def workload_kill_trial(
    root: Path, seed: int, result: ModeResult
) -> list[Violation]:
    """The worker's random workload, SIGKILLed at a seeded moment."""
    rng = random.Random(f"workload:{seed}")
    data_dir = root / f"workload-{seed}"
    await _off_loop(lambda: _fresh(data_dir))
    run = await run_worker(
        data_dir, "workload", seed, kill_after_s=rng.uniform(0.05, 1.5)
    )
    result.trials += 1
    if run.killed:
        result.count("kills")
    model = model_of(run.lines)
    result.operations += len(model.lines)
    return await _kept_if_failed(data_dir, await verify(data_dir, model, result, seed))


def _turn_lines(markers: MarkerSource, first: int, count: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"f{first + n}",
            "session": "s0",
            "role": "user",
            "text": f"Our project codename at work is {markers()}.",
        }
        for n in range(count)
    ]


async def ingest_kill_trial(
    root: Path, seed: int, result: ModeResult
) -> list[Violation]:
    """``cairn ingest FILE`` run to completion (acknowledged), then another file's ingest
    SIGKILLed after a seeded one of its requests committed; the host then sends that
    file again."""
    rng = random.Random(f"ingest:{seed}")
    markers = MarkerSource(rng)
    data_dir = root / f"ingest-{seed}"
    await _off_loop(lambda: _fresh(data_dir))
    model = TrialModel()
    files = []
    for number, count in enumerate((20, 1100)):
        rows = _turn_lines(markers, number * 1000, count)
        path = root / f"ingest-{seed}-{number}.jsonl"
        path.write_text(
            "".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8"
        )
        files.append((path, rows))
    first, second = files
    command = _cli_command("--data", str(data_dir), "ingest", str(first[0]))
    finished = await _run_process([*command, "--agent", "a"], ready="")
    if finished.returncode == 0:
        model.apply(
            {"event": "ok", "op": "ingest", "agent": "a", "turns": _turns(first[1])}
        )
    else:
        result.violations.append(
            Violation(
                "I1",
                f"cairn ingest exited {finished.returncode}: {finished.stderr[-400:]}",
                result.mode,
                seed,
            )
        )
    command = _cli_command("--data", str(data_dir), "ingest", str(second[0]))
    model.apply(
        {"event": "invoke", "op": "ingest", "agent": "a", "turns": _turns(second[1])}
    )
    # Killed right after one of its first two requests committed (the file is three
    # requests of at most 512 lines): a seeded moment that always comes, mid-file.
    killed = await _run_process(
        [*command, "--agent", "a"],
        ready="",
        crash_at=f"ingest.after_commit:{rng.randint(1, 2)}",
    )
    result.trials += 1
    if killed.killed:
        result.count("kills")
        model.cut_off()
    else:
        model.apply(
            {"event": "ok", "op": "ingest", "agent": "a", "turns": _turns(second[1])}
        )
    result.operations += len(first[1]) + len(second[1])
    found = await verify(data_dir, model, result, seed)
    # The host sends the interrupted file again: every line of it is then stored once.
    async with open_memory(
        data_dir, WORKER_CONFIG, embedder=HashingEmbedder()
    ) as memory:
        report = await memory.ingest(
            "a",
            [user_turn(row["id"], row["session"], row["text"]) for row in second[1]],
        )
        await memory.wait_idle("a")
        for row, outcome in zip(second[1], report.results, strict=True):
            marker = row["text"].split()[-1].rstrip(".")
            result.count("acknowledged writes checked")
            if outcome.outcome is IntakeOutcome.REJECTED or not await _recalled(
                memory, "a", marker
            ):
                found.append(
                    Violation(
                        "I1",
                        f"{marker} ({row['id']}) is not stored after the file is sent again",
                        result.mode,
                        seed,
                    )
                )
    return await _kept_if_failed(data_dir, found)


def _turns(rows: list[dict[str, Any]]) -> list[list[str]]:
    return [
        [row["text"].split()[-1].rstrip("."), row["id"], row["session"], row["text"]]
        for row in rows
    ]


async def _socket_client(
    socket_path: Path, number: int, seed: int, lines: list[dict[str, Any]]
) -> None:
    """Writes, forgets and clears of agent ``a<number>`` over the socket until the
    connection is lost; every call's invoke and answer goes to ``lines``, in order."""
    agent, rng = f"a{number}", random.Random(f"{seed}:{number}")
    markers = MarkerSource(rng)
    turns: list[list[str]] = []
    async with open_unix_client(socket_path) as connection:
        for step in range(100_000):
            choice = rng.random()
            line: dict[str, Any]
            call: Awaitable[object]
            if choice < 0.12 and turns:
                marker, event_id, *_ = turns.pop(rng.randrange(len(turns)))
                line = {"op": "forget", "agent": agent, "marker": marker}
                call = connection.forget(agent, event_id)
            elif choice < 0.14:
                line = {"op": "clear", "agent": agent}
                turns.clear()
                call = connection.clear(agent)
            else:
                batch = [
                    [marker, f"e{step}-{n}", "s0", f"My locker code word is {marker}."]
                    for n in range(rng.randint(1, 4))
                    for marker in [markers()]
                ]
                turns.extend(batch)
                line = {"op": "ingest", "agent": agent, "turns": batch}
                call = connection.ingest(
                    agent, [user_turn(e, s, text) for _, e, s, text in batch]
                )
            lines.append({"event": "invoke", **line})
            try:
                await call
            except ConnectionLostError:
                return  # cut off: left as invoked, never answered
            except CairnError as error:
                lines.append({"event": "fail", **line, "error": type(error).__name__})
                continue
            lines.append({"event": "ok", **line})


async def serve_kill_trial(
    root: Path, seed: int, result: ModeResult, *, clients: int = 3
) -> list[Violation]:
    """A real ``cairn serve`` with socket clients writing, forgetting and clearing, each
    client on its own agent; SIGKILLed at a seeded moment."""
    rng = random.Random(f"serve:{seed}")
    data_dir = root / f"serve-{seed}"
    await _off_loop(lambda: _fresh(data_dir))
    # A Unix socket path must fit in 107 bytes: a short directory of its own.
    socket_dir = Path(
        await _off_loop(lambda: tempfile.mkdtemp(prefix="cairn-crash-", dir="/tmp"))
    )
    socket_path = socket_dir / "socket"
    command = _cli_command(
        "--data", str(data_dir), "serve", "--socket", str(socket_path)
    )
    lines: list[dict[str, Any]] = []
    log = (root / f"serve-{seed}-server.log").open("ab")
    try:
        with trio.fail_after(PROCESS_TIMEOUT_S):
            process = await trio.lowlevel.open_process(
                command, stdin=None, stdout=-1, stderr=log, env=_ENVIRONMENT
            )
            try:
                ready = bytearray()
                stdout = _stream(process.stdout)
                while b"\n" not in ready:  # the readiness line
                    chunk = await stdout.receive_some(4096)
                    if not chunk:
                        break
                    ready.extend(chunk)
                async with trio.open_nursery() as nursery:
                    for number in range(clients):
                        nursery.start_soon(
                            _socket_client, socket_path, number, seed, lines
                        )
                    # The random moment of the kill: real time, from the seed.
                    await trio.sleep(rng.uniform(0.3, 1.2))
                    process.kill()
                    await process.wait()
            finally:
                if process.returncode is None:
                    process.kill()
                    with trio.CancelScope(shield=True):
                        await process.wait()
    finally:
        log.close()
        await _off_loop(lambda: shutil.rmtree(socket_dir, ignore_errors=True))
    result.trials += 1
    result.count("kills")
    model = TrialModel()
    # Each client's lines are in its own order and its agent is its own.
    for number in range(clients):
        for line in lines:
            if line["agent"] == f"a{number}":
                model.apply(line)
        model.cut_off()
    result.operations += len(lines)
    return await _kept_if_failed(data_dir, await verify(data_dir, model, result, seed))


async def run_kill_trials(root: Path, seed: int, profile: Profile) -> ModeResult:
    """``profile.kill_trials`` SIGKILLs at seeded random moments, in turn of the worker's
    random workload, of a real ``cairn serve`` and of a real ``cairn ingest FILE``."""
    result = ModeResult("kill-trials")
    started = time.monotonic()
    trials: tuple[KillTrial, ...] = (
        workload_kill_trial,
        serve_kill_trial,
        ingest_kill_trial,
    )
    for number in range(profile.kill_trials):
        trial = trials[number % len(trials)]
        result.violations.extend(await trial(root, seed + number, result))
    result.seconds = time.monotonic() - started
    return result
