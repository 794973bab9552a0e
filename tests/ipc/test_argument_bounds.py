"""Every numeric argument of every IPC request, swept over values outside its range
through a real ``cairn serve``: each is answered with a typed error frame that names the
argument (never ``internal``, never a traceback in the log), and the same connection
answers its next request. Values the wire type refuses (a float for ``k``) are the frame
error ``malformed`` with the request's ID; a body nested past the decoder's depth limit
too. The clients raise the error the embedded API raises, with the same sentence."""

from __future__ import annotations

import math
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import msgspec
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.helpers import turn
from tests.ipc.harness import SERVER_TIMEOUT_S, SocketServer, raw_connection

from cairn.api.bounds import (
    MAX_BUDGET_BYTES,
    MAX_DRAIN_TIMEOUT_S,
    MAX_EVIDENCE_REFS,
    MAX_ITEM_ID,
    MAX_ITEM_IDS,
    MAX_LIST_LIMIT,
    MAX_RECALL_K,
    MAX_WAIT_S,
)
from cairn.errors import ArgumentOutOfRangeError
from cairn.ipc import BlockingClient, open_stdio_client, open_unix_client
from cairn.ipc.framing import FrameReader, decode_answer, encode_frame
from cairn.ipc.messages import (
    PROTOCOL_VERSION,
    Error,
    Hello,
    PingRequest,
    PingResult,
    RecallResult,
    Welcome,
)

pytestmark = pytest.mark.subprocess

AGENT = "bounds"
# The hashing embedder the test server serves with (cairn.testing.HashingEmbedder).
DIMENSION = 256
LOWEST_WIRE_INTEGER = -(2**63)
HIGHEST_WIRE_INTEGER = 2**64 - 1


def _outside(low: int, high: int) -> st.SearchStrategy[int]:
    """Integers MessagePack carries that are below ``low`` or above ``high``."""
    return st.integers(LOWEST_WIRE_INTEGER, low - 1) | st.integers(
        high + 1, HIGHEST_WIRE_INTEGER
    )


def _bad_seconds(high: float, *, zero_allowed: bool) -> st.SearchStrategy[float]:
    """NaN, both infinities, negatives, more than ``high`` (and 0 where it is meaningless)."""
    values = (
        st.sampled_from([math.nan, math.inf, -math.inf])
        | st.floats(max_value=-1e-9, allow_infinity=False)
        | st.floats(min_value=high * (1 + 1e-9), allow_infinity=False)
    )
    return values if zero_allowed else values | st.just(0.0)


def _bad_vectors() -> st.SearchStrategy[list[float]]:
    unit = st.floats(-1.0, 1.0)
    wrong_length = (
        st.integers(0, 600)
        .filter(lambda n: n != DIMENSION)
        .flatmap(lambda n: st.lists(unit, min_size=n, max_size=n))
    )
    not_finite = st.tuples(
        st.lists(unit, min_size=DIMENSION - 1, max_size=DIMENSION - 1),
        st.sampled_from([math.nan, math.inf, -math.inf, 1e39, -3e300]),
        st.integers(0, DIMENSION - 1),
    ).map(lambda parts: [*parts[0][: parts[2]], parts[1], *parts[0][parts[2] :]])
    return wrong_length | not_finite | st.just([0.0] * DIMENSION)


def _bad_item_ids() -> st.SearchStrategy[list[int]]:
    one_bad = st.tuples(
        st.lists(st.integers(1, 1000), max_size=5), _outside(1, MAX_ITEM_ID)
    ).map(lambda parts: [*parts[0], parts[1]])
    too_many = st.integers(MAX_ITEM_IDS + 1, MAX_ITEM_IDS + 50).map(
        lambda n: list(range(1, n + 1))
    )
    return one_bad | too_many


def _bad_refs() -> st.SearchStrategy[list[str]]:
    """No refs at all, or more than one call may expand."""
    return st.just([]) | st.integers(MAX_EVIDENCE_REFS + 1, MAX_EVIDENCE_REFS + 50).map(
        lambda n: [f"r{i}" for i in range(n)]
    )


@attrs.frozen
class Argument:
    """One numeric argument of one request, and values outside its range."""

    request: str
    name: str
    bad: st.SearchStrategy[Any]
    extra: dict[str, Any] = attrs.field(factory=dict)

    def __str__(self) -> str:
        return f"{self.request}.{self.name}"


# Every numeric argument of every request (design/ipc.md, "Argument ranges").
ARGUMENTS = [
    Argument("recall", "k", _outside(1, MAX_RECALL_K), {"query": "tea"}),
    Argument("recall", "budget_bytes", _outside(1, MAX_BUDGET_BYTES), {"query": "tea"}),
    Argument(
        "recall", "wait_s", _bad_seconds(MAX_WAIT_S, zero_allowed=True), {"query": "t"}
    ),
    Argument("recall", "query_vector", _bad_vectors(), {"query": "tea"}),
    Argument(
        "recall",
        "as_of",
        st.sampled_from(["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"]),
        {"query": "tea"},
    ),
    Argument("recalls", "limit", _outside(1, MAX_LIST_LIMIT)),
    Argument("attention", "limit", _outside(1, MAX_LIST_LIMIT)),
    Argument("entities", "limit", _outside(1, MAX_LIST_LIMIT)),
    Argument("memories", "limit", _outside(1, MAX_LIST_LIMIT)),
    Argument("consume_attention", "item_ids", _bad_item_ids()),
    Argument("evidence", "refs", _bad_refs()),
    Argument(
        "drain", "timeout_s", _bad_seconds(MAX_DRAIN_TIMEOUT_S, zero_allowed=False)
    ),
]
# Values of the wrong wire type: refused by the decoder, with the request's ID.
MISTYPED = [
    ("recall", "k", 2.5, {"query": "tea"}),
    ("recall", "k", True, {"query": "tea"}),
    ("recall", "budget_bytes", "4096", {"query": "tea"}),
    ("recall", "wait_s", "soon", {"query": "tea"}),
    ("recall", "query_vector", ["x"] * DIMENSION, {"query": "tea"}),
    ("recall", "as_of", "yesterday", {"query": "tea"}),
    ("recalls", "limit", None, {}),
    ("attention", "limit", 1.5, {}),
    ("entities", "limit", "10", {}),
    ("consume_attention", "item_ids", [1, "2"], {}),
    ("evidence", "refs", [1], {}),
    ("drain", "timeout_s", [1.0], {}),
]


@attrs.define
class BlockingRawConnection:
    """Frames by hand over a plain socket, for Hypothesis's synchronous examples."""

    sock: socket.socket
    reader: FrameReader = attrs.field(factory=lambda: FrameReader(1 << 26))
    next_id: int = 1

    def send_body(self, body: bytes) -> None:
        self.sock.sendall(len(body).to_bytes(4, "big") + body)

    def answer(self) -> Any:
        while (body := self.reader.next_frame()) is None:
            data = self.sock.recv(65536)
            assert data, "the server closed the connection"
            self.reader.feed(data)
        return decode_answer(body)

    def request(self, message: dict[str, Any]) -> tuple[int, Any]:
        request_id = self.next_id
        self.next_id += 1
        self.send_body(msgspec.msgpack.encode({**message, "id": request_id}))
        return request_id, self.answer()

    def assert_live(self) -> None:
        request_id = self.next_id
        self.next_id += 1
        self.sock.sendall(encode_frame(PingRequest(id=request_id)))
        answer = self.answer()
        assert isinstance(answer, PingResult)
        assert answer.id == request_id


@pytest.fixture(scope="module")
def raw(shared_server: SocketServer) -> Iterator[BlockingRawConnection]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(SERVER_TIMEOUT_S)
    sock.connect(str(shared_server.socket_path))
    connection = BlockingRawConnection(sock)
    try:
        sock.sendall(encode_frame(Hello(versions=[PROTOCOL_VERSION], client="bounds")))
        assert isinstance(connection.answer(), Welcome)
        yield connection
    finally:
        sock.close()


@pytest.mark.parametrize("argument", ARGUMENTS, ids=str)
@settings(max_examples=20)
@given(data=st.data())
def test_every_numeric_argument_out_of_range_is_a_typed_error_frame(
    raw: BlockingRawConnection, argument: Argument, data: st.DataObject
) -> None:
    value = data.draw(argument.bad, label=argument.name)
    request_id, answer = raw.request(
        {
            "type": argument.request,
            "agent_id": AGENT,
            **argument.extra,
            argument.name: value,
        }
    )
    assert isinstance(answer, Error), answer
    assert (answer.id, answer.code) == (request_id, "out_of_range"), answer
    assert answer.message.startswith(
        ("query_vector", argument.name, "an attention item ID")
    ), answer.message
    raw.assert_live()


@pytest.mark.parametrize(("request_type", "name", "value", "extra"), MISTYPED)
def test_a_value_of_the_wrong_wire_type_is_malformed_with_its_id(
    raw: BlockingRawConnection,
    request_type: str,
    name: str,
    value: Any,
    extra: dict[str, Any],
) -> None:
    message = {"type": request_type, "agent_id": AGENT, **extra, name: value}
    request_id, answer = raw.request(message)
    assert isinstance(answer, Error), answer
    assert (answer.id, answer.code) == (request_id, "malformed"), answer
    assert name in answer.message
    raw.assert_live()


def test_a_naive_as_of_is_invalid_input(raw: BlockingRawConnection) -> None:
    request_id, answer = raw.request(
        {
            "type": "recall",
            "agent_id": AGENT,
            "query": "tea",
            "as_of": "2026-01-05T09:00:00",
        }
    )
    assert isinstance(answer, Error)
    assert (answer.id, answer.code) == (request_id, "invalid_input")
    raw.assert_live()


def test_the_edges_of_every_range_are_accepted(raw: BlockingRawConnection) -> None:
    """The sweep's ranges are the real ones: the values just inside are answered."""
    for extra in (
        {"k": 1, "budget_bytes": 1, "wait_s": 0.0},
        {"k": MAX_RECALL_K, "budget_bytes": MAX_BUDGET_BYTES, "wait_s": MAX_WAIT_S},
        {"query_vector": [1.0] + [0.0] * (DIMENSION - 1)},
        {"as_of": "9999-12-31T23:59:59+00:00"},
    ):
        message = {"type": "recall", "agent_id": AGENT, "query": "tea", **extra}
        _, answer = raw.request(message)
        assert isinstance(answer, RecallResult), answer
    for kind in ("recalls", "attention", "entities", "memories"):
        for limit in (1, MAX_LIST_LIMIT):
            _, answer = raw.request({"type": kind, "agent_id": AGENT, "limit": limit})
            assert not isinstance(answer, Error), answer
    _, answer = raw.request(
        {"type": "consume_attention", "agent_id": AGENT, "item_ids": [MAX_ITEM_ID]}
    )
    assert not isinstance(answer, Error), answer
    for refs in (["r0"], [f"r{n}" for n in range(MAX_EVIDENCE_REFS)]):
        _, answer = raw.request({"type": "evidence", "agent_id": AGENT, "refs": refs})
        assert not isinstance(answer, Error), answer


async def test_a_200000_deep_body_gets_an_error_frame_and_the_connection_goes_on(
    shared_server: SocketServer,
) -> None:
    deep = b"\x91" * 200_000 + b"\xc0"
    for head, request_id in (
        # type and id first, as every client writes them: the error keeps the ID.
        (b"\x84\xa4type\xa6recall\xa2id\x07\xa8agent_id\xa6bounds\xa5query" + deep, 7),
        # the nesting before the id: no ID can be read without decoding it.
        (b"\x83\xa4type\xa6recall\xa5query" + deep + b"\xa2id\x07", None),
        # in a field the server does not know (skipped, which recursed as well).
        (
            b"\x85\xa4type\xa6recall\xa2id\x07\xa8agent_id\xa6bounds"
            b"\xa5query\xa3tea\xa5extra" + deep,
            7,
        ),
    ):
        with trio.fail_after(SERVER_TIMEOUT_S):
            async with raw_connection(shared_server.socket_path) as connection:
                assert isinstance(await connection.hello(), Welcome)
                await connection.send_bytes(len(head).to_bytes(4, "big") + head)
                answer = await connection.answer()
                assert isinstance(answer, Error), answer
                assert (answer.id, answer.code) == (request_id, "malformed")
                assert "too deeply" in answer.message
                await connection.send(PingRequest(id=8))
                assert await connection.answer() == PingResult(id=8)


def test_a_deep_hello_is_refused_as_a_handshake_error(
    shared_server: SocketServer,
) -> None:
    body = b"\x82\xa4type\xa5hello\xa8versions" + b"\x91" * 200_000 + b"\x05"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(SERVER_TIMEOUT_S)
        sock.connect(str(shared_server.socket_path))
        connection = BlockingRawConnection(sock)
        connection.send_body(body)
        answer = connection.answer()
    assert isinstance(answer, Error)
    assert answer.code == "handshake_required"
    assert "too deeply" in answer.message


# The values the hostile trial sent, as each client sends them.
REPORTED = [
    ("recall", {"budget_bytes": -1}, "budget_bytes must be an integer from 1"),
    ("recall", {"wait_s": -1.0}, "wait_s must be a finite number"),
    ("recall", {"wait_s": math.nan}, "wait_s must be a finite number"),
    ("recall", {"wait_s": math.inf}, "wait_s must be a finite number"),
    ("recall", {"k": -1}, "k must be an integer from 1 to 100; got -1"),
    ("recall", {"k": 0}, "k must be an integer from 1 to 100; got 0"),
    ("recall", {"k": 2**70}, "k must be an integer from 1 to 100"),
    ("recall", {"query_vector": [0.5, 0.5]}, "query_vector must have 256 values"),
    ("recall", {"query_vector": [math.nan] * 256}, "query_vector values must be"),
    ("recall", {"query_vector": ["x"]}, "query_vector must hold numbers"),
    ("drain", {"timeout_s": math.nan}, "timeout_s must be a finite number"),
    ("drain", {"timeout_s": -1.0}, "timeout_s must be a finite number"),
    ("consume_attention", {"item_ids": [2**64]}, "an attention item ID must be"),
]


def _blocking_call(
    client: BlockingClient, method: str, arguments: dict[str, Any]
) -> Any:
    if method == "recall":
        return client.recall(AGENT, "tea", **arguments)
    if method == "consume_attention":
        return client.consume_attention(AGENT, **arguments)
    return client.drain(**arguments)


async def _trio_call(client: Any, method: str, arguments: dict[str, Any]) -> Any:
    if method == "recall":
        return await client.recall(AGENT, "tea", **arguments)
    if method == "consume_attention":
        return await client.consume_attention(AGENT, **arguments)
    return await client.drain(**arguments)


@pytest.mark.parametrize(("method", "arguments", "sentence"), REPORTED)
def test_the_blocking_client_raises_the_typed_error_and_stays_usable(
    shared_server: SocketServer, method: str, arguments: dict[str, Any], sentence: str
) -> None:
    with BlockingClient.connect_unix(
        shared_server.socket_path, timeout_s=SERVER_TIMEOUT_S
    ) as client:
        with pytest.raises(ArgumentOutOfRangeError, match="^" + re.escape(sentence)):
            _blocking_call(client, method, arguments)
        client.ping()


async def test_the_trio_client_raises_the_typed_error_and_stays_usable(
    shared_server: SocketServer,
) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            await client.ingest(AGENT, [turn("b1", "I love oolong tea.")])
            for method, arguments, sentence in REPORTED:
                with pytest.raises(ArgumentOutOfRangeError) as caught:
                    await _trio_call(client, method, arguments)
                assert str(caught.value).startswith(sentence), caught.value
                await client.ping()
            # Nothing was drained by the refused drains.
            await client.ingest(AGENT, [turn("b2", "I live in Lisbon.")])


@pytest.mark.parametrize("timeout_s", [math.nan, -1.0, 0.0, math.inf])
def test_a_clients_own_timeout_out_of_range_is_typed(
    shared_server: SocketServer, tmp_path: Path, timeout_s: float
) -> None:
    """Before anything connects or spawns (socket.settimeout raised a bare ValueError)."""
    with pytest.raises(ArgumentOutOfRangeError, match=r"^timeout_s must be"):
        BlockingClient.connect_unix(shared_server.socket_path, timeout_s=timeout_s)
    with pytest.raises(ArgumentOutOfRangeError, match=r"^stop_timeout_s must be"):
        BlockingClient.spawn_stdio(
            tmp_path / "data", stop_timeout_s=timeout_s, command=["false"]
        )
    assert not (tmp_path / "data").exists()


async def test_the_stdio_clients_stop_timeout_out_of_range_is_typed(
    tmp_path: Path,
) -> None:
    with pytest.raises(ArgumentOutOfRangeError, match=r"^stop_timeout_s must be"):
        async with open_stdio_client(
            tmp_path / "data", stop_timeout_s=math.nan, command=["false"]
        ):
            pass
