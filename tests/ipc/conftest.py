"""A socket server shared by the tests of a module (each test uses its own agents)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.ipc.harness import SocketServer, short_directory, start_socket_server


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SocketServer]:
    data_dir = tmp_path_factory.mktemp("shared") / "data"
    with short_directory() as sockets:
        server = start_socket_server(
            data_dir, sockets / "cairn.sock", data_dir.parent / "server.log"
        )
        try:
            yield server
        finally:
            assert server.stop() == 0, server.log()
        # Misbehaving clients are answered and logged, never a traceback.
        assert "Traceback" not in server.log(), server.log()
