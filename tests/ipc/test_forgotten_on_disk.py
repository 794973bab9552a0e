"""A real ``cairn serve`` process: after a forget or a clear, and a SIGKILL, no file of
the data directory (the database, its WAL and shared memory, the vector files) nor the
server's log holds the forgotten words, and none does after the next open either."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import trio
from tests.conftest import open_test_memory
from tests.helpers import files_holding, turn
from tests.ipc.harness import SERVER_TIMEOUT_S, short_directory, start_socket_server

from cairn.ipc import open_unix_client

pytestmark = pytest.mark.subprocess

SECRET = "Zanzibarquokka ledgers hide the vexillumtrombone password"
# The words and the tails of their stems (tests.helpers.files_holding).
FRAGMENTS = ("zanzibarquokka", "ibarquokk", "vexillumtrombon", "llumtrombon")


async def _forget_and_kill(
    data_dir: Path, log: Path, operation: str, *, drain: bool
) -> None:
    with short_directory() as sockets:
        server = start_socket_server(data_dir, sockets / "cairn.sock", log)
        try:
            with trio.fail_after(SERVER_TIMEOUT_S):
                async with open_unix_client(server.socket_path) as client:
                    await client.ingest("b", [turn("e1", "I spend Sundays gardening.")])
                    stored = await client.remember("a", SECRET, by="user")
                    assert stored.claim_id is not None
                    recall = await client.recall(
                        "a", "Zanzibarquokka vexillumtrombone", wait_s=30
                    )
                    assert "Zanzibarquokka" in recall.memory_block
                    await client.wait_idle("a")
                    if operation == "clear":
                        await client.clear("a")
                    else:
                        await client.forget("a", stored.claim_id)
                    if drain:
                        # Accepted work has settled, forgotten text off the disk included.
                        await client.drain()
            server.process.send_signal(signal.SIGKILL)
            assert server.process.wait(SERVER_TIMEOUT_S) == -signal.SIGKILL
        finally:
            server.stop()


async def _reopened_clean(data_dir: Path, log: Path) -> None:
    async with open_test_memory(data_dir) as memory:
        assert files_holding(data_dir, FRAGMENTS, log) == {}
        recall = await memory.recall("a", "Zanzibarquokka vexillumtrombone", k=5)
        assert "Zanzibarquokka" not in recall.memory_block
    assert files_holding(data_dir, FRAGMENTS, log) == {}
    assert files_holding(data_dir, ["gardening"])  # the scan sees text still stored


@pytest.mark.parametrize("operation", ["forget", "clear"])
async def test_after_a_drain_and_sigkill_no_file_holds_the_forgotten_text(
    tmp_path: Path, operation: str
) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "server.log"
    await _forget_and_kill(data_dir, log, operation, drain=True)
    assert files_holding(data_dir, FRAGMENTS, log) == {}
    await _reopened_clean(data_dir, log)


async def test_a_sigkill_right_after_the_forget_is_scrubbed_at_the_next_open(
    tmp_path: Path,
) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "server.log"
    await _forget_and_kill(data_dir, log, "forget", drain=False)
    await _reopened_clean(data_dir, log)
