"""A cold server's first recall is not empty: over a socket and over stdio, a real
``cairn serve`` whose query model is still loading (tests/support/serve_cold.py) answers
the first recall on time with the lexical candidates (``partial``), and the complete
result is fetched by its request ID once the model has loaded."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from tests.conftest import open_test_memory
from tests.helpers import turn
from tests.ipc.harness import (
    SERVER_ENV,
    SERVER_TIMEOUT_S,
    SocketServer,
    short_directory,
)
from tests.support.serve_cold import LOADED_ENV, cold_cairn

from cairn import Degradation, MemoryConfig, RecallStatus
from cairn.ipc import open_stdio_client, open_unix_client
from cairn.ipc.client import Client
from cairn.retrieval.types import Recall
from cairn.runtime.threads import run_in_thread

pytestmark = pytest.mark.subprocess

WAIT_S = 0.5
# What a recall over IPC may take beyond its wait budget: framing, the socket, a loaded
# two-core machine's scheduling.
TRANSPORT_SLACK_S = 2.0


async def _prepare(data_dir: Path) -> None:
    """Turns stored and embedded by an earlier run (same embedding identity)."""
    async with open_test_memory(
        data_dir, MemoryConfig(recall_wait_s=30.0, extraction_linger_s=0.001)
    ) as memory:
        await memory.ingest(
            "a",
            [
                turn("e1", "I adopted a grey cat called Miso.", session="s1"),
                turn("e2", "I work as a photographer.", session="s2"),
            ],
        )
        await memory.wait_idle("a")


@contextlib.asynccontextmanager
async def _cold_client(
    data_dir: Path, transport: str, loaded: Path
) -> AsyncIterator[Client]:
    env = {**SERVER_ENV, LOADED_ENV: str(loaded)}
    if transport == "stdio":
        command = cold_cairn("--data", str(data_dir), "serve", "--stdio")
        async with open_stdio_client(data_dir, env=env, command=command) as client:
            yield client
        return
    with short_directory() as sockets:
        socket_path = sockets / "cairn.sock"
        log_path = data_dir.parent / "server.log"
        server = await run_in_thread(
            lambda: _start_socket_server(data_dir, socket_path, log_path, env),
            limiter=trio.CapacityLimiter(1),
        )
        try:
            async with open_unix_client(socket_path) as client:
                yield client
        finally:
            assert server.stop() == 0, server.log()


def _start_socket_server(
    data_dir: Path, socket_path: Path, log_path: Path, env: dict[str, str]
) -> SocketServer:
    """``cairn serve --socket`` with the cold model, once its readiness line is out."""
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            cold_cairn("--data", str(data_dir), "serve", "--socket", str(socket_path)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
        )
    server = SocketServer(process, socket_path, log_path)
    assert process.stdout is not None
    if not process.stdout.readline():
        server.stop()
        raise AssertionError(f"server did not start:\n{server.log()}")
    return server


async def _complete(client: Client, request_id: str) -> Recall:
    for _ in range(int(SERVER_TIMEOUT_S / 0.05)):
        late = await client.fetch_recall("a", request_id)
        if late.status is RecallStatus.OK:
            return late
        await trio.sleep(0.05)  # the server stores it once its model has loaded
    raise AssertionError("the complete result never arrived")


@pytest.mark.parametrize("transport", ["socket", "stdio"])
async def test_a_cold_servers_first_recall_is_not_empty(
    tmp_path: Path, transport: str
) -> None:
    data_dir = tmp_path / "data"
    loaded = tmp_path / "model-loaded"
    await _prepare(data_dir)
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with _cold_client(data_dir, transport, loaded) as client:
            started = trio.current_time()
            first = await client.recall("a", "Miso camera", wait_s=WAIT_S)
            elapsed_s = trio.current_time() - started
            assert first.status is RecallStatus.PARTIAL, first
            assert [item.source_refs for item in first.items] == [("e1",)]
            assert first.manifest is not None
            assert Degradation.VECTOR_PENDING in first.manifest.degradations
            assert elapsed_s < WAIT_S + TRANSPORT_SLACK_S
            assert (await client.status()).embedder_warm == "warming"

            loaded.touch()
            complete = await _complete(client, first.request_id)
            assert complete.manifest is not None
            assert Degradation.VECTOR_PENDING not in complete.manifest.degradations
            refs = {ref for item in complete.items for ref in item.source_refs}
            assert refs == {"e1", "e2"}  # the vector side's turn joined
            assert (await client.status()).embedder_warm == "warm"
