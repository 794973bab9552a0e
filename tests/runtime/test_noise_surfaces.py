"""``include_noise`` through every surface: the trio and blocking IPC clients against a
real socket server, the asyncio adapter, and ``cairn recall --include-noise``. Without it
each surface leaves the stored heartbeat out; with it the heartbeat comes back."""

from __future__ import annotations

# The asyncio adapter is one of the surfaces this file drives.
import json
import subprocess
from typing import TYPE_CHECKING

import trio
from tests.conftest import TEST_CONFIG
from tests.helpers import run_on_asyncio, turn
from tests.ipc.harness import (
    SERVER_ENV,
    SERVER_TIMEOUT_S,
    short_directory,
    start_socket_server,
)
from tests.support.serve_hashing import hashing_cairn

from cairn.hosts.asyncio_host import open_asyncio_memory
from cairn.ipc import BlockingClient, open_unix_client
from cairn.testing import FixedDomainClock, HashingEmbedder

if TYPE_CHECKING:
    from pathlib import Path

    from cairn import Recall

TURNS = [turn("hb", "[heartbeat] seq=9 status=alive"), turn("f", "I own a red kayak.")]
QUERY = "heartbeat status alive kayak"


def _ids(recall: Recall) -> set[str]:
    return {item.id for item in recall.items}


def test_both_ipc_clients_pass_include_noise(tmp_path: Path) -> None:
    async def trio_client(socket_path: Path) -> tuple[Recall, Recall]:
        with trio.fail_after(SERVER_TIMEOUT_S):
            async with open_unix_client(socket_path) as client:
                await client.ingest("a", TURNS)
                await client.wait_idle("a")
                return (
                    await client.recall("a", QUERY, wait_s=30.0),
                    await client.recall("a", QUERY, wait_s=30.0, include_noise=True),
                )

    with short_directory() as sockets:
        server = start_socket_server(
            tmp_path / "data", sockets / "cairn.sock", tmp_path / "server.log"
        )
        try:
            plain, noisy = trio.run(trio_client, server.socket_path)
            assert "hb" not in _ids(plain)
            assert {"hb", "f"} <= _ids(noisy)
            with BlockingClient.connect_unix(server.socket_path) as client:
                plain = client.recall("a", QUERY, wait_s=30.0)
                noisy = client.recall("a", QUERY, wait_s=30.0, include_noise=True)
            assert "hb" not in _ids(plain)
            assert "hb" in _ids(noisy)
        finally:
            assert server.stop() == 0, server.log()


def test_the_asyncio_adapter_passes_include_noise(tmp_path: Path) -> None:
    async def program() -> tuple[set[str], set[str]]:
        async with open_asyncio_memory(
            tmp_path / "data",
            TEST_CONFIG,
            clock=FixedDomainClock(),
            embedder=HashingEmbedder(),
        ) as memory:
            await memory.ingest("a", TURNS)
            await memory.wait_idle("a")
            plain = await memory.recall("a", QUERY)
            noisy = await memory.recall("a", QUERY, include_noise=True)
            return _ids(plain), _ids(noisy)

    plain, noisy = run_on_asyncio(program())
    assert "hb" not in plain
    assert "hb" in noisy


def _cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        hashing_cairn("--data", str(data), *args),
        capture_output=True,
        text=True,
        env=SERVER_ENV,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result


def test_the_recall_command_takes_include_noise(tmp_path: Path) -> None:
    data = tmp_path / "data"
    lines = [
        {"id": "hb", "session": "s1", "role": "user", "text": TURNS[0].text},
        {"id": "f", "session": "s1", "role": "user", "text": TURNS[1].text},
    ]
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    _cli(data, "ingest", "--agent", "a", str(path))

    plain = json.loads(_cli(data, "recall", "--agent", "a", QUERY, "--json").stdout)
    noisy = json.loads(
        _cli(data, "recall", "--agent", "a", QUERY, "--include-noise", "--json").stdout
    )

    assert "hb" not in {item["id"] for item in plain["items"]}
    assert "hb" in {item["id"] for item in noisy["items"]}
