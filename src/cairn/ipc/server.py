"""Serving the protocol on a byte stream: one reader, one writer, a task per request.

A connection never lets its client hold up the runtime or other clients:

- at most ``max_in_flight`` requests run at once; one more gets ``busy`` at once, unstarted;
- answers go through a bounded outbound queue with ``send_nowait``: a client that stops
  reading fills it, and the connection is closed (overrun), never waited on;
- a malformed frame gets an ``error`` frame and the connection goes on; an oversize header
  gets an ``error`` frame and the connection closes (the stream cannot be resynchronised);
- when the client closes its side, running requests finish within ``eof_grace_s`` and
  their answers are still sent (a pipe host may close stdin after its last request).

(tests/ipc/test_server.py protects each of these against a real ``cairn serve``.)
"""

from __future__ import annotations

import logging
import os
import socket
from typing import TYPE_CHECKING

import attrs
import trio

import cairn
from cairn.errors import CairnError, InvalidInputError
from cairn.ipc.codes import INTERNAL, code_for
from cairn.ipc.dispatch import dispatch
from cairn.ipc.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    FrameReader,
    RejectedFrameError,
    decode_hello,
    decode_request,
    encode_frame,
)
from cairn.ipc.messages import PROTOCOL_VERSION, Busy, Error, Request, Welcome
from cairn.runtime.memory import Memory

if TYPE_CHECKING:
    from pathlib import Path

    import msgspec

__all__ = ["ServerLimits", "serve_stream", "serve_unix_socket"]

logger = logging.getLogger("cairn.ipc.server")

_RECEIVE_BYTES = 64 * 1024
# Frames written in one send_all when several are queued: fewer syscalls under load.
_COALESCE_BYTES = 256 * 1024


@attrs.frozen
class ServerLimits:
    """Per-connection bounds. Every one caps memory or time a client can hold."""

    max_frame_bytes: int = attrs.field(
        default=DEFAULT_MAX_FRAME_BYTES, validator=attrs.validators.gt(0)
    )
    max_in_flight: int = attrs.field(default=32, validator=attrs.validators.gt(0))
    # Frames that may wait for the client to read them beyond one per in-flight request
    # (busy and error answers); past it the client is not reading and is dropped.
    outbound_slack: int = attrs.field(default=64, validator=attrs.validators.gt(0))
    handshake_timeout_s: float = attrs.field(
        default=10.0, validator=attrs.validators.gt(0)
    )
    eof_grace_s: float = attrs.field(default=30.0, validator=attrs.validators.gt(0))


@attrs.define(eq=False)
class _Connection:
    stream: trio.abc.Stream
    memory: Memory
    limits: ServerLimits
    label: str
    outbound_send: trio.MemorySendChannel[bytes]
    connection_scope: trio.CancelScope
    in_flight: int = 0

    def send(self, message: msgspec.Struct) -> None:
        """Queue one frame without waiting; a full queue closes the connection."""
        try:
            self.outbound_send.send_nowait(encode_frame(message))
        except trio.WouldBlock:
            logger.warning("%s: client does not read its answers; closing", self.label)
            self.connection_scope.cancel(reason="outbound queue overrun")
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    async def handshake(self, reader: FrameReader) -> bool:
        with trio.move_on_after(self.limits.handshake_timeout_s):
            try:
                body = await self._next_frame(reader)
                if body is None:
                    return False
                hello = decode_hello(body)
            except RejectedFrameError as error:
                self.send(Error(id=None, code=error.code, message=str(error)))
                return False
            if PROTOCOL_VERSION not in hello.versions:
                self.send(
                    Error(
                        id=None,
                        code="version_mismatch",
                        message=f"this server speaks protocol {PROTOCOL_VERSION},"
                        f" the client offered {hello.versions}",
                    )
                )
                return False
            self.send(
                Welcome(
                    version=PROTOCOL_VERSION,
                    server=f"cairn {cairn.__version__}",
                    max_frame_bytes=self.limits.max_frame_bytes,
                    max_in_flight=self.limits.max_in_flight,
                )
            )
            return True
        self.send(Error(id=None, code="handshake_required", message="no hello in time"))
        return False

    async def _next_frame(self, reader: FrameReader) -> bytes | None:
        """The next body, or None at end of stream. Raises RejectedFrameError (oversize)."""
        while True:
            body = reader.next_frame()
            if body is not None:
                return body
            try:
                data = await self.stream.receive_some(_RECEIVE_BYTES)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""  # reset by the peer: the same as it closing
            if not data:
                if reader.has_partial_frame:
                    logger.info("%s: closed in the middle of a frame", self.label)
                return None
            reader.feed(data)

    async def read_requests(self, reader: FrameReader, handlers: trio.Nursery) -> None:
        """Start a task per request until end of stream or an oversize frame."""
        while True:
            try:
                body = await self._next_frame(reader)
            except RejectedFrameError as error:
                self.send(Error(id=None, code=error.code, message=str(error)))
                return
            if body is None:
                return
            try:
                request = decode_request(body)
            except RejectedFrameError as error:
                self.send(
                    Error(id=error.request_id, code=error.code, message=str(error))
                )
                continue
            if self.in_flight >= self.limits.max_in_flight:
                self.send(Busy(id=request.id, max_in_flight=self.limits.max_in_flight))
                continue
            self.in_flight += 1
            handlers.start_soon(self.answer, request)

    async def answer(self, request: Request) -> None:
        try:
            response: msgspec.Struct = await dispatch(self.memory, request)
        except CairnError as error:
            response = Error(id=request.id, code=code_for(error), message=str(error))
        except Exception:
            # A bug of ours must not take the server down with it: log it, answer typed.
            logger.exception("%s: request %d failed", self.label, request.id)
            response = Error(
                id=request.id, code=INTERNAL, message="unexpected server error"
            )
        finally:
            self.in_flight -= 1
        self.send(response)


async def _write_frames(
    stream: trio.abc.Stream,
    outbound_receive: trio.MemoryReceiveChannel[bytes],
    connection_scope: trio.CancelScope,
) -> None:
    try:
        async with outbound_receive:
            async for frame in outbound_receive:
                chunk = bytearray(frame)
                while len(chunk) < _COALESCE_BYTES:
                    try:
                        chunk += outbound_receive.receive_nowait()
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                await stream.send_all(chunk)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        connection_scope.cancel(reason="client went away")


async def serve_stream(
    stream: trio.abc.Stream,
    memory: Memory,
    limits: ServerLimits | None = None,
    *,
    label: str = "client",
) -> None:
    """Serve one client on ``stream`` until it closes; never raises for client faults."""
    limits = limits or ServerLimits()
    outbound_send, outbound_receive = trio.open_memory_channel[bytes](
        limits.max_in_flight + limits.outbound_slack
    )
    reader = FrameReader(limits.max_frame_bytes)
    async with trio.open_nursery() as connection_nursery:
        connection_nursery.start_soon(
            _write_frames, stream, outbound_receive, connection_nursery.cancel_scope
        )
        connection = _Connection(
            stream,
            memory,
            limits,
            label,
            outbound_send,
            connection_nursery.cancel_scope,
        )
        async with outbound_send:
            if await connection.handshake(reader):
                async with trio.open_nursery() as handlers:
                    await connection.read_requests(reader, handlers)
                    # End of requests: running ones finish (bounded) and are answered.
                    handlers.cancel_scope.deadline = (
                        trio.current_time() + limits.eof_grace_s
                    )
        # outbound_send closed: the writer flushes what is queued (bounded: a client that
        # does not read cannot keep the connection), then ends.
        connection_nursery.cancel_scope.deadline = (
            trio.current_time() + limits.eof_grace_s
        )


async def serve_unix_socket(
    memory: Memory,
    path: Path,
    limits: ServerLimits | None = None,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on a Unix socket at ``path`` (mode 0600) and serve every client until cancelled.

    The caller holds the data directory's lock, so a socket file left at ``path`` is a
    dead server's and is replaced.
    """
    listening = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if await trio.Path(path).is_socket():
            await trio.Path(path).unlink()
        try:
            await listening.bind(str(path))
        except OSError as error:
            raise InvalidInputError(f"cannot listen on {path}: {error}") from None
        # Before listen(): nobody can connect yet, so no one ever sees a wider mode.
        os.chmod(path, 0o600)
        listening.listen(128)
    except BaseException:
        listening.close()
        raise
    listener = trio.SocketListener(listening)
    counter = 0

    async def handle(stream: trio.SocketStream) -> None:
        nonlocal counter
        counter += 1
        label = f"client {counter}"
        async with stream:
            try:
                await serve_stream(stream, memory, limits, label=label)
            except Exception:
                logger.exception("%s: connection failed", label)

    try:
        async with listener:
            task_status.started()
            await trio.serve_listeners(handle, [listener])
    finally:
        with trio.CancelScope(shield=True):
            await trio.Path(path).unlink(missing_ok=True)
