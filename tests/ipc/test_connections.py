"""No client can take the socket server down with its connections: past the connection
cap a connection is refused with a typed error while the others are served, file
descriptors stay in reserve for the server's own work, idle connections are closed (a
connection waiting on a long request is not idle), and an ``accept`` short of descriptors
is retried, never fatal."""

from __future__ import annotations

import errno
import os
import resource
from collections.abc import Sequence
from pathlib import Path

import pytest
import trio
import trio.testing
from tests.conftest import open_test_memory
from tests.fakes import GatedDocuments
from tests.helpers import turn
from tests.ipc.harness import (
    SERVER_TIMEOUT_S,
    RawConnection,
    SocketServer,
    raw_connection,
    short_directory,
    start_socket_server,
)

from cairn.errors import ConnectionLostError, TooManyConnectionsError
from cairn.ipc import ServerLimits, open_unix_client
from cairn.ipc.framing import encode_frame
from cairn.ipc.messages import (
    PROTOCOL_VERSION,
    Error,
    Hello,
    IngestRequest,
    PingRequest,
    PingResult,
    TurnMessage,
    WaitIdleRequest,
    WaitIdleResult,
    Welcome,
)
from cairn.ipc.server import FD_RESERVE, accept_connections, serve_unix_socket

# What a local process opened in the incident: more than a default soft limit of 1024.
FLOOD = 1100
SERVER_SOFT_NOFILE = 1024


def _lower_descriptor_limit() -> None:
    """In the server child: the common default soft limit, so 1,100 would exhaust it."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (SERVER_SOFT_NOFILE, hard))


def _room_for_the_flood() -> None:
    """This test process needs a descriptor per connection it opens, and some more."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = FLOOD + 512
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.skip(f"RLIMIT_NOFILE hard limit {hard} < {needed}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def _open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def _flood(server: SocketServer, hoard: list[trio.SocketStream]) -> int:
    """Open FLOOD connections one after the other, each with its hello; keep the
    welcomed ones open and idle in ``hoard``; returns how many were refused (typed)."""
    refused = 0
    for number in range(FLOOD):
        stream = await trio.open_unix_socket(str(server.socket_path))
        answer = None
        with trio.move_on_after(10):
            answer = await RawConnection(stream).hello()
        if answer is None:
            await stream.aclose()
            pytest.fail(
                f"connection {number} got no answer: the server stopped serving\n"
                f"{server.log()[-2000:]}"
            )
        if isinstance(answer, Welcome):
            hoard.append(stream)
            continue
        assert isinstance(answer, Error), answer
        assert (answer.id, answer.code) == (None, "too_many_connections")
        assert "connections" in answer.message
        refused += 1
        await stream.aclose()
    return refused


async def _connect_once_there_is_room(path: Path) -> None:
    for _ in range(400):  # bounded: the server sees the hoard's closes soon
        try:
            async with open_unix_client(path) as client:
                await client.ping()
        except TooManyConnectionsError:
            await trio.sleep(0.05)
        else:
            return
    pytest.fail("no room after the hoard closed")


@pytest.mark.subprocess
async def test_a_flood_of_idle_connections_is_refused_past_the_cap_and_others_go_on(
    tmp_path: Path,
) -> None:
    _room_for_the_flood()
    with short_directory() as sockets:
        server = start_socket_server(
            tmp_path / "data",
            sockets / "cairn.sock",
            tmp_path / "server.log",
            preexec_fn=_lower_descriptor_limit,
        )
        path = server.socket_path
        hoard: list[trio.SocketStream] = []
        try:
            cap = server.ready.get("max_connections", FLOOD + 1)
            with trio.fail_after(SERVER_TIMEOUT_S * 2):
                async with open_unix_client(path) as working:
                    await working.ping()
                    refused = await _flood(server, hoard)
                    # The working client holds one of the cap's connections.
                    assert len(hoard) == cap - 1
                    assert refused == FLOOD - len(hoard)
                    # Descriptors stayed in reserve for the server's own work.
                    in_use = _open_descriptors(server.process.pid)
                    assert in_use <= SERVER_SOFT_NOFILE - FD_RESERVE, in_use

                    # Meanwhile the client already connected is served as usual.
                    report = await working.ingest(
                        "flood", [turn("f1", "I keep bees in Évora.")]
                    )
                    assert report.ingested == 1
                    await working.wait_idle("flood")
                    recall = await working.recall("flood", "bees", wait_s=30.0)
                    assert recall.items[0].source_refs == ("f1",)

                    # A new client is refused with the typed error, not left hanging.
                    with pytest.raises(TooManyConnectionsError):
                        async with open_unix_client(path):
                            pass

                    # Once the hoard goes, there is room again.
                    for stream in hoard:
                        await stream.aclose()
                    hoard.clear()
                    await _connect_once_there_is_room(path)
        finally:
            for stream in hoard:
                await trio.aclose_forcefully(stream)
            assert server.stop() == 0, server.log()
        log = server.log()
        assert "at the connection cap" in log
        assert "Traceback" not in log


@pytest.mark.subprocess
async def test_idle_connections_are_closed_after_the_idle_timeout(
    tmp_path: Path,
) -> None:
    with short_directory() as sockets:
        server = start_socket_server(
            tmp_path / "data",
            sockets / "cairn.sock",
            tmp_path / "server.log",
            "--idle-timeout",
            "0.5",
        )
        try:
            with trio.fail_after(SERVER_TIMEOUT_S):
                async with open_unix_client(server.socket_path) as client:
                    await client.ping()
                    async with trio.open_nursery() as nursery:
                        for _ in range(20):
                            nursery.start_soon(_closed_for_idleness, server.socket_path)
                    # The trio client has been idle at least as long: it is gone too.
                    with pytest.raises(ConnectionLostError):
                        await client.ping()
                # A new connection is served as usual.
                async with open_unix_client(server.socket_path) as client:
                    assert (await client.status()).data_dir
        finally:
            assert server.stop() == 0, server.log()
        assert "idle for 0.5 s; closing" in server.log()


async def _closed_for_idleness(path: Path) -> None:
    async with raw_connection(path) as raw:
        assert isinstance(await raw.hello(), Welcome)
        closing = await raw.answer()
        assert isinstance(closing, Error)
        assert (closing.id, closing.code) == (None, "idle_timeout")
        assert await raw.answer() is None


async def test_a_connection_waiting_on_a_long_request_is_not_idle(
    tmp_path: Path,
) -> None:
    """A ``wait_idle`` held up by a gated embedder outlasts the idle timeout (proved by a
    later connection being closed for idleness first); its connection stays open and gets
    the answer, and only then starts counting as idle."""
    embedder = GatedDocuments()
    limits = ServerLimits(idle_timeout_s=1.0)
    message = TurnMessage(event_id="g1", session_id="s", role="user", text="I sail.")
    with short_directory() as sockets, trio.fail_after(SERVER_TIMEOUT_S):
        path = sockets / "cairn.sock"
        async with (
            open_test_memory(tmp_path / "data", embedder=embedder) as memory,
            trio.open_nursery() as nursery,
        ):
            await nursery.start(serve_unix_socket, memory, path, limits)
            async with raw_connection(path) as waiting:
                await waiting.send_bytes(
                    encode_frame(Hello(versions=[PROTOCOL_VERSION], client="raw"))
                    + encode_frame(IngestRequest(id=1, agent_id="g", turns=[message]))
                )
                assert isinstance(await waiting.answer(), Welcome)
                assert (await waiting.answer()).id == 1  # stored; embedding is gated
                await waiting.send(WaitIdleRequest(id=2, agent_id="g"))
                # A connection opened after the wait began is closed for idleness...
                await _closed_for_idleness(path)
                # ...while the one waiting is still served.
                await waiting.send(PingRequest(id=3))
                assert isinstance(await waiting.answer(), PingResult)
                embedder.gate.set()
                assert isinstance(await waiting.answer(), WaitIdleResult)
                closing = await waiting.answer()
                assert isinstance(closing, Error)
                assert closing.code == "idle_timeout"
                assert await waiting.answer() is None
            nursery.cancel_scope.cancel()


class ShortOfDescriptors(trio.abc.Listener[trio.abc.Stream]):
    """accept() fails as a process out of descriptors does, then yields connections."""

    def __init__(self, failures: Sequence[int], streams: list[trio.abc.Stream]) -> None:
        self.failures = list(failures)
        self.streams = streams
        self.accepted = trio.Event()

    async def accept(self) -> trio.abc.Stream:
        await trio.lowlevel.checkpoint()
        if self.failures:
            code = self.failures.pop(0)
            raise OSError(code, os.strerror(code))
        if not self.streams:
            self.accepted.set()
            await trio.sleep_forever()
        return self.streams.pop(0)

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


async def test_accept_short_of_descriptors_backs_off_and_keeps_serving(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    served: list[trio.abc.Stream] = []

    async def handler(stream: trio.abc.Stream) -> None:
        await trio.lowlevel.checkpoint()
        served.append(stream)

    streams: list[trio.abc.Stream] = [
        trio.testing.memory_stream_pair()[0] for _ in range(2)
    ]
    expected = list(streams)
    failures = [errno.EMFILE] * 5 + [errno.ENFILE, errno.ENOBUFS, errno.ENOMEM]
    listener = ShortOfDescriptors(failures, streams)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            started = trio.current_time()
            nursery.start_soon(accept_connections, listener, handler, nursery)
            await listener.accepted.wait()
            await trio.testing.wait_all_tasks_blocked()
            # Eight failures, each followed by a 0.1 s pause, then both connections.
            assert trio.current_time() - started == pytest.approx(0.8)
            assert served == expected
            nursery.cancel_scope.cancel()
    warnings = [r for r in caplog.records if "accept failed" in r.getMessage()]
    assert len(warnings) == 1  # once per episode, not once per retry
    assert "EMFILE" in warnings[0].getMessage()


async def test_any_other_accept_error_is_raised() -> None:
    async def handler(stream: trio.abc.Stream) -> None:
        await trio.lowlevel.checkpoint()

    listener = ShortOfDescriptors([errno.EBADF], [])
    with trio.fail_after(10), pytest.RaisesGroup(OSError):
        async with trio.open_nursery() as nursery:
            await accept_connections(listener, handler, nursery)
