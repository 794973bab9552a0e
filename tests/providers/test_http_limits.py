"""Per-provider limits over one shared client: request timeouts and requests in flight.

Invariants: each provider's connect/read timeouts travel with each of its requests, so one
``httpx.AsyncClient`` serves providers with different timeouts; a provider never has more
than ``max_concurrency`` requests in flight, however many tasks call it.

The in-flight tests run on virtual time (``MockClock(autojump_threshold=0)``) against the
real loopback fake, which counts the requests it holds unanswered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import msgspec
import numpy as np
import pytest
import trio
import trio.testing
from tests.providers.fakes import FakeProviderServer, open_fake_server, raw_vector

from cairn.errors import TransientProviderError
from cairn.providers.embedding import Vectors
from cairn.providers.http import (
    HttpEmbedderConfig,
    HttpTextConfig,
    OllamaEmbedder,
    OllamaTextProvider,
    OpenAICompatibleEmbedder,
    OpenAICompatibleTextProvider,
    RetryPolicy,
    open_http_client,
)

ONE_TRY = RetryPolicy(attempts=1)
BOUND_S = 10.0
KINDS = ["openai", "ollama"]


class _Answer(msgspec.Struct, forbid_unknown_fields=True):
    ok: bool


def _embedder(
    kind: str, client: httpx.AsyncClient, base_url: str, **overrides: object
) -> OpenAICompatibleEmbedder | OllamaEmbedder:
    fields: dict[str, object] = {
        "base_url": base_url,
        "model": "fake-embed",
        "dimension": 8,
        "retry": ONE_TRY,
    }
    fields.update(overrides)
    config = HttpEmbedderConfig(**fields)  # type: ignore[arg-type]
    if kind == "openai":
        return OpenAICompatibleEmbedder(client, config)
    return OllamaEmbedder(client, config)


def _text(
    kind: str, client: httpx.AsyncClient, base_url: str, **overrides: object
) -> OpenAICompatibleTextProvider | OllamaTextProvider:
    fields: dict[str, object] = {
        "base_url": base_url,
        "model": "fake-chat",
        "retry": ONE_TRY,
    }
    fields.update(overrides)
    config = HttpTextConfig(**fields)  # type: ignore[arg-type]
    if kind == "openai":
        return OpenAICompatibleTextProvider(client, config)
    return OllamaTextProvider(client, config)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with open_http_client(trust_env=False) as opened:
        yield opened


async def test_each_provider_sends_its_own_timeouts_over_one_client() -> None:
    sent: list[dict[str, float | None]] = []

    async def record(request: httpx.Request) -> None:
        sent.append(request.extensions["timeout"])

    with trio.fail_after(BOUND_S):
        async with (
            open_http_client(
                trust_env=False, connect_timeout_s=9.0, read_timeout_s=99.0
            ) as shared,
            open_fake_server(chat_content='{"ok": true}') as server,
        ):
            shared.event_hooks = {"request": [record]}
            embedder = _embedder(
                "openai",
                shared,
                server.base_url,
                connect_timeout_s=1.5,
                read_timeout_s=2.5,
            )
            text = _text(
                "ollama",
                shared,
                server.base_url,
                connect_timeout_s=3.0,
                read_timeout_s=40.0,
            )
            unset = _embedder("ollama", shared, server.base_url)
            await embedder.embed_query("q")
            await text.complete_json("s", "u", _Answer, max_tokens=5)
            await unset.embed_query("q")
    assert sent == [
        {"connect": 1.5, "read": 2.5, "write": 2.5, "pool": None},
        {"connect": 3.0, "read": 40.0, "write": 40.0, "pool": None},
        # No timeouts configured: the shared client's own.
        {"connect": 9.0, "read": 99.0, "write": 99.0, "pool": None},
    ]


@pytest.mark.parametrize("kind", ["embedder", "text"])
async def test_short_provider_read_timeout_fires_on_a_patient_client(kind: str) -> None:
    with trio.fail_after(BOUND_S):
        async with (
            # The shared client's own default would wait far longer than the bound.
            open_http_client(trust_env=False, read_timeout_s=600.0) as shared,
            open_fake_server(mode="hang") as server,
        ):
            call = (
                _embedder(
                    "ollama", shared, server.base_url, read_timeout_s=0.05
                ).embed_query("q")
                if kind == "embedder"
                else _text(
                    "openai", shared, server.base_url, read_timeout_s=0.05
                ).complete_json("s", "u", _Answer, max_tokens=5)
            )
            with pytest.raises(TransientProviderError, match="timed out"):
                await call
    assert len(server.requests) == 1


async def _check_bound(
    server: FakeProviderServer, call: Callable[[int], Awaitable[object]], limit: int
) -> None:
    """Start 10 calls against a server that holds every request; at most ``limit`` arrive."""
    async with trio.open_nursery() as nursery:
        for index in range(10):
            nursery.start_soon(call, index)
        await server.wait_for_requests(limit)
        # Virtual time: every task able to send a request has had the chance to.
        await trio.sleep(1)
        assert len(server.requests) == limit
        assert server.in_flight == limit
        server.release.set()
    assert len(server.requests) == 10
    assert server.max_in_flight == limit


@pytest.mark.parametrize("kind", KINDS)
async def test_embedder_in_flight_requests_are_bounded(
    kind: str, autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="slow") as server:
            embedder = _embedder(kind, client, server.base_url, max_concurrency=3)
            await _check_bound(server, lambda i: embedder.embed_query(f"q{i}"), 3)


@pytest.mark.parametrize("kind", KINDS)
async def test_text_in_flight_requests_are_bounded(
    kind: str, autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="slow", chat_content='{"ok": true}') as server:
            text = _text(kind, client, server.base_url, max_concurrency=2)
            await _check_bound(
                server,
                lambda i: text.complete_json("s", f"u{i}", _Answer, max_tokens=5),
                2,
            )


async def test_document_batches_go_out_concurrently_within_the_bound(
    autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    texts = [f"text {index}" for index in range(7)]
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="slow") as server:
            # Documents may use all slots but one: 3 of 4.
            embedder = _embedder(
                "openai", client, server.base_url, max_batch_size=1, max_concurrency=4
            )
            async with trio.open_nursery() as nursery:
                result: list[Vectors] = []

                async def run() -> None:
                    result.append(await embedder.embed_documents(texts))

                nursery.start_soon(run)
                await server.wait_for_requests(3)
                await trio.sleep(1)
                assert server.in_flight == 3
                server.release.set()
    assert server.max_in_flight == 3
    # Rows come back in input order whatever order the batches finished in.
    raw = np.asarray([raw_vector(text, 8) for text in texts], dtype=np.float32)
    expected = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    np.testing.assert_allclose(result[0], expected, atol=1e-5)


async def test_a_failed_batch_surfaces_its_own_error(
    client: httpx.AsyncClient,
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="server_error") as server:
            embedder = _embedder(
                "ollama", client, server.base_url, max_batch_size=1, max_concurrency=2
            )
            with pytest.raises(TransientProviderError, match="HTTP 500"):
                await embedder.embed_documents(["a", "b", "c"])


async def test_document_batches_leave_a_slot_for_queries(
    autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="slow") as server:
            embedder = _embedder(
                "ollama", client, server.base_url, max_batch_size=1, max_concurrency=3
            )
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    embedder.embed_documents, [f"d{i}" for i in range(6)]
                )
                await server.wait_for_requests(2)
                await trio.sleep(1)
                assert len(server.requests) == 2  # documents hold 2 of 3 slots
                nursery.start_soon(embedder.embed_query, "the query")
                await server.wait_for_requests(3)
                assert server.requests[2].body["input"] == ["the query"]
                server.release.set()
    assert server.max_in_flight == 3
