"""The socket load test: a real ``cairn serve --socket`` under many clients for a fixed
time, while other connections misbehave, and the server's resources sampled throughout.

What runs, at once, for ``profile.load_warmup_seconds`` and then ``profile.load_seconds``:

- ``profile.load_clients`` trio clients, each with two concurrent callers on its one
  connection, calling a seeded mix of ingest, recall, remember, forget, status and
  fetch_recall over agents that each have a canary (:mod:`cairn.stress.load_clients`):
  no answer or error shows a marker of another agent (I3), every call answers within
  its budget (I8);
- a disturber on connections of its own (:mod:`cairn.stress.load_probes`): malformed
  frames of every kind and bursts past the in-flight bound all through the run, a
  connection that never says hello, once the connections up to the server's cap and
  past it (each refusal typed), once a client that writes and never reads;
- a sampler reading the server's RSS and open descriptors from ``/proc`` every second.

Flat after warm-up. The server's memory grows with its first few hundred writes whatever
it keeps (SQLite's page caches, one per connection, fill as the database grows; malloc's
per-thread arenas and trio's worker threads come into use), about 40 KiB a write; on a
loaded two-core machine that takes longer than a short run lasts. So the clients first
run ``load_warmup_seconds`` unmeasured; the samples taken after it are cut in thirds and
the first is warm-up too. The median RSS of the last third may exceed the middle third's
by ``RSS_GROWTH_SLACK_KIB`` plus ``RSS_PER_WRITE_KIB`` for each write acknowledged
between the two: stored memories and their vectors are held in memory, so growth with
the data is not a leak; growth with the calls is (measured: about 7 KiB a write once
warm). The median descriptor count of the last third may exceed the middle third's by
``FD_GROWTH_SLACK``, and once the clients have gone the server holds what it held before
they came, within the same slack. Afterwards each agent
still recalls its canary (else the I3 scan proved nothing), a SIGTERM stops the server
within its budget, exit 0, with no traceback in its log, and, reopened in process, each
agent's export holds its canary and no marker of another agent.

Each lane's calls come from its own seeded generator, so a seed replays the same calls;
how they interleave is up to the scheduler (a violation lists the calls behind it).
"""

from __future__ import annotations

import io
import statistics
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from cairn.ipc.client import open_unix_client
from cairn.runtime.memory import open_memory
from cairn.runtime.threads import run_in_thread
from cairn.runtime.transfer import export_memory
from cairn.stress.load_clients import (
    MODE,
    Ledger,
    check_canaries,
    plant_canaries,
    run_clients,
)
from cairn.stress.load_probes import disturb
from cairn.stress.load_server import start_server, stop_server
from cairn.stress.report import ModeResult
from cairn.testing import HashingEmbedder

if TYPE_CHECKING:
    from cairn.stress.load_server import Sample, ServerProcess
    from cairn.stress.profiles import Profile

__all__ = ["check_flat", "run_load"]

RSS_GROWTH_SLACK_KIB = 4 * 1024
RSS_PER_WRITE_KIB = 8
"""A stored turn or remembered fact: its rows, a 256-float vector, maybe a claim's."""
FD_GROWTH_SLACK = 8
CONNECTION_HEADROOM = 8
"""The server's cap is the load clients plus this many: room for the disturber's."""
DESCRIPTORS_RETURN_S = 10.0
# Agents per client connection: several clients write to one agent at once.
_CLIENTS_PER_AGENT = 2


async def run_load(root: Path, seed: int, profile: Profile) -> ModeResult:
    """Serve ``profile.load_clients`` clients for ``profile.load_seconds`` (see the
    module docstring) with the data directory under ``root``; the figures and every
    violation found."""
    result = ModeResult(MODE, trials=1)
    ledger = Ledger(seed, result)
    clients = profile.load_clients
    agents = tuple(f"load-{n}" for n in range(max(2, clients // _CLIENTS_PER_AGENT)))
    files = trio.CapacityLimiter(1)
    await run_in_thread(lambda: root.mkdir(parents=True, exist_ok=True), limiter=files)
    # A Unix socket path must fit in 107 bytes: the socket lives in a short directory.
    sockets = Path(
        await run_in_thread(
            lambda: tempfile.mkdtemp(prefix="cairn-load-", dir="/tmp"), limiter=files
        )
    )
    began = trio.current_time()
    try:
        server = await start_server(
            root / "data",
            sockets / "cairn.sock",
            root / "server.log",
            clients + CONNECTION_HEADROOM,
        )
        try:
            await _run(server, ledger, agents, profile)
        finally:
            if server.process.poll() is None:
                await stop_server(server, ledger)
    finally:
        await run_in_thread(lambda: _remove(sockets), limiter=files)
    result.seconds = trio.current_time() - began
    return result


async def _run(
    server: ServerProcess, ledger: Ledger, agents: tuple[str, ...], profile: Profile
) -> None:
    figures = ledger.result.figures
    figures["clients"] = profile.load_clients
    figures["agents"] = len(agents)
    figures["max_connections"] = server.max_connections
    async with open_unix_client(server.socket_path) as setup:
        await plant_canaries(setup, ledger, agents)
    # Every agent open, no client connected: what the server holds on its own.
    baseline = await server.sample()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.sample_every_second, ledger)
        started = trio.current_time()
        warm = started + profile.load_warmup_seconds
        ledger.load_deadline = deadline = warm + profile.load_seconds
        async with trio.open_nursery() as load:
            load.start_soon(
                run_clients,
                server.socket_path,
                ledger,
                agents,
                profile.load_clients,
                deadline,
            )
            load.start_soon(disturb, server, ledger, warm, deadline)
        ended = trio.current_time()
        nursery.cancel_scope.cancel()
    calls = ledger.result.operations
    figures["calls"] = calls
    figures["calls_per_second"] = round(calls / max(ended - started, 1e-9), 1)
    check_flat([sample for sample in server.samples if sample.at >= warm], ledger)
    async with open_unix_client(server.socket_path) as final:
        await check_canaries(final, ledger, agents)
    if baseline is not None:
        await _check_descriptors_return(server, ledger, baseline.fds)
    await stop_server(server, ledger)
    await _check_exports(server.data_dir, ledger, agents)


async def _check_exports(
    data_dir: Path, ledger: Ledger, agents: tuple[str, ...]
) -> None:
    """I3 for exports: reopened once the server has stopped, each agent's export holds
    its own canary and no marker of another agent."""
    async with open_memory(data_dir, embedder=HashingEmbedder()) as memory:
        for agent in agents:
            sink = io.StringIO()
            await export_memory(memory, sink, agent)
            line = f"export {agent}"
            ledger.check_markers(agent, sink.getvalue(), line)
            ledger.result.count("exports_checked")
            if ledger.canary[agent] not in sink.getvalue():
                message = f"the export of {agent} lacks its canary"
                ledger.violation(
                    "I1", message, ledger.written[ledger.canary[agent]], line
                )


def _median(values: list[int]) -> float:
    return float(statistics.median(values))


def check_flat(samples: list[Sample], ledger: Ledger) -> None:
    """RSS and descriptors flat after warm-up (see the module docstring)."""
    figures = ledger.result.figures
    figures["samples"] = len(samples)
    if samples:
        for name in ("rss_kib", "fds"):
            values = [getattr(sample, name) for sample in samples]
            figures[f"{name}.start"] = values[0]
            figures[f"{name}.end"] = values[-1]
            figures[f"{name}.max"] = max(values)
    third = len(samples) // 3
    if third < 1:
        message = f"{len(samples)} resource samples: too few to tell"
        ledger.violation("I8", message, "sampler")
        return
    middle, late = samples[third : 2 * third], samples[-third:]
    rss_middle = _median([s.rss_kib for s in middle])
    rss_late = _median([s.rss_kib for s in late])
    fds_middle = _median([s.fds for s in middle])
    fds_late = _median([s.fds for s in late])
    writes = _median([s.writes for s in late]) - _median([s.writes for s in middle])
    rss_bound = rss_middle + RSS_GROWTH_SLACK_KIB + RSS_PER_WRITE_KIB * max(writes, 0.0)
    figures.update(
        {
            "rss_kib.middle_median": rss_middle,
            "rss_kib.late_median": rss_late,
            "rss_kib.late_bound": round(rss_bound),
            "fds.middle_median": fds_middle,
            "fds.late_median": fds_late,
        }
    )
    if rss_late > rss_bound:
        ledger.violation(
            "I8",
            f"server RSS grew after warm-up: median {rss_late:.0f} KiB in the last"
            f" third, {rss_middle:.0f} KiB in the middle one, {writes:.0f} writes"
            f" apart (bound {rss_bound:.0f} KiB)",
            "sampler",
        )
    if fds_late > fds_middle + FD_GROWTH_SLACK:
        ledger.violation(
            "I8",
            f"server descriptors grew after warm-up: median {fds_late:.0f} in the last"
            f" third, {fds_middle:.0f} in the middle one",
            "sampler",
        )


async def _check_descriptors_return(
    server: ServerProcess, ledger: Ledger, baseline: int
) -> None:
    """Once every client has gone the server holds what it held before they came (its
    closes of the last connections may lag a little: waited for, bounded)."""
    last: Sample | None = None
    with trio.move_on_after(DESCRIPTORS_RETURN_S):
        while (last := await server.sample()) is not None:
            if last.fds <= baseline + FD_GROWTH_SLACK:
                break
            await trio.sleep(0.1)
    figures = ledger.result.figures
    figures["fds.baseline"] = baseline
    if last is None:
        return  # the process is gone: stop_server says so
    figures["fds.after_clients"] = last.fds
    if last.fds > baseline + FD_GROWTH_SLACK:
        ledger.violation(
            "I8",
            f"the server holds {last.fds} descriptors after its clients left,"
            f" {baseline} before they came",
            "sampler",
        )


def _remove(directory: Path) -> None:
    for path in directory.iterdir():
        path.unlink()
    directory.rmdir()
