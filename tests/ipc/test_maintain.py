"""``maintain`` over a socket, with the trio and the blocking client: the same report
as embedded (tests/runtime/test_maintain.py)."""

from __future__ import annotations

import pytest
import trio
from tests.helpers import turn
from tests.ipc.harness import SERVER_TIMEOUT_S, SocketServer
from tests.runtime.test_maintain import TEA_1, TEA_2, tea_sources

from cairn.api.reports import MaintenanceReport
from cairn.ipc import BlockingClient, open_unix_client


@pytest.mark.subprocess
async def test_maintain_over_a_socket_with_both_clients(
    shared_server: SocketServer,
) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            await client.ingest(
                "ipc", [turn("e1", TEA_1), turn("e2", TEA_2, session="s2")]
            )
            await client.wait_idle("ipc")
            report = await client.maintain("ipc")
            assert isinstance(report, MaintenanceReport)
            assert report.settled >= 1
            (refs,) = await tea_sources(client, "ipc")
            assert set(refs) == {"e1", "e2"}
    with BlockingClient.connect_unix(shared_server.socket_path) as blocking:
        assert blocking.maintain("ipc") == MaintenanceReport("ipc", 0, 0, 0)
