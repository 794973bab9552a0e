"""Building providers from settings over ONE shared client: the right class, the settings'
limits carried into each provider, and requests that really reach the configured server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import msgspec
import pytest
import trio
from tests.providers.fakes import open_fake_server

from cairn.errors import InvalidInputError
from cairn.providers.http import (
    OllamaEmbedder,
    OllamaTextProvider,
    OpenAICompatibleEmbedder,
    OpenAICompatibleTextProvider,
    open_http_client,
)
from cairn.providers.http.factory import http_embedder, http_text_provider
from cairn.providers.settings import EmbeddingSettings, TextSettings

BOUND_S = 10.0
SECRET = "sk-test-FACTORY-0123456789"
KEY_VAR = "CAIRN_TEST_FACTORY_KEY"


class _Answer(msgspec.Struct, forbid_unknown_fields=True):
    ok: bool


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with open_http_client(trust_env=False) as opened:
        yield opened


async def test_local_embedding_is_not_an_http_provider(
    client: httpx.AsyncClient,
) -> None:
    with pytest.raises(InvalidInputError, match="'local' is not an HTTP provider"):
        http_embedder(EmbeddingSettings(), client)


async def test_no_text_provider_is_none(client: httpx.AsyncClient) -> None:
    assert http_text_provider(TextSettings(), client) is None


@pytest.mark.parametrize(
    ("provider", "kind"),
    [("openai-compatible", OpenAICompatibleEmbedder), ("ollama", OllamaEmbedder)],
)
async def test_embedder_from_settings_uses_the_shared_client(
    provider: str,
    kind: type,
    client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_VAR, SECRET)
    with trio.fail_after(BOUND_S):
        async with open_fake_server(dimension=6) as server:
            settings = EmbeddingSettings(
                provider=provider,
                base_url=server.base_url,
                model="fake-embed",
                dimension=6,
                api_key_env=KEY_VAR,
                max_batch_size=3,
                connect_timeout_s=2.0,
                read_timeout_s=7.0,
                max_concurrency=5,
            )
            embedder = http_embedder(settings, client)
            vectors = await embedder.embed_documents(["a", "b", "c", "d"])
    assert isinstance(embedder, kind)
    assert embedder.client is client
    assert (
        embedder.config.max_batch_size,
        embedder.config.connect_timeout_s,
        embedder.config.read_timeout_s,
        embedder.config.max_concurrency,
    ) == (3, 2.0, 7.0, 5)
    assert vectors.shape == (4, 6)
    assert embedder.identity.provider == provider
    assert {request.headers["authorization"] for request in server.requests} == {
        f"Bearer {SECRET}"
    }
    assert SECRET not in repr(embedder)


@pytest.mark.parametrize(
    ("provider", "kind", "path"),
    [
        ("openai-compatible", OpenAICompatibleTextProvider, "/v1/chat/completions"),
        ("ollama", OllamaTextProvider, "/api/chat"),
    ],
)
async def test_text_provider_from_settings(
    provider: str, kind: type, path: str, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(chat_content='{"ok": true}') as server:
            settings = TextSettings(
                provider=provider,
                base_url=server.base_url,
                model="fake-chat",
                max_tokens=40,
                token_limit_field="max_completion_tokens",
                max_concurrency=3,
            )
            text = http_text_provider(settings, client)
            assert text is not None
            answer = await text.complete_json("s", "u", _Answer, max_tokens=100)
    assert isinstance(text, kind)
    assert answer == _Answer(ok=True)
    assert text.identity.provider == provider
    body = server.requests[0].body
    assert server.requests[0].path == path
    if provider == "ollama":
        assert body["options"]["num_predict"] == 40
    else:
        assert body["max_completion_tokens"] == 40
