"""Real ``cairn serve`` processes for the IPC tests, and a raw frame-level connection.

Servers run through the test-owned entry point tests/support/serve_hashing.py (the real
command line with the hashing embedder injected), so no model is loaded; their stderr
goes to a log file the tests can read.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import msgspec
import trio
from tests.support.serve_hashing import hashing_cairn

from cairn.ipc.framing import FrameReader, decode_answer, encode_frame
from cairn.ipc.messages import PROTOCOL_VERSION, Hello

# The provider configuration of the machine running the tests must not leak in.
SERVER_ENV = {
    k: v
    for k, v in os.environ.items()
    if not k.startswith("CAIRN_EMBEDDING_") and k != "CAIRN_CONFIG"
}
# Bounds every wait on a real server (startup, a drain); generous for a loaded CI machine.
SERVER_TIMEOUT_S = 60.0


def serve_args(data_dir: Path, *transport: str) -> list[str]:
    """``cairn serve`` on ``data_dir`` with the hashing embedder."""
    return hashing_cairn("--data", str(data_dir), "serve", *transport)


def cairn_args(data_dir: Path, *args: str) -> list[str]:
    """The real ``cairn`` (``python -m cairn``, the configured embedder) on ``data_dir``."""
    return [sys.executable, "-m", "cairn", "--data", str(data_dir), *args]


@contextlib.contextmanager
def short_directory() -> Iterator[Path]:
    """A directory with a short path: a Unix socket path must fit in 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="cairn-ipc-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@attrs.define
class SocketServer:
    process: subprocess.Popen[bytes]
    socket_path: Path
    log_path: Path
    # The readiness line: {"listening", "pid", "max_connections"}.
    ready: dict[str, Any] = attrs.Factory(dict)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> int:
        """SIGTERM, then the exit code (a clean stop drains and exits 0)."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            return self.process.wait(SERVER_TIMEOUT_S)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            if self.process.stdout is not None:
                self.process.stdout.close()


def start_socket_server(
    data_dir: Path,
    socket_path: Path,
    log_path: Path,
    *extra: str,
    preexec_fn: Callable[[], object] | None = None,
) -> SocketServer:
    """Spawn ``cairn serve --socket`` and block until its readiness line."""
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            serve_args(data_dir, "--socket", str(socket_path), *extra),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            env=SERVER_ENV,
            preexec_fn=preexec_fn,  # noqa: PLW1509 - only resource limits, set in tests
        )
    assert process.stdout is not None
    line = process.stdout.readline()
    server = SocketServer(process, socket_path, log_path)
    if not line:
        server.stop()
        raise AssertionError(f"server did not start:\n{server.log()}")
    ready = json.loads(line)
    assert ready["listening"] == str(socket_path)
    server.ready = ready
    return server


@attrs.define
class RawConnection:
    """Frames by hand, for what a well-behaved client never sends."""

    stream: trio.abc.Stream
    reader: FrameReader = attrs.field(factory=lambda: FrameReader(1 << 26))

    async def send_bytes(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def send(self, message: msgspec.Struct) -> None:
        await self.stream.send_all(encode_frame(message))

    async def send_raw_message(self, message: dict[str, Any]) -> None:
        body = msgspec.msgpack.encode(message)
        await self.stream.send_all(len(body).to_bytes(4, "big") + body)

    async def answer(self) -> Any:
        """The next frame from the server, or None once it has closed the connection."""
        while (body := self.reader.next_frame()) is None:
            try:
                data = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:
                return None
            if not data:
                return None
            self.reader.feed(data)
        return decode_answer(body)

    async def hello(self, versions: list[int] | None = None) -> Any:
        await self.send(Hello(versions=versions or [PROTOCOL_VERSION], client="raw"))
        return await self.answer()


@contextlib.asynccontextmanager
async def raw_connection(socket_path: Path) -> AsyncIterator[RawConnection]:
    stream = await trio.open_unix_socket(str(socket_path))
    async with stream:
        yield RawConnection(stream)
