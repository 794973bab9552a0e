"""A server never takes over another server's socket: a second ``cairn serve`` (another
data directory, the same ``--socket``) is refused while the first listens, a socket file
nobody listens on any more is replaced, and a stopping server removes only the socket file
it bound itself, never a successor's at the same path."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from tests.helpers import turn
from tests.ipc.harness import (
    SERVER_ENV,
    SERVER_TIMEOUT_S,
    serve_args,
    short_directory,
    start_socket_server,
)

from cairn.cli.app import EXIT_IN_USE
from cairn.ipc import open_unix_client

pytestmark = pytest.mark.subprocess


@pytest.fixture
def sockets() -> Iterator[Path]:
    with short_directory() as path:
        yield path


def _identity(path: Path) -> tuple[int, int]:
    status = path.lstat()
    return status.st_dev, status.st_ino


async def _served_data_dir(socket_path: Path) -> str:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(socket_path) as client:
            return (await client.status()).data_dir


async def test_a_second_server_never_replaces_a_live_servers_socket(
    tmp_path: Path, sockets: Path
) -> None:
    socket_path = sockets / "cairn.sock"
    first = start_socket_server(tmp_path / "a", socket_path, tmp_path / "a.log")
    try:
        async with open_unix_client(socket_path) as client:
            await client.ingest("tenant", [turn("t1", "Tenant A keeps the ledger.")])
        bound = _identity(socket_path)

        second = subprocess.run(  # noqa: ASYNC221 - bounded by its timeout
            serve_args(tmp_path / "b", "--socket", str(socket_path)),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=SERVER_ENV,
            timeout=SERVER_TIMEOUT_S,
            check=False,
        )

        assert second.returncode == EXIT_IN_USE, second.stderr.decode()
        refusal = second.stderr.decode()
        assert f"another server (pid {first.process.pid}) listens on" in refusal
        assert str(socket_path) in refusal
        assert "Traceback" not in refusal
        # The first server still owns the path, and clients still reach its memory.
        assert _identity(socket_path) == bound
        assert await _served_data_dir(socket_path) == str(tmp_path / "a")
    finally:
        assert first.stop() == 0, first.log()


async def test_a_socket_nobody_listens_on_is_replaced(
    tmp_path: Path, sockets: Path
) -> None:
    socket_path = sockets / "cairn.sock"
    killed = start_socket_server(tmp_path / "a", socket_path, tmp_path / "a.log")
    killed.process.send_signal(signal.SIGKILL)
    killed.process.wait(SERVER_TIMEOUT_S)
    killed.stop()
    assert socket_path.is_socket()  # the dead server's file stays behind

    successor = start_socket_server(tmp_path / "b", socket_path, tmp_path / "b.log")
    try:
        assert await _served_data_dir(socket_path) == str(tmp_path / "b")
    finally:
        assert successor.stop() == 0, successor.log()


async def test_a_stopping_server_leaves_a_successors_socket_in_place(
    tmp_path: Path, sockets: Path
) -> None:
    socket_path = sockets / "cairn.sock"
    server = start_socket_server(tmp_path / "a", socket_path, tmp_path / "a.log")
    # Someone else now owns the path (its file replaced the server's).
    successor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(socket_path)
        successor.bind(str(socket_path))
        successor.listen(1)
        theirs = _identity(socket_path)

        assert server.stop() == 0, server.log()

        assert socket_path.is_socket()
        assert _identity(socket_path) == theirs
        assert "no longer this server's socket" in server.log()
    finally:
        successor.close()
