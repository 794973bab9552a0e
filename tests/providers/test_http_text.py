"""HTTP text providers against a real loopback fake: structured JSON answers and failures.

Invariants: the answer's JSON schema (from the caller's msgspec Struct) is sent to the
provider and the answer is decoded into that Struct; a refusal, empty, truncated, non-JSON or
wrong-shape answer is a ProviderContractError (never retried); 5xx is retried then succeeds;
no API key reaches an error, repr or log line; a cancelled call stops at once, unretried.
Real clock, every test bounded by ``trio.fail_after``; no test sleeps.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import AsyncIterator

import httpx
import msgspec
import pytest
import trio
import trio.testing
from tests.providers.fakes import open_fake_server

from cairn.errors import (
    ProviderContractError,
    ProviderError,
    TransientProviderError,
)
from cairn.providers.http import ApiKey, RetryPolicy, open_http_client
from cairn.providers.http.text import (
    HttpTextConfig,
    TextProvider,
    json_schema_for,
    schema_name,
)
from cairn.providers.http.text_ollama import OllamaTextProvider
from cairn.providers.http.text_openai import OpenAICompatibleTextProvider

NO_WAIT = RetryPolicy(attempts=3, wait_initial_s=0.0, wait_max_s=0.0, wait_jitter_s=0.0)
BOUND_S = 10.0
KINDS = ["openai", "ollama"]
PATHS = {"openai": "/v1/chat/completions", "ollama": "/api/chat"}
SECRET = "sk-test-0123456789abcdef"
KEY_VAR = "CAIRN_TEST_TEXT_KEY"


class Entity(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    kind: str


class Facts(msgspec.Struct, forbid_unknown_fields=True):
    summary: str
    confidence: float
    entities: list[Entity]


ANSWER = Facts(
    summary="Alice moved to Lyon",
    confidence=0.9,
    entities=[Entity(name="Alice", kind="person"), Entity(name="Lyon", kind="place")],
)
ANSWER_JSON = msgspec.json.encode(ANSWER).decode()


def _provider(
    kind: str, client: httpx.AsyncClient, base_url: str, **overrides: object
) -> OpenAICompatibleTextProvider | OllamaTextProvider:
    fields: dict[str, object] = {
        "base_url": base_url,
        "model": "fake-chat",
        "retry": NO_WAIT,
    }
    fields.update(overrides)
    config = HttpTextConfig(**fields)  # type: ignore[arg-type]
    if kind == "openai":
        return OpenAICompatibleTextProvider(client, config)
    return OllamaTextProvider(client, config)


async def _ask(provider: TextProvider, max_tokens: int = 256) -> Facts:
    return await provider.complete_json(
        "Extract facts.", "Alice moved to Lyon.", Facts, max_tokens=max_tokens
    )


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    # trust_env=False: a proxy variable in the environment must not reroute loopback.
    async with open_http_client(trust_env=False) as opened:
        yield opened


async def test_providers_satisfy_the_protocol() -> None:
    def check(provider: TextProvider) -> TextProvider:
        return provider

    config = HttpTextConfig(base_url="http://x", model="m")
    async with open_http_client() as client:
        openai = check(OpenAICompatibleTextProvider(client, config))
        ollama = check(OllamaTextProvider(client, config))
    assert (openai.identity.provider, openai.identity.model) == (
        "openai-compatible",
        "m",
    )
    assert (ollama.identity.provider, ollama.identity.model) == ("ollama", "m")


def test_schema_root_is_inlined_and_nested_defs_kept() -> None:
    schema = json_schema_for(Facts)
    assert schema["type"] == "object"
    assert schema["required"] == ["summary", "confidence", "entities"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["entities"]["items"] == {"$ref": "#/$defs/Entity"}
    assert schema["$defs"]["Entity"]["required"] == ["name", "kind"]
    assert "$defs" not in json_schema_for(Entity)
    assert schema_name(Facts) == "Facts"
    with pytest.raises(TypeError, match=r"msgspec\.Struct"):
        json_schema_for(dict)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", KINDS)
async def test_success_decodes_into_the_struct(
    kind: str, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(chat_content=ANSWER_JSON) as server:
            answer = await _ask(_provider(kind, client, server.base_url))
    assert answer == ANSWER
    assert isinstance(answer.entities[0], Entity)
    assert len(server.requests) == 1
    assert server.requests[0].path == PATHS[kind]


async def test_openai_request_carries_schema_and_bounds(
    client: httpx.AsyncClient,
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(chat_content=ANSWER_JSON) as server:
            await _ask(_provider("openai", client, server.base_url), max_tokens=77)
    body = server.requests[0].body
    assert body["model"] == "fake-chat"
    assert body["messages"] == [
        {"role": "system", "content": "Extract facts."},
        {"role": "user", "content": "Alice moved to Lyon."},
    ]
    assert body["max_tokens"] == 77
    assert body["temperature"] == 0
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "Facts",
            "schema": json_schema_for(Facts),
            "strict": True,
        },
    }
    assert "authorization" not in server.requests[0].headers


async def test_ollama_request_carries_format_and_bounds(
    client: httpx.AsyncClient,
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(chat_content=ANSWER_JSON) as server:
            await _ask(_provider("ollama", client, server.base_url), max_tokens=77)
    body = server.requests[0].body
    assert body["model"] == "fake-chat"
    assert [message["role"] for message in body["messages"]] == ["system", "user"]
    assert body["stream"] is False
    assert body["format"] == json_schema_for(Facts)
    assert body["options"] == {"num_predict": 77, "temperature": 0}


async def test_openai_sends_the_configured_token_limit_field(
    client: httpx.AsyncClient,
) -> None:
    # Newer OpenAI models reject max_tokens and want max_completion_tokens.
    with trio.fail_after(BOUND_S):
        async with open_fake_server(chat_content=ANSWER_JSON) as server:
            provider = _provider(
                "openai",
                client,
                server.base_url,
                token_limit_field="max_completion_tokens",
            )
            await _ask(provider, max_tokens=77)
    body = server.requests[0].body
    assert body["max_completion_tokens"] == 77
    assert "max_tokens" not in body


def test_unknown_token_limit_field_is_rejected() -> None:
    with pytest.raises(ValueError, match="token_limit_field"):
        HttpTextConfig(base_url="http://x", model="m", token_limit_field="max_length")


@pytest.mark.parametrize("kind", KINDS)
async def test_configured_max_tokens_is_a_ceiling(
    kind: str, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(chat_content=ANSWER_JSON) as server:
            provider = _provider(kind, client, server.base_url, max_tokens=50)
            await _ask(provider, max_tokens=500)
            await _ask(provider, max_tokens=20)
    caps = [
        request.body["max_tokens"]
        if kind == "openai"
        else request.body["options"]["num_predict"]
        for request in server.requests
    ]
    assert caps == [50, 20]


@pytest.mark.parametrize("kind", KINDS)
async def test_server_error_is_retried_then_succeeds(
    kind: str, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="server_error_then_success",
            server_error_count=2,
            chat_content=ANSWER_JSON,
        ) as server:
            answer = await _ask(_provider(kind, client, server.base_url))
    assert answer == ANSWER
    assert len(server.requests) == 3


@pytest.mark.parametrize("kind", KINDS)
async def test_persistent_server_error_is_transient(
    kind: str, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="server_error") as server:
            with pytest.raises(TransientProviderError, match="HTTP 500"):
                await _ask(_provider(kind, client, server.base_url))
    assert len(server.requests) == NO_WAIT.attempts


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("mode", "content", "message"),
    [
        ("chat_truncated", ANSWER_JSON, "truncated at max_tokens=256"),
        ("chat_not_json", ANSWER_JSON, "not valid JSON"),
        ("chat_empty", ANSWER_JSON, "empty answer"),
        (
            "success",
            '{"summary": "x", "confidence": "high", "entities": []}',
            "does not match Facts",
        ),
        ("success", '{"summary": "x"}', "does not match Facts"),
        ("success", "[1, 2]", "does not match Facts"),
        ("malformed_json", ANSWER_JSON, "malformed JSON"),
        ("wrong_schema", ANSWER_JSON, "unexpected response shape"),
        ("unauthorized", ANSWER_JSON, "HTTP 401"),
    ],
)
async def test_contract_errors_are_not_retried(
    kind: str, mode: str, content: str, message: str, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode=mode, chat_content=content) as server:
            with pytest.raises(ProviderContractError, match=message):
                await _ask(_provider(kind, client, server.base_url))
    assert len(server.requests) == 1


async def test_openai_refusal_is_a_contract_error(client: httpx.AsyncClient) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="chat_refusal") as server:
            with pytest.raises(ProviderContractError, match="refused") as caught:
                await _ask(_provider("openai", client, server.base_url))
    assert "can't help" not in str(caught.value)  # model output is not quoted
    assert len(server.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_invalid_max_tokens_is_rejected_before_any_request(
    kind: str, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(chat_content=ANSWER_JSON) as server:
            with pytest.raises(ValueError, match="max_tokens"):
                await _ask(_provider(kind, client, server.base_url), max_tokens=0)
    assert server.requests == []


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["unauthorized", "server_error", "chat_not_json"])
async def test_no_secret_in_errors_logs_or_reprs(
    kind: str,
    mode: str,
    client: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(KEY_VAR, SECRET)
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode=mode, secret_in_error_body=SECRET, chat_content=ANSWER_JSON
        ) as server:
            provider = _provider(kind, client, server.base_url, api_key=ApiKey(KEY_VAR))
            with pytest.raises(ProviderError) as caught:
                await _ask(provider)
    # The key did travel, where it belongs, so the masking is what keeps it out.
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in "".join(traceback.format_exception(caught.value))
    assert SECRET not in repr(caught.value)
    assert SECRET not in repr(provider)
    assert KEY_VAR in repr(provider.config)
    assert caplog.records or mode == "chat_not_json"
    for record in caplog.records:
        assert SECRET not in record.getMessage()
        assert SECRET not in repr(record.__dict__)
    assert SECRET not in caplog.text


@pytest.mark.parametrize("kind", KINDS)
async def test_hung_request_is_cancelled_without_retry(
    kind: str, client: httpx.AsyncClient
) -> None:
    async def ask(provider: OpenAICompatibleTextProvider | OllamaTextProvider) -> None:
        await _ask(provider)

    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="hang", chat_content=ANSWER_JSON) as server:
            provider = _provider(kind, client, server.base_url)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask, provider)
                await server.request_arrived.wait()
                nursery.cancel_scope.cancel(reason="stop")
            await trio.testing.wait_all_tasks_blocked()
            assert len(server.requests) == 1
            # The shared client is still usable after a cancelled call.
            server.mode = "success"
            answer = await _ask(provider)
    assert answer == ANSWER
    assert len(server.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
async def test_deadline_cuts_off_a_slow_answer(
    kind: str, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="slow", chat_content=ANSWER_JSON) as server:
            with trio.CancelScope() as deadline_scope:
                async with trio.open_nursery() as nursery:

                    async def cancel_on_arrival() -> None:
                        await server.request_arrived.wait()
                        deadline_scope.cancel()

                    nursery.start_soon(cancel_on_arrival)
                    await _ask(_provider(kind, client, server.base_url))
            assert deadline_scope.cancelled_caught
            assert len(server.requests) == 1
