"""HTTP embedders against a real loopback fake: vector contract, batching, error mapping.

Invariants: vectors are float32, unit length, in input order; a provider that answers the
wrong shape or dimension is a ProviderContractError (never retried); transport trouble, 429
and 5xx are TransientProviderError and retried; a cancelled call stops at once, unretried.
Real clock, every test bounded by ``trio.fail_after``; no test sleeps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import numpy as np
import pytest
import trio
import trio.testing
from tests.providers.fakes import (
    FakeProviderServer,
    open_fake_server,
    raw_vector,
    unused_port,
)

from cairn.errors import ProviderContractError, TransientProviderError
from cairn.providers.embedding import EmbeddingProvider
from cairn.providers.http import (
    HttpEmbedderConfig,
    OllamaEmbedder,
    OpenAICompatibleEmbedder,
    RetryPolicy,
    open_http_client,
)

# Zero waits: retries are exercised without real sleeping.
NO_WAIT = RetryPolicy(attempts=3, wait_initial_s=0.0, wait_max_s=0.0, wait_jitter_s=0.0)
BOUND_S = 10.0
KINDS = ["openai", "ollama"]


def _embedder(
    kind: str, client: httpx.AsyncClient, base_url: str, **overrides: object
) -> OpenAICompatibleEmbedder | OllamaEmbedder:
    fields: dict[str, object] = {
        "base_url": base_url,
        "model": "fake-embed",
        "dimension": 8,
        "retry": NO_WAIT,
    }
    fields.update(overrides)
    config = HttpEmbedderConfig(**fields)  # type: ignore[arg-type]
    if kind == "openai":
        return OpenAICompatibleEmbedder(client, config)
    return OllamaEmbedder(client, config)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    # trust_env=False: a proxy variable in the environment must not reroute loopback.
    async with open_http_client(trust_env=False) as opened:
        yield opened


def _expected(texts: list[str], dimension: int = 8) -> np.ndarray:
    raw = np.asarray([raw_vector(text, dimension) for text in texts], dtype=np.float32)
    unit: np.ndarray = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    return unit


async def test_embedders_satisfy_the_protocol() -> None:
    def check(provider: EmbeddingProvider) -> EmbeddingProvider:
        return provider

    config = HttpEmbedderConfig(base_url="http://x", model="m", dimension=4)
    async with open_http_client() as client:
        check(OpenAICompatibleEmbedder(client, config))
        check(OllamaEmbedder(client, config))
    assert OllamaEmbedder(client, config).identity.provider == "ollama"
    assert OpenAICompatibleEmbedder(client, config).identity.dimension == 4


@pytest.mark.parametrize("kind", KINDS)
async def test_success_batches_orders_and_normalises(
    kind: str, client: httpx.AsyncClient
) -> None:
    texts = [f"text {index}" for index in range(5)]
    with trio.fail_after(BOUND_S):
        async with open_fake_server() as server:
            embedder = _embedder(kind, client, server.base_url, max_batch_size=2)
            vectors = await embedder.embed_documents(texts)
    assert vectors.shape == (5, 8)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors, _expected(texts), atol=1e-5)
    # The batches go out concurrently, so they may arrive in any order.
    assert sorted(len(request.body["input"]) for request in server.requests) == [
        1,
        2,
        2,
    ]
    assert all(request.body["model"] == "fake-embed" for request in server.requests)


@pytest.mark.parametrize("kind", KINDS)
async def test_empty_input_makes_no_request(
    kind: str, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server() as server:
            embedder = _embedder(kind, client, server.base_url)
            with trio.testing.assert_checkpoints():
                vectors = await embedder.embed_documents([])
    assert vectors.shape == (0, 8)
    assert server.requests == []


@pytest.mark.parametrize("kind", KINDS)
async def test_query_sends_first_2000_code_points(
    kind: str, client: httpx.AsyncClient
) -> None:
    query = "茶" * 2500
    with trio.fail_after(BOUND_S):
        async with open_fake_server() as server:
            vector = await _embedder(kind, client, server.base_url).embed_query(query)
    assert vector.shape == (8,)
    assert server.requests[0].body["input"] == ["茶" * 2000]
    np.testing.assert_allclose(vector, _expected(["茶" * 2000])[0], atol=1e-5)


async def test_openai_dimensions_parameter_is_optional(
    client: httpx.AsyncClient,
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server() as server:
            await _embedder("openai", client, server.base_url).embed_query("a")
            await _embedder(
                "openai", client, server.base_url, request_dimensions=True
            ).embed_query("b")
    assert "dimensions" not in server.requests[0].body
    assert server.requests[1].body["dimensions"] == 8


@pytest.mark.parametrize("kind", KINDS)
async def test_rate_limit_is_retried(kind: str, client: httpx.AsyncClient) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="rate_limited_then_success", rate_limited_count=2
        ) as server:
            vector = await _embedder(kind, client, server.base_url).embed_query("q")
    assert vector.shape == (8,)
    assert len(server.requests) == 3


@pytest.mark.parametrize("kind", KINDS)
async def test_server_error_is_transient_after_all_attempts(
    kind: str, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="server_error") as server:
            with pytest.raises(TransientProviderError, match="HTTP 500"):
                await _embedder(kind, client, server.base_url).embed_query("q")
    assert len(server.requests) == NO_WAIT.attempts


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("malformed_json", "malformed JSON"),
        ("wrong_schema", "unexpected response shape"),
        ("wrong_dimension", "expected dimension 8, got 7"),
        ("unauthorized", "HTTP 401"),
    ],
)
async def test_contract_errors_are_not_retried(
    kind: str, mode: str, message: str, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode=mode) as server:
            with pytest.raises(ProviderContractError, match=message):
                await _embedder(kind, client, server.base_url).embed_documents(
                    ["a", "b"]
                )
    assert len(server.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_connection_refused_is_transient(
    kind: str, client: httpx.AsyncClient
) -> None:
    base_url = f"http://127.0.0.1:{unused_port()}"
    with (
        trio.fail_after(BOUND_S),
        pytest.raises(TransientProviderError, match="transport error"),
    ):
        await _embedder(kind, client, base_url).embed_query("q")


@pytest.mark.parametrize("kind", KINDS)
async def test_slow_response_completes_when_released(
    kind: str, client: httpx.AsyncClient
) -> None:
    async def release_after_arrival(server: FakeProviderServer) -> None:
        await server.request_arrived.wait()
        server.release.set()

    with trio.fail_after(BOUND_S):
        async with (
            open_fake_server(mode="slow") as server,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(release_after_arrival, server)
            vector = await _embedder(kind, client, server.base_url).embed_query("q")
    assert vector.shape == (8,)


@pytest.mark.parametrize("kind", KINDS)
async def test_slow_response_past_deadline_is_cut_off(
    kind: str, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="slow") as server:
            # A real short deadline against a server that waits for a release that never comes.
            with trio.move_on_after(0.2) as deadline_scope:
                await _embedder(kind, client, server.base_url).embed_query("q")
            assert deadline_scope.cancelled_caught
            # Never retried after our own deadline. (On a loaded machine the request may not
            # even have arrived within 0.2 s, so this is at most one, not exactly one.)
            assert len(server.requests) <= 1


@pytest.mark.parametrize("kind", KINDS)
async def test_hung_request_is_cancelled_without_retry(
    kind: str, client: httpx.AsyncClient
) -> None:
    async def embed(embedder: OpenAICompatibleEmbedder | OllamaEmbedder) -> None:
        await embedder.embed_query("q")

    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="hang") as server:
            embedder = _embedder(kind, client, server.base_url)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(embed, embedder)
                await server.request_arrived.wait()
                nursery.cancel_scope.cancel(reason="stop")
            await trio.testing.wait_all_tasks_blocked()
            assert len(server.requests) == 1
            # The shared client is still usable after a cancelled call.
            server.mode = "success"
            vector = await embedder.embed_query("again")
    assert vector.shape == (8,)
