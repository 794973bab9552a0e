"""``cairn serve`` and ``cairn drain``: the process around the server.

``serve`` takes the data directory's lock (``ipc/directory.py``: an ``flock`` on
``server.lock``, released by the kernel when the process dies, so a crashed server never
leaves a stale lock), opens the memory runtime, ingests the turns coding-agent hooks
spooled while no server ran (cairn.hooks.replay), publishes ``server.json`` once it accepts
connections, serves stdio or a Unix socket until end of input or SIGTERM/SIGINT, then
withdraws the record and closes the runtime (which drains accepted work).

The embedder is the configured one unless the caller passes its own (``run_server``'s
``embedder``): tests start servers through their own entry point with a fast
deterministic embedder (tests/support/serve_hashing.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

import attrs
import trio

from cairn.errors import CairnError
from cairn.hooks.replay import drain_spool
from cairn.hooks.spool import spool_of
from cairn.ipc.client import open_unix_client
from cairn.ipc.directory import ServerRecord, hold_data_directory, started_now
from cairn.ipc.server import ServerLimits, serve_stream, serve_unix_socket
from cairn.runtime.memory import open_memory

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from cairn.ipc.directory import DirectoryLock
    from cairn.providers.embedding import EmbeddingProvider
    from cairn.runtime.memory import Memory

__all__ = ["request_drain", "run_server"]

logger = logging.getLogger("cairn.ipc.serve")


def _stdio_stream() -> trio.StapledStream[
    trio.lowlevel.FdStream, trio.lowlevel.FdStream
]:
    """Frames on stdin/stdout; anything else printed to stdout goes to stderr instead."""
    frames_in = os.dup(sys.stdin.fileno())
    frames_out = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return trio.StapledStream(
        trio.lowlevel.FdStream(frames_out), trio.lowlevel.FdStream(frames_in)
    )


async def _watch_signals(
    signals: AsyncIterator[int], serving_scope: trio.CancelScope
) -> None:
    """The first SIGTERM/SIGINT stops serving; later ones are absorbed while the runtime
    drains (the receiver stays installed until the process is done, so a repeated signal
    can never kill a drain half-way)."""
    async for number in signals:
        name = signal.Signals(number).name
        if serving_scope.cancel_called:
            logger.info("cairn serve: %s, already stopping (draining)", name)
            continue
        logger.info("cairn serve: %s, stopping", name)
        serving_scope.cancel(reason="signal")


async def _serve_transport(
    memory: Memory,
    stdio: trio.StapledStream[trio.lowlevel.FdStream, trio.lowlevel.FdStream] | None,
    socket_path: Path | None,
    limits: ServerLimits,
    lock: DirectoryLock,
    record: ServerRecord,
) -> None:
    """Serve on the transport; ``record`` is published in server.json meanwhile."""
    if stdio is not None:
        logger.info("cairn serve: stdio, data %s", memory.path)
        lock.publish(record)
        async with stdio:
            try:
                # The one connection is the host's own pipe: never closed for idleness.
                stdio_limits = attrs.evolve(limits, idle_timeout_s=None)
                await serve_stream(stdio, memory, stdio_limits, label="stdio")
            finally:
                lock.withdraw()
                # FdStream made the pipes non-blocking; their descriptions may be
                # shared with the host, so leave them as they were found.
                for end in (stdio.send_stream, stdio.receive_stream):
                    with contextlib.suppress(OSError):
                        os.set_blocking(end.fileno(), True)
        return
    assert socket_path is not None  # noqa: S101 - the other transport
    async with trio.open_nursery() as nursery:
        served: ServerLimits = await nursery.start(
            serve_unix_socket, memory, socket_path, limits
        )
        # CLI commands on this data directory find the socket here (ipc/directory.py).
        lock.publish(record)
        try:
            # The readiness line: a supervisor (or a test) may wait for it.
            ready = {
                "listening": str(socket_path),
                "pid": os.getpid(),
                "max_connections": served.max_connections,
            }
            sys.stdout.write(json.dumps(ready) + "\n")
            sys.stdout.flush()
            logger.info(
                "cairn serve: listening on %s (up to %d connections), data %s",
                socket_path,
                served.max_connections,
                memory.path,
            )
            await trio.sleep_forever()
        finally:
            # No new client should try the socket from here on: it is closing.
            lock.withdraw()


async def _drain_hook_spool(memory: Memory, data_dir: Path) -> None:
    """Ingest the hook spool; a failure is logged and leaves the rest for later (a
    hook call drains it too), never keeps the server from serving."""
    try:
        await drain_spool(memory, spool_of(data_dir))
    except CairnError as error:
        logger.warning("cairn serve: the hook spool stays for later: %s", error)


async def _serve(
    data_dir: Path,
    socket_path: Path | None,
    limits: ServerLimits,
    embedder: EmbeddingProvider | None,
    lock: DirectoryLock,
    record: ServerRecord,
) -> None:
    stdio = _stdio_stream() if socket_path is None else None
    serving_scope = trio.CancelScope()
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as watcher:
            watcher.start_soon(_watch_signals, signals, serving_scope)
            async with open_memory(data_dir, embedder=embedder) as memory:
                with serving_scope:
                    # Turns hooks spooled while no server ran, stored before any
                    # client can reach this one (so no hook drains beside it).
                    await _drain_hook_spool(memory, data_dir)
                    await _serve_transport(
                        memory, stdio, socket_path, limits, lock, record
                    )
                # Leaving open_memory (outside the serving scope) drains accepted work.
            watcher.cancel_scope.cancel(reason="stopped")
    logger.info("cairn serve: stopped")


def run_server(
    data_dir: Path,
    *,
    socket_path: Path | None,
    limits: ServerLimits | None = None,
    embedder: EmbeddingProvider | None = None,
) -> int:
    """Serve until end of input (stdio) or a signal; the process exit code.

    Without an ``embedder`` the configured one serves (``cairn.toml``/the environment).
    Raises DataDirectoryInUseError if another process holds the data directory.
    """
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(name)s: %(message)s"
    )
    # Published in server.json once serving. The socket is bound as given (a relative
    # path can keep a deep one under the Unix limit) but published absolute: commands may
    # run from another working directory.
    record = ServerRecord(
        os.getpid(),
        "stdio" if socket_path is None else "socket",
        None if socket_path is None else socket_path.absolute(),
        started_now(),
    )
    transport = "--stdio" if socket_path is None else f"--socket {socket_path}"
    with hold_data_directory(
        data_dir, role="server", command=f"cairn serve {transport}"
    ) as lock:
        try:
            trio.run(
                _serve,
                data_dir,
                socket_path,
                limits or ServerLimits(),
                embedder,
                lock,
                record,
            )
        except BaseExceptionGroup as group:
            # Nurseries wrap; an operator should read "cannot listen on …", not a group.
            reason = _only_cairn_error(group)
            if reason is None:
                raise
            raise reason from None
    return 0


def _only_cairn_error(error: BaseException) -> CairnError | None:
    """The one CairnError a nest of exception groups holds, if that is all it holds."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error if isinstance(error, CairnError) else None


async def request_drain(
    socket_path: Path, *, timeout_s: float | None, resume: bool
) -> dict[str, Any]:
    """Ask the server at ``socket_path`` to drain (or to resume); its report."""
    async with open_unix_client(socket_path) as client:
        if resume:
            await client.resume()
            return {"resumed": True}
        report = await client.drain(timeout_s)
        return {"drained": True, "agents": report.agents, "elapsed_s": report.elapsed_s}
