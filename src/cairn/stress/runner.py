"""One workload run, in process or against a real server over its socket, and what it
found.

In process, the clients call the embedded memory concurrently; between phases the memory
settles, is checked, and may restart (close and reopen on the same directory) or switch
its embedder (A→B, later B→A). Over the socket, each client has its own connection to a
real ``cairn serve`` process; a restart there is a real stop (SIGTERM, which drains) and
a new server. Both end with every check: the answers (I1–I3) through the surface the run
used, and then, in process, what only the data directory shows (I2 exports, I4–I7).
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import trio

from cairn.config import MemoryConfig
from cairn.errors import DrainTimeoutError
from cairn.ipc.client import open_unix_client
from cairn.runtime.core import runtime_core
from cairn.runtime.memory import Memory, open_memory
from cairn.runtime.transfer import export_memory, import_memory
from cairn.runtime.upkeep import known_agents
from cairn.stress.checks import Finding, check_answers, check_directory, check_files
from cairn.stress.embedders import DIMENSION, ReversedHashingEmbedder
from cairn.stress.execute import Executor
from cairn.stress.history import History
from cairn.stress.ledger import Ledger, read_ledger
from cairn.stress.load_server import ServerProcess, start_server
from cairn.stress.markers import MARKER_PATTERN
from cairn.stress.model import Expectations, Restored, expectations
from cairn.stress.workload import Workload
from cairn.testing import FixedDomainClock, HashingEmbedder

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from cairn.api.protocol import MemoryApi
    from cairn.stress.workload import Operation

__all__ = [
    "CALL_BUDGET_S",
    "STOP_BUDGET_S",
    "AgentBackups",
    "RunResult",
    "executor_findings",
    "executor_for",
    "import_round_trip",
    "publish_projections",
    "run_in_process",
    "run_over_socket",
    "run_phase",
    "settle",
    "stress_memory",
]

# Generous next to the engine's own budgets: a call that takes longer is a hang (I8).
CALL_BUDGET_S = 60.0
STOP_BUDGET_S = 60.0

CONFIG = MemoryConfig(
    recall_wait_s=30.0,
    embed_linger_s=0.001,
    extraction_linger_s=0.001,
    maintenance_interval_s=3600,
)


@attrs.define
class RunResult:
    workload: Workload
    history: History
    findings: list[Finding] = attrs.field(factory=list)
    checked_live: int = 0
    checked_gone: int = 0
    checked_erased: int = 0
    checked_history: int = 0
    """Replaced values checked to be recalled as history, not as current."""
    undecided: int = 0
    restarts: int = 0
    switches: int = 0
    ledger: Ledger = attrs.field(factory=Ledger)
    """What maintenance did, read from the memory as the run ended."""

    @property
    def failed(self) -> bool:
        return bool(self.findings)


def executor_for(workload: Workload, history: History) -> Executor:
    owners = {op.marker: op.agent for op in workload.operations() if op.marker}
    return Executor(history, owners, CALL_BUDGET_S)


def executor_findings(executor: Executor) -> list[Finding]:
    findings: list[Finding] = [
        ("I3", f"{leak.agent} saw {leak.marker} of {leak.owner} in {leak.where}")
        for leak in executor.leaks
    ]
    findings += [
        ("I8", f"no answer within {CALL_BUDGET_S:.0f} s: {call.operation.describe()}")
        for call in executor.hangs
    ]
    findings += [
        ("TE", f"untyped error from {call.operation.describe()}: {text}")
        for call, text in executor.untyped
    ]
    return findings


async def run_phase(
    apis: list[MemoryApi], lanes: tuple[tuple[Operation, ...], ...], executor: Executor
) -> None:
    async def lane(client: int, operations: tuple[Operation, ...]) -> None:
        api = apis[client % len(apis)]
        for operation in operations:
            await executor.run(api, operation, client)

    async with trio.open_nursery() as nursery:
        for client, operations in enumerate(lanes):
            nursery.start_soon(lane, client, operations)


async def settle(api: MemoryApi) -> None:
    with trio.fail_after(STOP_BUDGET_S):
        await api.wait_idle()


async def _check(
    api: MemoryApi, result: RunResult, executor: Executor, memory: Memory | None
) -> None:
    expected = expectations(result.workload, result.history)
    result.undecided = expected.undecided
    result.checked_live = sum(len(v) for v in expected.live.values())
    result.checked_gone = sum(len(v) for v in expected.gone.values())
    result.checked_erased = len(expected.erased)
    result.checked_history = expected.checked_history
    result.findings += await check_answers(api, expected, executor, wait_s=30.0)
    if memory is not None:
        await publish_projections(memory)
        result.ledger = await read_ledger(memory)
        result.findings += await check_directory(memory, expected, executor)
        result.findings += await import_round_trip(memory, expected, executor)


async def publish_projections(memory: Memory) -> None:
    """Let every agent's projection catch up and be saved, so the files can be checked."""
    with trio.fail_after(STOP_BUDGET_S):
        for agent in await known_agents(memory):
            supervisor = await runtime_core(memory).registry.get(agent)
            await supervisor.projection.caught_up.wait()
            await supervisor.run_maintenance_pass()


async def import_round_trip(
    memory: Memory, expected: Expectations, executor: Executor
) -> list[Finding]:
    """Export everything, import it into an empty directory: nothing that went comes
    back there either (directives arrive as drafts, so only memories are compared)."""
    export = memory.path.parent / "export.jsonl"
    with export.open("w", encoding="utf-8") as sink:
        await export_memory(memory, sink)
    async with stress_memory(
        memory.path.parent / "imported", HashingEmbedder(DIMENSION)
    ) as imported:
        await import_memory(imported, export)
        await settle(imported)
        findings = await check_answers(
            imported, expected, executor, wait_s=30.0, directives=False
        )
    return [(invariant, f"after import: {message}") for invariant, message in findings]


@contextlib.asynccontextmanager
async def stress_memory(
    data_dir: Path, embedder: HashingEmbedder
) -> AsyncIterator[Memory]:
    async with open_memory(
        data_dir, CONFIG, clock=FixedDomainClock(), embedder=embedder
    ) as memory:
        yield memory


@attrs.define
class AgentBackups:
    """Each agent's latest export, in the run's directory, and what it holds."""

    directory: Path
    memory: Memory | None = None
    latest: dict[str, tuple[Path, Restored]] = attrs.field(factory=dict)
    taken: int = 0

    def _live(self) -> Memory:
        if self.memory is None:
            raise RuntimeError("no memory is open")
        return self.memory

    async def export(self, agent: str) -> frozenset[str]:
        self.taken += 1
        path = self.directory / f"backup-{self.taken}.jsonl"
        sink = io.StringIO()
        await export_memory(self._live(), sink, agent)
        text = sink.getvalue()
        await trio.Path(path).write_text(text, encoding="utf-8")
        markers, events = _recallable(text)
        held = Restored(
            frozenset(markers), frozenset(MARKER_PATTERN.findall(text)), events
        )
        self.latest[agent] = (path, held)
        return held.recallable

    async def restore(self, agent: str) -> Restored | None:
        if agent not in self.latest:
            return None
        path, held = self.latest[agent]
        await import_memory(self._live(), path)
        return held


def _recallable(export: str) -> tuple[set[str], frozenset[str]]:
    """Markers of what an export holds as recallable memory (active claims, superseded
    ones, which recall shows as history, and turns that are neither hidden nor
    withdrawn; directives are not memories), and the IDs of those turns."""
    held: set[str] = set()
    events: set[str] = set()
    for line in export.splitlines()[1:]:
        record = json.loads(line)
        kind = record.get("type")
        if kind == "claim" and record.get("lifecycle") not in {"active", "superseded"}:
            continue
        if kind == "event" and (record.get("hidden") or record.get("withdrawn")):
            continue
        if kind == "event":
            events.add(str(record.get("id")))
        if kind in {"claim", "event"}:
            held.update(MARKER_PATTERN.findall(str(record.get("text", ""))))
    return held, frozenset(events)


async def run_in_process(data_dir: Path, workload: Workload) -> RunResult:
    history = History()
    result = RunResult(workload, history)
    executor = executor_for(workload, history)
    embedders = [HashingEmbedder(DIMENSION), ReversedHashingEmbedder(DIMENSION)]
    active = 0

    async def maintain(memory: Memory, agent: str) -> None:
        supervisor = await runtime_core(memory).registry.get(agent)
        await supervisor.run_maintenance_pass()

    backups = AgentBackups(data_dir.parent)
    executor.backups = backups
    memory_scope = stress_memory(data_dir, embedders[active])
    memory = await memory_scope.__aenter__()
    try:
        for phase in workload.phases:
            backups.memory = memory
            executor.maintenance = lambda agent, m=memory: maintain(m, agent)
            await run_phase([memory], phase.clients, executor)
            await settle(memory)
            if phase.switch_after:
                active = 1 - active
                await memory.use_embedder(embedders[active])
                result.switches += 1
            if phase.restart_after:
                await memory_scope.__aexit__(None, None, None)
                memory_scope = stress_memory(data_dir, embedders[active])
                memory = await memory_scope.__aenter__()
                result.restarts += 1
        await settle(memory)
        try:
            await memory.drain(timeout_s=STOP_BUDGET_S)
        except DrainTimeoutError as error:
            result.findings.append(("I8", f"the final drain did not finish: {error}"))
        # Drained: forgotten text has left the disk, as the runtime left it running.
        expected = expectations(workload, history)
        result.findings += await check_files(memory, expected)
    finally:
        await memory_scope.__aexit__(None, None, None)
    # Checked after a clean stop and a fresh open: what was acknowledged survives the
    # restart, and the files on disk (the saved vector projection included) agree.
    async with stress_memory(data_dir, embedders[active]) as memory:
        await settle(memory)
        await _check(memory, result, executor, memory)
    result.findings += executor_findings(executor)
    return result


async def _stop_server(server: ServerProcess) -> list[Finding]:
    findings: list[Finding] = []
    server.process.send_signal(signal.SIGTERM)
    with trio.move_on_after(STOP_BUDGET_S) as waited:
        code = await server.process.wait()
        if code != 0:
            findings.append(("I8", f"the server exited {code} on SIGTERM"))
    if waited.cancelled_caught:
        findings.append(("I8", f"the server did not stop within {STOP_BUDGET_S:.0f} s"))
        server.process.kill()
        await server.process.wait()
    return findings


def _connections(clients: int) -> int:
    """The server's connection cap: the clients, and room for the checks' own."""
    return clients + 8


async def run_over_socket(
    data_dir: Path, socket: Path, workload: Workload, clients: int
) -> RunResult:
    """The workload through real clients of a real server (no embedder switches: the
    socket has no call for one; a restart is a real stop and start)."""
    history = History()
    result = RunResult(workload, history)
    executor = executor_for(workload, history)
    log = data_dir.parent / f"{data_dir.name}.server.log"
    server = await start_server(data_dir, socket, log, _connections(clients))
    try:
        for phase in workload.phases:
            async with contextlib.AsyncExitStack() as stack:
                apis: list[MemoryApi] = [
                    await stack.enter_async_context(open_unix_client(socket))
                    for _ in range(clients)
                ]
                await run_phase(apis, phase.clients, executor)
                await settle(apis[0])
            if phase.restart_after:
                result.findings += await _stop_server(server)
                server = await start_server(
                    data_dir, socket, log, _connections(clients)
                )
                result.restarts += 1
        async with open_unix_client(socket) as client:
            await settle(client)
            await _check(client, result, executor, None)
    finally:
        result.findings += await _stop_server(server)
    # What only the data directory shows, with the server gone; and the server's log.
    async with stress_memory(data_dir, HashingEmbedder(DIMENSION)) as memory:
        await _check(memory, result, executor, memory)
    logged = await trio.Path(log).read_text(errors="replace")
    for marker in MARKER_PATTERN.findall(logged):
        result.findings.append(("I7", f"the server log holds {marker}"))
    result.findings += executor_findings(executor)
    return result
