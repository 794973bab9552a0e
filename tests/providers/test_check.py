"""Provider checks: identity, warm-up and warm latency, and a typed, secret-free verdict.

Against the real loopback fake, on virtual time (``MockClock``), so latencies are exact: a
network round trip takes no virtual time, and the ``slow`` server answers when the test says.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
import trio
import trio.testing
from tests.providers.fakes import FakeProviderServer, open_fake_server, unused_port

from cairn.providers.check import check_embedder, check_text_provider
from cairn.providers.http import (
    ApiKey,
    HttpEmbedderConfig,
    HttpTextConfig,
    OllamaTextProvider,
    OpenAICompatibleEmbedder,
    OpenAICompatibleTextProvider,
    RetryPolicy,
    open_http_client,
)
from cairn.testing import HashingEmbedder
from cairn.vectors.identity import EmbeddingIdentity

SECRET = "sk-test-CHECK-0123456789"
KEY_VAR = "CAIRN_TEST_CHECK_KEY"
ONE_TRY = RetryPolicy(attempts=1)
BOUND_S = 1000.0  # virtual


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with open_http_client(trust_env=False) as opened:
        yield opened


def _embedder(
    client: httpx.AsyncClient, base_url: str, dimension: int = 8
) -> OpenAICompatibleEmbedder:
    return OpenAICompatibleEmbedder(
        client,
        HttpEmbedderConfig(
            base_url=base_url,
            model="fake-embed",
            dimension=dimension,
            api_key=ApiKey(KEY_VAR),
            retry=ONE_TRY,
        ),
    )


async def _release_after(server: FakeProviderServer, delays: list[float]) -> None:
    """Answer the held requests one by one, each ``delay`` virtual seconds after it arrived."""
    for index, delay in enumerate(delays, start=1):
        await server.wait_for_requests(index)
        await trio.sleep(delay)
        server.release.set()
        server.release = trio.Event()


async def test_embedder_check_reports_identity_and_latencies(
    autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with (
            open_fake_server(mode="slow") as server,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(_release_after, server, [0.25, 0.05, 0.125])
            report = await check_embedder(_embedder(client, server.base_url))
    assert report == {
        "kind": "embedding",
        "provider": "openai-compatible",
        "model": "fake-embed",
        "dimension": 8,
        "warm_up_ms": 250.0,
        "warm_ms": 50.0,
        "batch_of_2_ms": 125.0,
        "ok": True,
        "error": None,
    }
    assert json.loads(json.dumps(report)) == report


async def test_wrong_dimension_is_reported_as_an_error(
    autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="wrong_dimension") as server:
            report = await check_embedder(_embedder(client, server.base_url))
    assert report["ok"] is False
    assert report["error"]["type"] == "ProviderContractError"
    assert "expected dimension 8, got 7" in report["error"]["message"]
    assert "warm_up_ms" not in report


async def test_unreachable_provider_is_a_transient_error(
    autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        report = await check_embedder(
            _embedder(client, f"http://127.0.0.1:{unused_port()}")
        )
    assert report["ok"] is False
    assert report["error"]["type"] == "TransientProviderError"


async def test_a_hung_provider_is_reported_after_the_timeout(
    autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="hang") as server:
            started = trio.current_time()
            report = await check_embedder(
                _embedder(client, server.base_url), timeout_s=3.0
            )
            elapsed = trio.current_time() - started
    assert elapsed == pytest.approx(3.0)
    assert report["error"] == {
        "type": "TimeoutError",
        "message": "no answer within 3 s (warm_up_ms)",
    }


async def test_any_embedding_provider_can_be_checked(
    autojump_clock: trio.testing.MockClock,
) -> None:
    report = await check_embedder(HashingEmbedder(dimension=32))
    assert report["ok"] is True, report
    assert (report["provider"], report["dimension"]) == ("testing", 32)
    assert {"warm_up_ms", "warm_ms", "batch_of_2_ms"} <= set(report)


class _MisreportingEmbedder(HashingEmbedder):
    """Claims one more dimension than its vectors have."""

    @property
    def identity(self) -> EmbeddingIdentity:
        return EmbeddingIdentity("testing", "hashing-v1", self.dimension + 1)


async def test_vectors_unlike_the_identity_are_an_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    report = await check_embedder(_MisreportingEmbedder(dimension=32))
    assert report["ok"] is False
    assert report["error"] == {
        "type": "ProviderContractError",
        "message": "embedder returned shape (32,), expected (33,)",
    }


@pytest.mark.parametrize("kind", ["openai", "ollama"])
async def test_text_check_reports_identity_and_latencies(
    kind: str, autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with (
            open_fake_server(mode="slow", chat_content='{"ok": true}') as server,
            trio.open_nursery() as nursery,
        ):
            config = HttpTextConfig(base_url=server.base_url, model="fake-chat")
            provider = (
                OpenAICompatibleTextProvider(client, config)
                if kind == "openai"
                else OllamaTextProvider(client, config)
            )
            nursery.start_soon(_release_after, server, [1.5, 0.5])
            report = await check_text_provider(provider)
    assert report == {
        "kind": "text",
        "provider": provider.identity.provider,
        "model": "fake-chat",
        "warm_up_ms": 1500.0,
        "warm_ms": 500.0,
        "ok": True,
        "error": None,
    }


async def test_text_check_without_a_provider() -> None:
    report = await check_text_provider(None)
    assert report == {
        "kind": "text",
        "provider": "none",
        "model": None,
        "ok": True,
        "error": None,
    }


async def test_text_check_reports_a_contract_error(
    autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="chat_not_json") as server:
            provider = OpenAICompatibleTextProvider(
                client, HttpTextConfig(base_url=server.base_url, model="m")
            )
            report = await check_text_provider(provider)
    assert report["ok"] is False
    assert report["error"]["type"] == "ProviderContractError"


@pytest.mark.parametrize(
    "mode", ["unauthorized", "server_error", "rate_limited", "malformed_json"]
)
@pytest.mark.parametrize("kind", ["embedder", "text"])
async def test_check_reports_carry_no_secret(
    kind: str,
    mode: str,
    autojump_clock: trio.testing.MockClock,
    client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("DEBUG")
    monkeypatch.setenv(KEY_VAR, SECRET)
    fields: dict[str, object] = {"secret_in_error_body": SECRET}
    if mode == "rate_limited":
        fields.update(
            mode="rate_limited_then_success", rate_limited_count=99, retry_after="1"
        )
    else:
        fields["mode"] = mode
    with trio.fail_after(BOUND_S):
        async with open_fake_server(**fields) as server:
            if kind == "embedder":
                report = await check_embedder(_embedder(client, server.base_url))
            else:
                report = await check_text_provider(
                    OpenAICompatibleTextProvider(
                        client,
                        HttpTextConfig(
                            base_url=server.base_url,
                            model="m",
                            api_key=ApiKey(KEY_VAR),
                            retry=RetryPolicy(attempts=2),
                        ),
                    )
                )
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert report["ok"] is False
    assert SECRET not in json.dumps(report)
    assert SECRET not in caplog.text
