"""``maintain``: maintenance now instead of at the timer, on every surface. Two
restatements become one claim citing both; a drained runtime refuses it, since drain
pauses maintenance."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import trio
from tests.helpers import turn
from tests.ipc.harness import (
    SERVER_TIMEOUT_S,
    SocketServer,
    short_directory,
    start_socket_server,
)

from cairn import Memory
from cairn.api.protocol import MemoryApi
from cairn.api.reports import MaintenanceReport
from cairn.errors import DrainingError
from cairn.ipc import BlockingClient, open_unix_client

TEA_1 = "I really love oolong tea."
TEA_2 = "I love drinking oolong tea."


async def _tea(memory: MemoryApi, agent: str) -> list[tuple[str, ...]]:
    recall = await memory.recall(agent, "oolong tea", k=20)
    return [
        tuple(item.source_refs)
        for item in recall.items
        if item.kind != "evidence" and "oolong" in item.text
    ]


async def test_maintain_merges_restatements_now(memory: Memory) -> None:
    with trio.fail_after(30):
        await memory.ingest("a", [turn("e1", TEA_1), turn("e2", TEA_2, session="s2")])
        await memory.wait_idle("a")
        assert len(await _tea(memory, "a")) == 2  # the timer has not run
        report = await memory.maintain("a")
        assert report.agent_id == "a"
        assert report.batches >= 1
        assert report.settled >= 1
        assert report.remaining == 0
        (refs,) = await _tea(memory, "a")
        assert set(refs) == {"e1", "e2"}
        # Nothing left to do: a second call settles nothing.
        again = await memory.maintain("a")
        assert again == MaintenanceReport("a", 0, 0, 0)


async def test_maintain_is_refused_while_drained(memory: Memory) -> None:
    with trio.fail_after(30):
        await memory.ingest("a", [turn("e1", TEA_1), turn("e2", TEA_2, session="s2")])
        await memory.drain(10)
        with pytest.raises(DrainingError):
            await memory.maintain("a")
        assert len(await _tea(memory, "a")) == 2  # drain paused maintenance
        await memory.resume()
        assert (await memory.maintain("a")).settled >= 1
        assert len(await _tea(memory, "a")) == 1


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SocketServer]:
    data_dir = tmp_path_factory.mktemp("maintain") / "data"
    with short_directory() as sockets:
        started = start_socket_server(
            data_dir, sockets / "cairn.sock", data_dir.parent / "server.log"
        )
        try:
            yield started
        finally:
            assert started.stop() == 0, started.log()
        assert "Traceback" not in started.log(), started.log()


@pytest.mark.subprocess
async def test_maintain_over_a_socket_with_both_clients(server: SocketServer) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(server.socket_path) as client:
            await client.ingest(
                "ipc", [turn("e1", TEA_1), turn("e2", TEA_2, session="s2")]
            )
            await client.wait_idle("ipc")
            report = await client.maintain("ipc")
            assert isinstance(report, MaintenanceReport)
            assert report.settled >= 1
            (refs,) = await _tea(client, "ipc")
            assert set(refs) == {"e1", "e2"}
    with BlockingClient.connect_unix(server.socket_path) as blocking:
        assert blocking.maintain("ipc") == MaintenanceReport("ipc", 0, 0, 0)
