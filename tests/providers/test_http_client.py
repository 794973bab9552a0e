"""The shared JSON POST helper and provider config: error mapping and secret hygiene.

Invariant: an API key (read from the env var the config names) reaches the server's
Authorization header and nowhere else: not in a repr, an error message, a chained traceback or
any log record at any level, whatever the failure.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import AsyncIterator

import httpx
import msgspec
import pytest
import trio
from tests.providers.fakes import open_fake_server, unused_port

from cairn.errors import ProviderContractError, ProviderError, TransientProviderError
from cairn.providers.http import (
    ApiKey,
    HttpEmbedderConfig,
    OpenAICompatibleEmbedder,
    RetryPolicy,
    open_http_client,
    post_json,
)
from cairn.providers.http.client import safe_endpoint

SECRET = "sk-test-SECRET-0123456789"
ENV_VAR = "CAIRN_TEST_PROVIDER_KEY"
NO_WAIT = RetryPolicy(attempts=2, wait_initial_s=0.0, wait_max_s=0.0, wait_jitter_s=0.0)
BOUND_S = 10.0


class _Echo(msgspec.Struct):
    embeddings: list[list[float]]


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with open_http_client(trust_env=False, read_timeout_s=5.0) as opened:
        yield opened


def test_config_repr_hides_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, SECRET)
    config = HttpEmbedderConfig(
        base_url=f"http://user:{SECRET}@example.test/v1?api-key={SECRET}",
        model="m",
        dimension=4,
        api_key=ApiKey(ENV_VAR),
    )
    assert config.api_key is not None
    assert config.api_key.resolve() == SECRET
    for text in (repr(config), str(config), repr(config.api_key)):
        assert SECRET not in text
    assert ENV_VAR in repr(config)
    assert safe_endpoint(config.base_url) == "http://example.test/v1"


def test_api_key_blank_or_unset_sends_no_header() -> None:
    assert ApiKey("X").bearer_headers({}) == {}
    assert ApiKey("X").bearer_headers({"X": "  "}) == {}
    assert ApiKey("X").bearer_headers({"X": "k"}) == {"authorization": "Bearer k"}


@pytest.mark.parametrize(
    "mode",
    ["unauthorized", "server_error", "malformed_json", "wrong_dimension", "refused"],
)
async def test_no_secret_in_errors_logs_or_reprs(
    mode: str,
    client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(ENV_VAR, SECRET)
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="success" if mode == "refused" else mode, secret_in_error_body=SECRET
        ) as server:
            port = unused_port() if mode == "refused" else server.port
            config = HttpEmbedderConfig(
                base_url=f"http://127.0.0.1:{port}",
                model="m",
                dimension=8,
                api_key=ApiKey(ENV_VAR),
                retry=NO_WAIT,
            )
            embedder = OpenAICompatibleEmbedder(client, config)
            with pytest.raises(ProviderError) as caught:
                await embedder.embed_query("q")
    if mode != "refused":
        # The key did travel, where it belongs.
        assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    formatted = "".join(traceback.format_exception(caught.value))
    assert SECRET not in formatted
    assert SECRET not in repr(caught.value)
    assert SECRET not in repr(embedder)
    assert caplog.records or mode in {"malformed_json", "wrong_dimension"}
    for record in caplog.records:
        assert SECRET not in record.getMessage()
        assert SECRET not in repr(record.__dict__)
    assert SECRET not in caplog.text


async def test_unauthorized_body_is_quoted_but_key_masked(
    client: httpx.AsyncClient,
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="unauthorized", secret_in_error_body=SECRET
        ) as server:
            with pytest.raises(ProviderContractError) as caught:
                await post_json(
                    client,
                    f"{server.base_url}/api/embed",
                    {"model": "m", "input": ["x"]},
                    headers={"Authorization": f"Bearer {SECRET}"},
                    decoder=msgspec.json.Decoder(_Echo),
                    retry=NO_WAIT,
                )
    assert "Incorrect API key provided: ***" in str(caught.value)


async def test_read_timeout_is_transient_and_retried() -> None:
    with trio.fail_after(BOUND_S):
        async with (
            open_http_client(trust_env=False, read_timeout_s=0.1) as short_client,
            open_fake_server(mode="hang") as server,
        ):
            with pytest.raises(TransientProviderError, match="timed out"):
                await post_json(
                    short_client,
                    f"{server.base_url}/api/embed",
                    {"model": "m", "input": ["x"]},
                    headers={},
                    decoder=msgspec.json.Decoder(_Echo),
                    retry=NO_WAIT,
                )
    assert len(server.requests) == NO_WAIT.attempts


async def test_bad_scheme_is_a_contract_error(client: httpx.AsyncClient) -> None:
    with trio.fail_after(BOUND_S), pytest.raises(ProviderContractError):
        await post_json(
            client,
            "ftp://127.0.0.1/x",
            {},
            headers={},
            decoder=msgspec.json.Decoder(_Echo),
            retry=NO_WAIT,
        )


async def test_decoded_success(client: httpx.AsyncClient) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(dimension=3) as server:
            result = await post_json(
                client,
                f"{server.base_url}/api/embed",
                {"model": "m", "input": ["x", "y"]},
                headers={},
                decoder=msgspec.json.Decoder(_Echo),
            )
    assert len(result.embeddings) == 2
    assert all(len(row) == 3 for row in result.embeddings)
