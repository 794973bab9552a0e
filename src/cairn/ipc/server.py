"""Serving the protocol on a byte stream: one reader, one writer, a task per request.

A connection never lets its client hold up the runtime or other clients:

- at most ``max_in_flight`` requests run at once; one more gets ``busy`` at once, unstarted;
- answers go through a bounded outbound queue with ``send_nowait``: a client that stops
  reading fills it, and the connection is closed (overrun), never waited on;
- a malformed frame gets an ``error`` frame and the connection goes on; an oversize header
  gets an ``error`` frame and the connection closes (the stream cannot be resynchronised);
- when the client closes its side, running requests finish within ``eof_grace_s`` and
  their answers are still sent (a pipe host may close stdin after its last request);
- a socket connection that has no request running and sends nothing for
  ``idle_timeout_s`` gets an ``idle_timeout`` error frame and is closed (waiting on a long
  request is not idle).

And no client can take the socket server down with its connections:

- at most ``max_connections`` are served at once; one more is answered with a
  ``too_many_connections`` error frame and closed, while the others go on;
- the cap is lowered, if need be, so that ``FD_RESERVE`` file descriptors stay free for
  the server's own work under ``RLIMIT_NOFILE`` (whose soft limit is raised towards the
  hard one when that makes room);
- an ``accept`` that fails for lack of descriptors or memory (``EMFILE``, ``ENFILE``,
  ``ENOBUFS``, ``ENOMEM``) is retried after a short pause, as ``trio.serve_listeners``
  does, never fatal.

(tests/ipc/test_server.py and tests/ipc/test_connections.py protect each of these against
a real ``cairn serve``.)
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import resource
import socket
import struct
from typing import TYPE_CHECKING, TypeVar

import attrs
import trio

import cairn
from cairn.errors import CairnError, InvalidInputError, SocketInUseError
from cairn.ipc.codes import IDLE_TIMEOUT, INTERNAL, TOO_MANY_CONNECTIONS, code_for
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
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    import msgspec

__all__ = [
    "FD_RESERVE",
    "ServerLimits",
    "connection_budget",
    "serve_stream",
    "serve_unix_socket",
]

logger = logging.getLogger("cairn.ipc.server")

_RECEIVE_BYTES = 64 * 1024
# Frames written in one send_all when several are queued: fewer syscalls under load.
_COALESCE_BYTES = 256 * 1024

# Descriptors kept free for the server's own work beside its connections. An idle server
# holds about 20 (SQLite: the database and its WAL for the writer and each reader, the
# shared memory file; the lock, the listener, stdio, trio's wakeup pipe and epoll); the
# HTTP pools of the providers take up to 16 sockets each, and vector files, exports and
# SQLite's temporary files are opened as needed. 128 leaves room for all of it.
FD_RESERVE = 128
# Connections past the cap that may be in the middle of their refusal at once; past it a
# connection is closed without the refusal frame (each holds a descriptor meanwhile).
_REFUSING_MAX = 16
# How long a refused client gets to read its refusal and hang up.
_REFUSAL_GRACE_S = 1.0
# accept(2) failing with one of these means the process or the system is short of
# descriptors or memory for now: wait and try again (trio.serve_listeners' list and pause).
_ACCEPT_CAPACITY_ERRNOS = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
)
_ACCEPT_BACKOFF_S = 0.1

# A connection that sends nothing for this long is closed (ServerLimits.idle_timeout_s).
_IDLE_TIMEOUT_S: float | None = 300.0

S = TypeVar("S", bound=trio.abc.AsyncResource)


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
    # Socket connections served at once (more are refused); see connection_budget.
    max_connections: int = attrs.field(default=256, validator=attrs.validators.gt(0))
    # A socket connection with no request running that sends nothing for this long after
    # its handshake is closed; None: never. Not applied to stdio (one host, its own pipe).
    idle_timeout_s: float | None = attrs.field(
        default=_IDLE_TIMEOUT_S,
        validator=attrs.validators.optional(attrs.validators.gt(0.0)),
    )


def connection_budget(requested: int) -> int:
    """How many connections to serve at once: ``requested``, or fewer if the descriptor
    limit would otherwise leave less than ``FD_RESERVE`` free.

    Raises this process's soft ``RLIMIT_NOFILE`` towards its hard limit first when the
    soft one is too low (a common default is 1024).
    """
    needed = requested + _REFUSING_MAX + FD_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    unlimited = resource.RLIM_INFINITY
    if soft != unlimited and soft < needed:
        raised = needed if hard == unlimited else min(hard, needed)
        if raised > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
                soft = raised
            except (ValueError, OSError) as error:
                logger.warning("cannot raise RLIMIT_NOFILE to %d: %s", raised, error)
    if soft == unlimited:
        return requested
    budget = max(1, min(requested, soft - _REFUSING_MAX - FD_RESERVE))
    if budget < requested:
        logger.warning(
            "RLIMIT_NOFILE %d leaves room for %d connections, not %d (%d descriptors"
            " kept for the server itself)",
            soft,
            budget,
            requested,
            FD_RESERVE,
        )
    return budget


@attrs.define(eq=False)
class _Connection:
    stream: trio.abc.Stream
    memory: Memory
    limits: ServerLimits
    label: str
    outbound_send: trio.MemorySendChannel[bytes]
    connection_scope: trio.CancelScope
    in_flight: int = 0
    # Cancelled by its deadline once the connection has been idle for idle_timeout_s; the
    # deadline moves on every frame received and whenever the last request is answered.
    idle_scope: trio.CancelScope | None = None

    def _restart_idle_clock(self) -> None:
        timeout = self.limits.idle_timeout_s
        if self.idle_scope is None or timeout is None:
            return
        self.idle_scope.deadline = (
            math.inf if self.in_flight else trio.current_time() + timeout
        )

    def send(self, message: msgspec.Struct) -> None:
        """Queue one frame without waiting; a full queue closes the connection."""
        if self.connection_scope.cancel_called:
            # Closing: nothing more goes out. The reader may still cut frames it already
            # buffered, and each would find the queue full and log the overrun again.
            return
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
            self._restart_idle_clock()

    async def read_requests(self, reader: FrameReader, handlers: trio.Nursery) -> None:
        """Start a task per request until end of stream, an oversize frame or idleness."""
        with trio.CancelScope() as idle_scope:
            self.idle_scope = idle_scope
            self._restart_idle_clock()
            await self._read_requests(reader, handlers)
        self.idle_scope = None
        if idle_scope.cancelled_caught:
            timeout = self.limits.idle_timeout_s
            logger.info("%s: idle for %g s; closing", self.label, timeout)
            self.send(
                Error(
                    id=None,
                    code=IDLE_TIMEOUT,
                    message=f"closed after {timeout:g} s without a request",
                )
            )

    async def _read_requests(self, reader: FrameReader, handlers: trio.Nursery) -> None:
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
            self._restart_idle_clock()
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
            self._restart_idle_clock()
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


async def accept_connections(
    listener: trio.abc.Listener[S],
    handler: Callable[[S], Awaitable[None]],
    handler_nursery: trio.Nursery,
) -> None:
    """Accept forever, starting ``handler(stream)`` for each connection in the nursery.

    An ``accept`` failing for lack of descriptors or memory is retried every
    ``_ACCEPT_BACKOFF_S`` (logged once per episode, not once per retry): the connections
    being served close in time and free what a new one needs. Any other error is raised.
    (Like ``trio.serve_listeners``; tests/ipc/test_connections.py.)
    """
    short_since: float | None = None
    while True:
        try:
            stream = await listener.accept()
        except OSError as error:
            if error.errno not in _ACCEPT_CAPACITY_ERRNOS:
                raise
            if short_since is None:
                short_since = trio.current_time()
                logger.warning(
                    "accept failed: %s (%s); retrying every %g s",
                    errno.errorcode.get(error.errno or 0, "?"),
                    os.strerror(error.errno or 0),
                    _ACCEPT_BACKOFF_S,
                )
            await trio.sleep(_ACCEPT_BACKOFF_S)
            continue
        if short_since is not None:
            logger.info(
                "accepting again after %.1f s", trio.current_time() - short_since
            )
            short_since = None
        handler_nursery.start_soon(_run_handler, handler, stream)


async def _run_handler(handler: Callable[[S], Awaitable[None]], stream: S) -> None:
    try:
        await handler(stream)
    finally:
        await trio.aclose_forcefully(stream)


async def _refuse(stream: trio.abc.Stream, max_connections: int) -> None:
    """Answer a connection past the cap with a typed refusal, then let it go.

    The refusal stands in for ``welcome``. What the client sent (its ``hello``) is read
    until it hangs up, within ``_REFUSAL_GRACE_S``: closing a Unix socket with unread data
    resets the peer's end.
    """
    refusal = Error(
        id=None,
        code=TOO_MANY_CONNECTIONS,
        message=f"the server already serves {max_connections} connections;"
        " try again later",
    )
    with trio.move_on_after(_REFUSAL_GRACE_S):
        try:
            await stream.send_all(encode_frame(refusal))
            while await stream.receive_some(_RECEIVE_BYTES):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass


@attrs.define(eq=False)
class _Admission:
    """Counts served and refused connections against the cap (one event loop: no race)."""

    max_connections: int
    serving: int = 0
    refusing: int = 0
    refused_since_full: int = 0

    def admit(self) -> bool:
        if self.serving < self.max_connections:
            if self.refused_since_full:
                logger.info(
                    "below the connection cap again; %d connections were refused",
                    self.refused_since_full,
                )
                self.refused_since_full = 0
            self.serving += 1
            return True
        if not self.refused_since_full:
            logger.warning(
                "at the connection cap (%d): refusing new connections",
                self.max_connections,
            )
        self.refused_since_full += 1
        return False


# How long a connect to an existing socket may take to say whether a server is there.
_PROBE_TIMEOUT_S = 5.0
# struct ucred: pid, uid, gid.
_PEER_CREDENTIALS = struct.Struct("3i")


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        status = os.lstat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _unlink_if_ours(path: Path, ours: tuple[int, int] | None) -> None:
    """Remove the socket file at ``path`` if it is still the one this server bound."""
    if ours is None or _file_identity(path) != ours:
        logger.warning("%s is no longer this server's socket: left in place", path)
        return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _peer_pid(probe: trio.socket.SocketType) -> int | None:
    """The pid of the process that accepted ``probe`` (Linux ``SO_PEERCRED``)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        credentials = probe.getsockopt(
            socket.SOL_SOCKET, option, _PEER_CREDENTIALS.size
        )
    except OSError:
        return None
    pid, _uid, _gid = _PEER_CREDENTIALS.unpack(credentials)
    return int(pid) or None


async def _remove_stale_socket(path: Path) -> None:
    """Unlink a socket file at ``path`` that no server listens on; raise
    :class:`SocketInUseError` if one does, or if that cannot be told.

    A connect tells: a listener accepts it (alive, even when it serves another data
    directory); ``ECONNREFUSED`` means nobody listens (a dead server's file).
    """
    if not await trio.Path(path).is_socket():
        return  # nothing there, or not a socket: bind says what is wrong
    probe = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with trio.move_on_after(_PROBE_TIMEOUT_S):
            try:
                await probe.connect(str(path))
            except FileNotFoundError:
                return  # gone meanwhile
            except ConnectionRefusedError:
                logger.info("%s: no server listens there; replacing it", path)
                with contextlib.suppress(FileNotFoundError):
                    await trio.Path(path).unlink()
                return
            except OSError as error:
                raise SocketInUseError(
                    f"cannot tell whether a server listens on {path} ({error.strerror});"
                    " it is left in place: remove it or give this server another"
                    " --socket path"
                ) from None
            pid = _peer_pid(probe)
            owner = "another server" if pid is None else f"another server (pid {pid})"
            raise SocketInUseError(
                f"{owner} listens on {path}; a live server's socket is never"
                " replaced: stop it first or give this server another --socket path"
            )
        # A listener that does not even accept within the probe's time is still alive.
        raise SocketInUseError(
            f"a server holds {path} but did not answer; it is left in place: give this"
            " server another --socket path"
        )
    finally:
        probe.close()


async def serve_unix_socket(
    memory: Memory,
    path: Path,
    limits: ServerLimits | None = None,
    *,
    task_status: trio.TaskStatus[ServerLimits] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on a Unix socket at ``path`` (mode 0600) and serve every client until cancelled.

    A socket file left at ``path`` is replaced only when no server listens on it (a
    dead server's); a live one, whatever data directory it serves, makes this raise
    :class:`SocketInUseError` and its socket is left alone. At the end only the file
    this server bound is removed. ``task_status.started`` gets the limits in force:
    the connection cap may be lower than asked (:func:`connection_budget`, which may
    also raise this process's soft ``RLIMIT_NOFILE``).
    """
    limits = limits or ServerLimits()
    limits = attrs.evolve(
        limits, max_connections=connection_budget(limits.max_connections)
    )
    await _remove_stale_socket(path)
    listening = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            await listening.bind(str(path))
        except OSError as error:
            raise InvalidInputError(f"cannot listen on {path}: {error}") from None
        # Before listen(): nobody can connect yet, so no one ever sees a wider mode.
        os.chmod(path, 0o600)
        # The file this server made: at shutdown it removes that one only, never a
        # successor's socket bound at the same path meanwhile.
        ours = _file_identity(path)
        listening.listen(128)
    except BaseException:
        listening.close()
        raise
    listener = trio.SocketListener(listening)
    admission = _Admission(limits.max_connections)
    counter = 0

    async def handle(stream: trio.SocketStream) -> None:
        nonlocal counter
        if not admission.admit():
            if admission.refusing < _REFUSING_MAX:
                admission.refusing += 1
                try:
                    await _refuse(stream, limits.max_connections)
                finally:
                    admission.refusing -= 1
            return
        counter += 1
        label = f"client {counter}"
        try:
            await serve_stream(stream, memory, limits, label=label)
        except Exception:
            logger.exception("%s: connection failed", label)
        finally:
            admission.serving -= 1

    try:
        async with listener, trio.open_nursery() as handlers:
            task_status.started(limits)
            await accept_connections(listener, handle, handlers)
    finally:
        _unlink_if_ours(path, ours)
