"""Connections that misbehave, beside the load: malformed frames of every kind, more
connections than the server's cap, and a client that writes and never reads. The server
must answer each as the protocol says and go on serving everyone else (I8)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import attrs
import msgspec
import trio

from cairn.errors import CairnError, TooManyConnectionsError
from cairn.ipc.client import open_unix_client
from cairn.ipc.framing import FrameReader, decode_answer, encode_frame
from cairn.ipc.messages import (
    PROTOCOL_VERSION,
    Busy,
    Error,
    Hello,
    PingRequest,
    PingResult,
    RecallRequest,
    StatusRequest,
    Welcome,
)
from cairn.ipc.server import ServerLimits
from cairn.stress.load_clients import CALL_BUDGET_S

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from pathlib import Path

    from cairn.stress.load_clients import Ledger
    from cairn.stress.load_server import ServerProcess

__all__ = ["BURST", "PROBES", "Probe", "disturb"]

PROBE_PAUSE_S = 0.1
CHECK_BUDGET_S = 60.0
"""Bounds the connection-cap and the non-reader checks, each as a whole."""
OVER_CAP_ATTEMPTS = 8
NON_READER_BUDGET_S = 20.0
NON_READER_RSS_BOUND_KIB = 64 * 1024
"""How much the server may grow while a client writes and never reads: its answers
wait in a bounded queue (``ServerLimits``), a few hundred kilobytes at most."""
HANDSHAKE_TIMEOUT_S = ServerLimits().handshake_timeout_s
_NON_READER_BATCH = 200
_OVERRUN_LOGGED = "does not read its answers"
# 200,000 arrays, each holding the next: far past any decoder's nesting limit.
_NESTED = b"\x91" * 200_000 + b"\xc0"


@attrs.frozen
class Probe:
    """What a misbehaving client sends and what the server must answer."""

    data: bytes
    code: str | None
    """The error frame's code; None: no answer (the client hangs up mid-frame)."""
    request_id: int | None = None
    """The error frame's request ID (None: the frame's ID could not be read)."""
    goes_on: bool = True
    """The connection is served on after the error (else the server closes it)."""
    hello_first: bool = True


def _frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


def _message(message: dict[str, Any]) -> bytes:
    return _frame(msgspec.msgpack.encode(message))


PROBES: dict[str, Probe] = {
    "not msgpack": Probe(_frame(b"\xc1\xc1\xff\x00\x13"), "malformed"),
    "not a map": Probe(_frame(b"abc"), "malformed"),
    "empty body": Probe(_frame(b""), "malformed"),
    "unknown type": Probe(_message({"type": "teleport", "id": 7}), "unknown_type", 7),
    "wrong field type": Probe(
        _message({"type": "recall", "id": 8, "agent_id": 5, "query": "x"}),
        "malformed",
        8,
    ),
    "negative id": Probe(_message({"type": "status", "id": -1}), "malformed"),
    "deep msgpack": Probe(_frame(_NESTED), "malformed"),
    # The ID comes before the value nested too deeply to decode: the error keeps it.
    "deep field": Probe(
        _frame(
            b"\x84"
            + msgspec.msgpack.encode("type")
            + msgspec.msgpack.encode("recall")
            + msgspec.msgpack.encode("id")
            + msgspec.msgpack.encode(11)
            + msgspec.msgpack.encode("agent_id")
            + msgspec.msgpack.encode("x")
            + msgspec.msgpack.encode("query")
            + _NESTED
        ),
        "malformed",
        11,
    ),
    "deep hello": Probe(
        _frame(_NESTED), "handshake_required", goes_on=False, hello_first=False
    ),
    "oversize header": Probe(
        (1 << 30).to_bytes(4, "big") + b"\x80" * 100, "frame_too_large", goes_on=False
    ),
    # An HTTP client on the socket: its first bytes read as a 1.1 GB header.
    "http request": Probe(
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        "frame_too_large",
        goes_on=False,
        hello_first=False,
    ),
    "wrong version": Probe(
        encode_frame(Hello(versions=[PROTOCOL_VERSION + 97], client="stress-probe")),
        "version_mismatch",
        goes_on=False,
        hello_first=False,
    ),
    "no hello": Probe(
        encode_frame(StatusRequest(id=1)),
        "handshake_required",
        goes_on=False,
        hello_first=False,
    ),
    "truncated body": Probe((4096).to_bytes(4, "big") + b"\x82\xa4type", None),
    # Gone with a request running: its answer has nowhere to go.
    "gone mid-request": Probe(
        encode_frame(RecallRequest(id=5, agent_id="load-0", query="keys", wait_s=1.0)),
        None,
    ),
}


BURST = "burst past the in-flight bound"


@attrs.define
class _Raw:
    """A connection framed by hand, for what a well-behaved client never sends."""

    stream: trio.SocketStream
    reader: FrameReader = attrs.field(factory=lambda: FrameReader(1 << 26))

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def answer(self) -> Any:
        """The next frame, or None once the server has closed the connection."""
        while (body := self.reader.next_frame()) is None:
            try:
                data = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:
                return None
            if not data:
                return None
            self.reader.feed(data)
        return decode_answer(body)

    async def hello(self) -> Any:
        hello = Hello(versions=[PROTOCOL_VERSION], client="stress-probe")
        await self.send(encode_frame(hello))
        return await self.answer()


@contextlib.asynccontextmanager
async def _raw_connection(path: Path) -> AsyncIterator[_Raw]:
    stream = await trio.open_unix_socket(str(path))
    async with stream:
        yield _Raw(stream)


async def _probe(path: Path, probe: Probe) -> str | None:
    """Send one probe; what went wrong, or None if the server answered as it must."""
    async with _raw_connection(path) as raw:
        if probe.hello_first and not isinstance(await raw.hello(), Welcome):
            return "no welcome to the probe's hello"
        await raw.send(probe.data)
        if probe.code is None:
            return None  # the client hangs up mid-frame: nothing to answer
        answer = await raw.answer()
        expected = (probe.code, probe.request_id)
        if not isinstance(answer, Error) or (answer.code, answer.id) != expected:
            return f"expected an error frame {expected}, got {answer!r}"
        if probe.goes_on:
            await raw.send(encode_frame(PingRequest(id=99)))
            pong = await raw.answer()
            if not isinstance(pong, PingResult):
                return f"the connection did not go on: {pong!r}"
        elif (after := await raw.answer()) is not None:
            return f"the connection stayed open: {after!r}"
    return None


async def _burst(path: Path, ledger: Ledger) -> str | None:
    """Twice the requests a connection may run, in one write: each gets exactly one
    answer, those past the bound ``busy`` (unstarted)."""
    async with _raw_connection(path) as raw:
        welcome = await raw.hello()
        if not isinstance(welcome, Welcome):
            return f"no welcome: {welcome!r}"
        count = 2 * welcome.max_in_flight
        await raw.send(
            b"".join(encode_frame(PingRequest(id=n)) for n in range(1, count + 1))
        )
        ids: list[int] = []
        for _ in range(count):
            answer = await raw.answer()
            if not isinstance(answer, (PingResult, Busy)):
                return f"answer {len(ids) + 1} of {count} was {answer!r}"
            ledger.result.count(f"burst_answers.{type(answer).__name__.lower()}")
            ids.append(answer.id)
        if sorted(ids) != list(range(1, count + 1)):
            return f"not one answer per request: {sorted(ids)}"
    return None


async def _run_probe(server: ServerProcess, ledger: Ledger, name: str) -> None:
    ledger.result.count("probes")
    problem: str | None = f"no answer in {CALL_BUDGET_S:g} s"
    with trio.move_on_after(CALL_BUDGET_S):
        try:
            if name == BURST:
                problem = await _burst(server.socket_path, ledger)
            else:
                problem = await _probe(server.socket_path, PROBES[name])
        except OSError as error:
            problem = f"the connection failed: {error!r}"
        except trio.BrokenResourceError as error:
            problem = f"the connection broke: {error!r}"
    if problem is None:
        ledger.result.count("probes_answered")
    else:
        message = f"malformed-frame probe {name!r}: {problem}"
        ledger.violation("I8", message, f"probe {name}")


async def _check_connection_cap(server: ServerProcess, ledger: Ledger) -> None:
    """Fill the server's connections up to its cap, then try more: each is refused with
    the typed error while the load clients are answered."""
    answered_before = ledger.answered
    async with contextlib.AsyncExitStack() as hoard:
        for _ in range(server.max_connections + 1):
            raw = await hoard.enter_async_context(_raw_connection(server.socket_path))
            answer = await raw.hello()
            if isinstance(answer, Welcome):
                ledger.result.count("cap_connections_held")
                continue
            if not isinstance(answer, Error) or answer.code != "too_many_connections":
                ledger.violation("I8", f"past the cap a hello got {answer!r}", "cap")
            break
        else:
            message = f"more than {server.max_connections} connections were served"
            ledger.violation("I8", message, "cap")
        # All at once (fewer than the server refuses at once with a frame).
        async with trio.open_nursery() as nursery:
            for _ in range(OVER_CAP_ATTEMPTS):
                nursery.start_soon(_connect_past_the_cap, server.socket_path, ledger)
        await ledger.check_load_goes_on(answered_before, "while at the cap")
    # The hoard's closes reach the server soon after: wait for room before going on.
    while True:
        try:
            async with open_unix_client(server.socket_path) as client:
                await client.ping()
        except TooManyConnectionsError:
            await trio.sleep(PROBE_PAUSE_S)
        else:
            return


async def _connect_past_the_cap(path: Path, ledger: Ledger) -> None:
    try:
        async with open_unix_client(path) as client:
            await client.ping()
    except TooManyConnectionsError:
        ledger.result.count("refusals")
    except CairnError as error:
        message = f"a refusal past the cap that is not typed: {error!r}"
        ledger.violation("I8", message, "cap")
    else:
        ledger.violation("I8", "a connection past the cap was served", "cap")


async def _check_a_client_that_never_reads(
    server: ServerProcess, ledger: Ledger
) -> None:
    """Requests and never a read: the server drops the client, its memory bounded,
    while the load clients are answered."""
    before = await server.sample()
    answered_before = ledger.answered
    batch = b"".join(
        encode_frame(StatusRequest(id=n)) for n in range(1, _NON_READER_BATCH + 1)
    )
    baseline = peak = before.rss_kib if before else 0
    dropped = False
    async with _raw_connection(server.socket_path) as raw:
        if not isinstance(await raw.hello(), Welcome):
            ledger.violation("I8", "no welcome for the client that never reads", "")
            return
        with trio.move_on_after(NON_READER_BUDGET_S):
            while True:
                try:
                    await raw.send(batch)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    dropped = True
                    break
                ledger.result.count("non_reader_requests", _NON_READER_BATCH)
                if (sample := await server.sample()) is not None:
                    peak = max(peak, sample.rss_kib)
    growth = peak - baseline
    ledger.result.figures["non_reader_rss_growth_kib"] = growth
    line = "client that never reads"
    if not dropped:
        message = (
            f"a client that never reads was not dropped in {NON_READER_BUDGET_S:g} s"
        )
        ledger.violation("I8", message, line)
    else:
        # One client, one drop, logged once: a warning per answer it left unread would
        # let a client that never reads fill the server's log.
        logged = (await server.log()).count(_OVERRUN_LOGGED)
        ledger.result.figures["non_reader_drops_logged"] = logged
        if logged != 1:
            message = (
                f"the drop of one client that never reads was logged {logged} times"
            )
            ledger.violation("I8", message, line)
    if growth > NON_READER_RSS_BOUND_KIB:
        message = (
            f"the server grew {growth} KiB while a client did not read"
            f" (bound {NON_READER_RSS_BOUND_KIB} KiB)"
        )
        ledger.violation("I8", message, line)
    await ledger.check_load_goes_on(answered_before, "beside a client that never reads")


async def _check_a_silent_connection(server: ServerProcess, ledger: Ledger) -> None:
    """A connection that never says hello is answered ``handshake_required`` and
    closed once the handshake timeout has passed: silence cannot hold a slot."""
    answer: object = None
    closed = False
    with trio.move_on_after(HANDSHAKE_TIMEOUT_S + CALL_BUDGET_S):
        async with _raw_connection(server.socket_path) as raw:
            answer = await raw.answer()
            closed = await raw.answer() is None
    if isinstance(answer, Error) and answer.code == "handshake_required" and closed:
        ledger.result.count("silent_connections_closed")
        return
    message = f"a connection that never said hello got {answer!r} (closed: {closed})"
    ledger.violation("I8", message, "silent connection")


async def _bounded(
    check: Callable[[ServerProcess, Ledger], Awaitable[None]],
    server: ServerProcess,
    ledger: Ledger,
) -> None:
    with trio.move_on_after(CHECK_BUDGET_S) as check_scope:
        await check(server, ledger)
    if check_scope.cancelled_caught:
        name = check.__name__.strip("_").replace("_", " ")
        ledger.violation("I8", f"{name}: no end in {CHECK_BUDGET_S:g} s", name)


async def disturb(
    server: ServerProcess, ledger: Ledger, measured_from: float, deadline: float
) -> None:
    """Probes all through the run (warm-up included), in turn, and a connection that
    never says hello; the connection cap at 40 % of the measured window (from
    ``measured_from`` to ``deadline``), the client that never reads at 55 % (in its
    middle third, so that what they leave behind shows in the last third's samples)."""
    names = [*PROBES, BURST]
    started, span = measured_from, deadline - measured_from
    scheduled = [
        (started + 0.40 * span, _check_connection_cap),
        (started + 0.55 * span, _check_a_client_that_never_reads),
    ]
    count = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_check_a_silent_connection, server, ledger)
        while trio.current_time() < deadline:
            if scheduled and trio.current_time() >= scheduled[0][0]:
                await _bounded(scheduled.pop(0)[1], server, ledger)
                continue
            await _run_probe(server, ledger, names[count % len(names)])
            count += 1
            await trio.sleep(PROBE_PAUSE_S)
        for _, check in scheduled:  # a run too short to reach them still runs them
            await _bounded(check, server, ledger)
