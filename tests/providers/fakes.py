"""A real HTTP/1.1 fake of OpenAI-compatible and Ollama embedding servers, on loopback.

Trio-native (``trio.serve_tcp`` in the test's own run) so tests control it with trio events:
a ``slow`` request blocks until the test sets ``release``; ``hang`` never answers;
``hang_until_disconnect`` never answers either, and sets ``disconnected`` once the client
closes the connection (a request really abandoned, not just forgotten). No thread, no real
sleep. Each response closes its connection (``Connection: close``), which keeps the
hand-written HTTP minimal and is legal HTTP/1.1.

Vectors are deterministic per text (:func:`raw_vector`), deliberately not unit length so tests
see the embedder normalise, and OpenAI-shaped answers list ``data`` in reverse order so tests
see the embedder order rows by ``index``.
"""

from __future__ import annotations

import json
import socket
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Literal

import attrs
import numpy as np
import trio

__all__ = [
    "FakeProviderServer",
    "Mode",
    "RecordedRequest",
    "open_fake_server",
    "raw_vector",
    "unused_port",
]

Mode = Literal[
    "success",
    "slow",
    "hang",
    "hang_until_disconnect",
    "rate_limited_then_success",
    "server_error",
    "unauthorized",
    "malformed_json",
    "wrong_schema",
    "wrong_dimension",
    # Chat routes only (see FakeProviderServer._chat):
    "server_error_then_success",
    "chat_refusal",
    "chat_truncated",
    "chat_not_json",
    "chat_empty",
]

_CHAT_PATHS = frozenset({"/v1/chat/completions", "/api/chat"})

_REASONS = {
    200: "OK",
    401: "Unauthorized",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def raw_vector(text: str, dimension: int) -> list[float]:
    """A deterministic, non-normalised vector for ``text``."""
    rng = np.random.default_rng(zlib.crc32(text.encode("utf-8")))
    return [float(value) * 3.0 for value in rng.standard_normal(dimension)]


def unused_port() -> int:
    """A loopback port nothing listens on (bound then released), for connection-refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@attrs.frozen
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@attrs.define(eq=False)
class FakeProviderServer:
    """Serves ``/v1/embeddings`` and ``/api/embed``; behaviour set by ``mode``.

    Also serves the chat routes ``/v1/chat/completions`` and ``/api/chat``: the model's
    answer is ``chat_content`` verbatim (the test sets the JSON document it wants back).
    """

    dimension: int = 8
    mode: Mode = "success"
    # For rate_limited_then_success: how many refusals before answering, with which status
    # (429 or 503), which Retry-After value (None: no header) and which Date header.
    rate_limited_count: int = 1
    rate_limited_status: int = 429
    retry_after: str | None = None
    response_date: str | None = None
    secret_in_error_body: str | None = None
    # Chat routes: the answer text, and for server_error_then_success how many 500s first.
    chat_content: str = "{}"
    server_error_count: int = 1
    port: int = 0
    requests: list[RecordedRequest] = attrs.Factory(list)
    release: trio.Event = attrs.Factory(trio.Event)
    request_arrived: trio.Event = attrs.Factory(trio.Event)
    disconnected: trio.Event = attrs.Factory(trio.Event)
    # Requests read but not yet answered, and the most there ever were at once.
    in_flight: int = 0
    max_in_flight: int = 0
    _count_waiters: list[tuple[int, trio.Event]] = attrs.Factory(list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def wait_for_requests(self, count: int) -> None:
        """Return once at least ``count`` requests have arrived."""
        if len(self.requests) >= count:
            await trio.lowlevel.checkpoint()
            return
        event = trio.Event()
        self._count_waiters.append((count, event))
        await event.wait()

    async def handle(self, stream: trio.SocketStream) -> None:
        async with stream:
            request = await _read_request(stream)
            if request is None:
                return
            self.requests.append(request)
            self.request_arrived.set()
            for count, event in self._count_waiters:
                if len(self.requests) >= count:
                    event.set()
            if self.mode == "hang_until_disconnect":
                await _wait_for_eof(stream)
                self.disconnected.set()
                return
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                status, body = await self._respond(request)
            finally:
                # Before the answer is sent: the client cannot start its next request
                # (and count it) while this one still counts.
                self.in_flight -= 1
            extra = ""
            if status in {429, 503} and self.retry_after is not None:
                extra += f"Retry-After: {self.retry_after}\r\n"
            if self.response_date is not None:
                extra += f"Date: {self.response_date}\r\n"
            head = (
                f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n"
                f"{extra}Connection: close\r\n\r\n"
            ).encode("ascii")
            try:
                await stream.send_all(head + body)
            except trio.BrokenResourceError:
                return  # the client went away (cancelled); nothing to do

    async def _respond(self, request: RecordedRequest) -> tuple[int, bytes]:
        mode = self.mode
        if mode == "hang":
            await trio.sleep_forever()
        if mode == "slow":
            await self.release.wait()
        if (
            mode == "rate_limited_then_success"
            and len(self.requests) <= self.rate_limited_count
        ):
            return self.rate_limited_status, b'{"error": "slow down"}'
        if (
            mode == "server_error_then_success"
            and len(self.requests) <= self.server_error_count
        ):
            return 500, b'{"error": "boom"}'
        if mode == "server_error":
            return 500, b'{"error": "boom"}'
        if mode == "unauthorized":
            echoed = self.secret_in_error_body or ""
            return 401, json.dumps(
                {"error": f"Incorrect API key provided: {echoed}"}
            ).encode()
        if mode == "malformed_json":
            return 200, b'{"data": [{"index": 0, "embedding": [0.1,'
        if mode == "wrong_schema":
            return 200, b'{"data": "nope", "embeddings": {"a": 1}}'
        if request.path in _CHAT_PATHS:
            return 200, self._chat(request)
        dimension = self.dimension - 1 if mode == "wrong_dimension" else self.dimension
        texts = request.body["input"]
        if isinstance(texts, str):
            texts = [texts]
        vectors = [raw_vector(text, dimension) for text in texts]
        if request.path == "/api/embed":
            return 200, json.dumps(
                {"model": request.body["model"], "embeddings": vectors}
            ).encode()
        if request.path == "/v1/embeddings":
            data = [
                {"object": "embedding", "index": index, "embedding": vector}
                for index, vector in enumerate(vectors)
            ]
            data.reverse()
            payload = {"object": "list", "data": data, "model": request.body["model"]}
            return 200, json.dumps(payload).encode()
        return 404, b'{"error": "not found"}'

    def _chat(self, request: RecordedRequest) -> bytes:
        """A 200 chat answer shaped for the route, altered by the chat_* modes."""
        content: str | None = self.chat_content
        refusal: str | None = None
        finish = "stop"
        if self.mode == "chat_refusal":
            content, refusal = None, "I can't help with that."
        elif self.mode == "chat_truncated":
            content, finish = self.chat_content[: len(self.chat_content) // 2], "length"
        elif self.mode == "chat_not_json":
            content = "Sure! Here is the JSON you asked for: {"
        elif self.mode == "chat_empty":
            content = ""
        model = request.body["model"]
        if request.path == "/api/chat":
            return json.dumps(
                {
                    "model": model,
                    "created_at": "2024-01-01T00:00:00Z",
                    "message": {"role": "assistant", "content": content or ""},
                    "done": True,
                    "done_reason": finish,
                }
            ).encode()
        return json.dumps(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": content,
                            "refusal": refusal,
                        },
                        "finish_reason": finish,
                    }
                ],
            }
        ).encode()


async def _wait_for_eof(stream: trio.SocketStream) -> None:
    """Return once the client has closed (or reset) its side of the connection."""
    try:
        while await stream.receive_some(65536):
            pass
    except trio.BrokenResourceError:
        return


async def _read_request(stream: trio.SocketStream) -> RecordedRequest | None:
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return None
        buffer += chunk
    head, _, rest = buffer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _version = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return None
        rest += chunk
    body = json.loads(rest[:length]) if length else None
    return RecordedRequest(method=method, path=path, headers=headers, body=body)


@asynccontextmanager
async def open_fake_server(**fields: Any) -> AsyncIterator[FakeProviderServer]:
    """Serve a :class:`FakeProviderServer` on 127.0.0.1 for the duration of the block."""
    server = FakeProviderServer(**fields)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            partial(trio.serve_tcp, server.handle, 0, host="127.0.0.1")
        )
        server.port = listeners[0].socket.getsockname()[1]
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()
