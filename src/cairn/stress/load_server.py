"""The load test's server: a real ``cairn serve --socket`` process with the hashing
embedder (``python -m cairn.stress.server``), its resource samples from ``/proc``, and
its stop, each bounded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import msgspec
import trio

from cairn.runtime.threads import run_in_thread

if TYPE_CHECKING:
    from cairn.stress.load_clients import Ledger

__all__ = [
    "STOP_BUDGET_S",
    "Sample",
    "ServerProcess",
    "server_environment",
    "start_server",
    "stop_server",
]

SERVER_START_S = 60.0
STOP_BUDGET_S = 60.0
SAMPLE_INTERVAL_S = 1.0
# A traceback in the log is a violation; this much of it goes into the report.
_TRACEBACK_CHARS = 1500


@attrs.frozen
class Sample:
    at: float
    rss_kib: int
    fds: int
    writes: int
    """Writes the load had acknowledged when the sample was taken."""


@attrs.define(eq=False)
class ServerProcess:
    process: trio.Process
    data_dir: Path
    socket_path: Path
    log_path: Path
    max_connections: int
    """The cap the server reported in its readiness line."""
    samples: list[Sample] = attrs.field(factory=list)
    _files: trio.CapacityLimiter = attrs.field(factory=lambda: trio.CapacityLimiter(1))

    async def log(self) -> str:
        path = self.log_path
        return await run_in_thread(
            lambda: path.read_text(encoding="utf-8", errors="replace"),
            limiter=self._files,
        )

    async def sample(self, writes: int = 0) -> Sample | None:
        """RSS and open descriptors now; None once the process is gone."""
        pid = self.process.pid
        try:
            rss_kib, fds = await run_in_thread(
                lambda: _read_sample(pid), limiter=self._files
            )
        except OSError:
            return None  # the checks after the run say why
        return Sample(trio.current_time(), rss_kib, fds, writes)

    async def sample_every_second(self, ledger: Ledger) -> None:
        while True:
            sample = await self.sample(ledger.writes)
            if sample is not None:
                self.samples.append(sample)
            await trio.sleep(SAMPLE_INTERVAL_S)


def _read_sample(pid: int) -> tuple[int, int]:
    rss_kib = 0
    with Path(f"/proc/{pid}/status").open(encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
    return rss_kib, len(os.listdir(f"/proc/{pid}/fd"))


def server_environment() -> dict[str, str]:
    """This process's environment without provider settings: the harness's servers run
    the hashing embedder and no text model, whatever the machine is configured with."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CAIRN_EMBEDDING_", "CAIRN_TEXT_"))
        and key != "CAIRN_CONFIG"
    }


async def start_server(
    data_dir: Path, socket_path: Path, log_path: Path, max_connections: int
) -> ServerProcess:
    """Spawn the server and wait (bounded) for its readiness line."""
    command = [
        sys.executable,
        "-m",
        "cairn.stress.server",
        "--data",
        str(data_dir),
        "serve",
        "--socket",
        str(socket_path),
        "--max-connections",
        str(max_connections),
    ]
    files = trio.CapacityLimiter(1)
    log = await run_in_thread(lambda: log_path.open("ab"), limiter=files)
    try:
        process = await trio.lowlevel.open_process(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log.fileno(),
            env=server_environment(),
        )
    finally:
        log.close()
    assert process.stdout is not None  # noqa: S101 - asked for above
    line = b""
    with trio.move_on_after(SERVER_START_S):
        while not line.endswith(b"\n"):
            chunk = await process.stdout.receive_some(4096)
            if not chunk:
                break
            line += chunk
    await process.stdout.aclose()
    try:
        served = int(msgspec.json.decode(line)["max_connections"])
    except (msgspec.DecodeError, KeyError, TypeError, ValueError):
        process.kill()
        await process.wait()
        text = await run_in_thread(log_path.read_text, limiter=files)
        raise RuntimeError(f"the server did not start:\n{text[-2000:]}") from None
    return ServerProcess(process, data_dir, socket_path, log_path, served)


async def stop_server(server: ServerProcess, ledger: Ledger) -> None:
    """SIGTERM; I8: it drains and exits 0 within ``STOP_BUDGET_S``, and its log holds
    no traceback."""
    process = server.process
    if process.poll() is not None:
        message = f"the server died during the load (exit {process.returncode})"
        ledger.violation("I8", message, "server")
        return
    process.send_signal(signal.SIGTERM)
    stopping = trio.current_time()
    with trio.move_on_after(STOP_BUDGET_S):
        await process.wait()
    ledger.result.figures["stop_seconds"] = round(trio.current_time() - stopping, 2)
    code = process.poll()
    if code is None:
        message = f"the server did not stop within {STOP_BUDGET_S:g} s"
        ledger.violation("I8", message, "stop")
        process.kill()
        await process.wait()
    elif code != 0:
        ledger.violation("I8", f"the server stopped with exit {code}", "stop")
    log = await server.log()
    if "Traceback" in log:
        start = log.index("Traceback")
        excerpt = log[start : start + _TRACEBACK_CHARS].splitlines()
        ledger.violation("I8", "the server logged a traceback", *excerpt)
