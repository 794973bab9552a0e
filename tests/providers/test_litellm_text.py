"""The LiteLLM text provider against the real loopback fake (an OpenAI-compatible server):
``litellm.acompletion`` runs on the trio run's asyncio loop through trio-asyncio.

Invariants: the answer is decoded into the caller's Struct; refusal, empty, truncated,
non-JSON, wrong-shape answers, a body that is not JSON and 4xx are ProviderContractErrors,
never retried; 5xx and 429 are retried under cairn's policy (LiteLLM's and the OpenAI SDK's
own retries are off) and end as TransientProviderErrors; a hung call is cancelled by a trio
cancel scope and its connection really closed; the key reaches no error, repr, log record
or output; LiteLLM makes no connection but to the configured endpoint, at import or call.
Every test is bounded by ``trio.fail_after``; waits are events, never sleeps.

LiteLLM is imported once for the module (it takes seconds) before any deadline starts.
"""

from __future__ import annotations

import asyncio  # noqa: TID251 - an asyncio host for the guest-mode refusal
import json
import logging
import os
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from tests.conftest import TEST_CONFIG
from tests.helpers import turn
from tests.providers.fakes import open_fake_server, unused_port

from cairn import open_memory
from cairn.errors import (
    InvalidInputError,
    ProviderContractError,
    ProviderError,
    TransientProviderError,
)
from cairn.providers import litellm_text
from cairn.providers.check import check_text_provider
from cairn.providers.http import ApiKey, RetryAfterError, RetryPolicy
from cairn.providers.http.factory import http_text_provider
from cairn.providers.http.text import TextProvider, json_schema_for
from cairn.providers.litellm_text import (
    LiteLLMTextConfig,
    LiteLLMTextProvider,
    LiteLLMUnavailableError,
)
from cairn.providers.settings import TextSettings, load_text_settings
from cairn.runtime.core import runtime_core
from cairn.testing import FixedDomainClock, HashingEmbedder

ROOT = Path(__file__).resolve().parents[2]
NO_WAIT = RetryPolicy(attempts=3, wait_initial_s=0.0, wait_max_s=0.0, wait_jitter_s=0.0)
BOUND_S = 15.0
SECRET = "sk-test-litellm-0123456789abcdef"
KEY_VAR = "CAIRN_TEST_LITELLM_KEY"


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


@pytest.fixture(scope="module", autouse=True)
def _litellm_loaded() -> None:
    litellm_text._LOADED = litellm_text.load_litellm()


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VAR, SECRET)
    # A proxy variable in the environment must not reroute loopback (LiteLLM's clients
    # read the environment).
    monkeypatch.setenv("NO_PROXY", "*")
    monkeypatch.setenv("no_proxy", "*")


def _provider(base_url: str, **overrides: object) -> LiteLLMTextProvider:
    fields: dict[str, object] = {
        "model": "openai/fake-chat",
        "endpoint": f"{base_url}/v1",
        "api_key": ApiKey(KEY_VAR),
        "retry": NO_WAIT,
    }
    fields.update(overrides)
    return LiteLLMTextProvider(LiteLLMTextConfig(**fields))  # type: ignore[arg-type]


async def _ask(provider: TextProvider, max_tokens: int = 256) -> Facts:
    return await provider.complete_json(
        "Extract facts.", "Alice moved to Lyon.", Facts, max_tokens=max_tokens
    )


def test_provider_satisfies_the_protocol_and_hides_the_key() -> None:
    provider: TextProvider = _provider("http://user:pw@127.0.0.1:9/x?key=leak")
    assert (provider.identity.provider, provider.identity.model) == (
        "litellm",
        "openai/fake-chat",
    )
    text = repr(provider)
    assert KEY_VAR in text
    assert SECRET not in text
    assert "pw" not in text
    assert "leak" not in text


async def test_success_decodes_into_the_struct_and_sends_schema_and_bounds() -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(chat_content=ANSWER_JSON) as server:
            answer = await _ask(_provider(server.base_url), max_tokens=77)
    assert answer == ANSWER
    assert isinstance(answer.entities[0], Entity)
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    body = request.body
    assert body["model"] == "fake-chat"  # LiteLLM strips its provider prefix
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


async def test_configured_max_tokens_is_a_ceiling() -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(chat_content=ANSWER_JSON) as server:
            provider = _provider(server.base_url, max_tokens=50)
            await _ask(provider, max_tokens=500)
            await _ask(provider, max_tokens=20)
    assert [request.body["max_tokens"] for request in server.requests] == [50, 20]


async def test_server_error_is_retried_then_succeeds() -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="server_error_then_success",
            server_error_count=2,
            chat_content=ANSWER_JSON,
        ) as server:
            answer = await _ask(_provider(server.base_url))
    assert answer == ANSWER
    assert (
        len(server.requests) == 3
    )  # cairn's attempts only: LiteLLM and the SDK add none


async def test_persistent_server_error_is_transient() -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="server_error") as server:
            with pytest.raises(TransientProviderError, match="HTTP 500"):
                await _ask(_provider(server.base_url))
    assert len(server.requests) == NO_WAIT.attempts


async def test_rate_limit_waits_what_retry_after_says_then_succeeds() -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="rate_limited_then_success",
            retry_after="0",
            chat_content=ANSWER_JSON,
        ) as server:
            answer = await _ask(_provider(server.base_url))
        assert answer == ANSWER
        assert len(server.requests) == 2
        async with open_fake_server(
            mode="rate_limited_then_success", retry_after="0", rate_limited_count=9
        ) as server:
            with pytest.raises(RetryAfterError, match="HTTP 429") as caught:
                await _ask(_provider(server.base_url))
    assert caught.value.retry_after_s == 0.0
    assert len(server.requests) == NO_WAIT.attempts


async def test_an_unreachable_endpoint_is_a_transient_transport_error() -> None:
    with trio.fail_after(BOUND_S):
        provider = _provider(f"http://127.0.0.1:{unused_port()}")
        with pytest.raises(TransientProviderError, match="transport error"):
            await _ask(provider)


@pytest.mark.parametrize(
    ("mode", "content", "message"),
    [
        ("chat_truncated", ANSWER_JSON, "truncated at max_tokens=256"),
        ("chat_refusal", ANSWER_JSON, "refused"),
        ("chat_not_json", ANSWER_JSON, "not valid JSON"),
        ("chat_empty", ANSWER_JSON, "empty answer"),
        (
            "success",
            '{"summary": "x", "confidence": "high", "entities": []}',
            "does not match Facts",
        ),
        ("success", '{"summary": "x"}', "does not match Facts"),
        ("malformed_json", ANSWER_JSON, "malformed JSON in the response"),
        ("unauthorized", ANSWER_JSON, r"HTTP 401 \(AuthenticationError\)"),
    ],
)
async def test_contract_errors_are_not_retried(
    mode: str, content: str, message: str
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode=mode, chat_content=content) as server:
            with pytest.raises(ProviderContractError, match=message) as caught:
                await _ask(_provider(server.base_url))
    assert "can't help" not in str(caught.value)  # model output is not quoted
    assert len(server.requests) == 1


async def test_a_response_litellm_cannot_convert_is_transient() -> None:
    """A 200 whose body is JSON of the wrong shape: LiteLLM raises InternalServerError
    (500) and gives no sign that the provider answered, so it is retried like a 5xx (the
    HTTP providers call it a contract error; design/providers.md)."""
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="wrong_schema") as server:
            with pytest.raises(TransientProviderError, match="HTTP 500"):
                await _ask(_provider(server.base_url))
    assert len(server.requests) == NO_WAIT.attempts


async def test_invalid_max_tokens_is_rejected_before_any_request() -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(chat_content=ANSWER_JSON) as server:
            with pytest.raises(ValueError, match="max_tokens"):
                await _ask(_provider(server.base_url), max_tokens=0)
    assert server.requests == []


@pytest.mark.parametrize(
    "mode", ["unauthorized", "server_error", "chat_not_json", "malformed_json"]
)
async def test_no_secret_in_errors_logs_reprs_or_output(
    mode: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode=mode, secret_in_error_body=SECRET, chat_content=ANSWER_JSON
        ) as server:
            provider = _provider(server.base_url)
            with pytest.raises(ProviderError) as caught:
                await _ask(provider)
            report = await check_text_provider(provider, timeout_s=BOUND_S)
    # The key did travel, where it belongs, so keeping it out of the rest is our doing.
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    error = caught.value
    assert error.__cause__ is None
    link: BaseException | None = error
    while link is not None:  # LiteLLM's exception is not even in the context chain
        assert not type(link).__module__.startswith(("litellm", "openai")), link
        link = link.__context__
    assert SECRET not in "".join(traceback.format_exception(error))
    assert SECRET not in repr(error)
    assert SECRET not in repr(provider)
    assert report["ok"] is False
    assert SECRET not in json.dumps(report)
    for record in caplog.records:
        assert SECRET not in record.getMessage()
        assert SECRET not in repr(record.__dict__)
    assert SECRET not in caplog.text
    out, err = capfd.readouterr()
    assert SECRET not in out + err
    assert "Give Feedback" not in out  # LiteLLM's help banner is off


async def test_hung_call_is_cancelled_and_its_connection_closed() -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="hang_until_disconnect", chat_content=ANSWER_JSON
        ) as server:
            provider = _provider(server.base_url)
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_ask, provider)
                    await server.request_arrived.wait()
                    scope.cancel(reason="deadline")
            assert scope.cancelled_caught
            # The asyncio task was cancelled with the trio call: LiteLLM's HTTP client
            # dropped the connection (the fake saw EOF), and nothing retried.
            await server.disconnected.wait()
            assert len(server.requests) == 1
            # The loop and LiteLLM's client still serve the next call.
            server.mode = "success"
            answer = await _ask(provider)
    assert answer == ANSWER
    assert len(server.requests) == 2


async def test_a_deadline_cuts_off_a_slow_answer() -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="slow", chat_content=ANSWER_JSON) as server:
            with trio.CancelScope() as deadline_scope:
                async with trio.open_nursery() as nursery:

                    async def cancel_on_arrival() -> None:
                        await server.request_arrived.wait()
                        deadline_scope.cancel()

                    nursery.start_soon(cancel_on_arrival)
                    await _ask(_provider(server.base_url))
            assert deadline_scope.cancelled_caught
            assert len(server.requests) == 1


async def test_calls_in_flight_are_bounded_by_max_concurrency() -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="slow", chat_content=ANSWER_JSON) as server:
            provider = _provider(server.base_url, max_concurrency=2)
            async with trio.open_nursery() as nursery:
                for _ in range(4):
                    nursery.start_soon(_ask, provider)
                await server.wait_for_requests(2)
                await trio.testing.wait_all_tasks_blocked()
                assert len(server.requests) == 2
                server.release.set()
    assert len(server.requests) == 4
    assert server.max_in_flight == 2


def test_litellm_settings_from_file_and_environment(tmp_path: Path) -> None:
    (tmp_path / "cairn.toml").write_text(
        '[text]\nprovider = "litellm"\nmodel = "anthropic/claude-3-5-haiku-latest"\n'
        'api_key_env = "ANTHROPIC_API_KEY"\nmax_tokens = 900\n',
        encoding="utf-8",
    )
    settings = load_text_settings(
        tmp_path, environ={"CAIRN_TEXT_ENDPOINT": "http://127.0.0.1:4000"}
    )
    assert (settings.provider, settings.model, settings.endpoint) == (
        "litellm",
        "anthropic/claude-3-5-haiku-latest",
        "http://127.0.0.1:4000",
    )
    provider = litellm_text.litellm_text_provider(settings)
    assert provider.config.api_key == ApiKey("ANTHROPIC_API_KEY")
    assert provider.config.max_tokens == 900
    assert provider.config.endpoint == "http://127.0.0.1:4000"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[text]\nprovider = "litellm"\n', "needs model"),
        (
            '[text]\nprovider = "litellm"\nmodel = "m"\nbase_url = "http://x"\n',
            "takes endpoint, not base_url",
        ),
        (
            (
                '[text]\nprovider = "openai-compatible"\nmodel = "m"\n'
                'base_url = "http://x"\nendpoint = "http://x"\n'
            ),
            "takes base_url, not endpoint",
        ),
        (
            (
                '[text]\nprovider = "litellm"\nmodel = "m"\n'
                'token_limit_field = "max_completion_tokens"\n'
            ),
            "maps the token cap itself",
        ),
    ],
)
def test_bad_litellm_configuration_is_a_typed_error(
    tmp_path: Path, text: str, message: str
) -> None:
    (tmp_path / "cairn.toml").write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=message):
        load_text_settings(tmp_path, environ={})


async def test_factory_builds_it_and_it_answers() -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(chat_content='{"ok": true}') as server:
            settings = TextSettings(
                provider="litellm",
                model="openai/fake-chat",
                endpoint=f"{server.base_url}/v1",
                api_key_env=KEY_VAR,
                max_tokens=40,
            )
            text = http_text_provider(settings, client=None)  # type: ignore[arg-type]
            assert isinstance(text, LiteLLMTextProvider)
            report = await check_text_provider(text, timeout_s=BOUND_S)
    assert report["ok"] is True, report
    assert (report["provider"], report["model"]) == ("litellm", "openai/fake-chat")
    assert [request.body["max_tokens"] for request in server.requests] == [40, 40]


@pytest.mark.parametrize("module", ["litellm", "trio_asyncio"])
def test_missing_extra_is_a_typed_configuration_error(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    settings = TextSettings(provider="litellm", model="openai/m")
    with pytest.raises(
        LiteLLMUnavailableError, match=r"pip install 'cairn\[litellm\]'"
    ):
        litellm_text.litellm_text_provider(settings)
    assert issubclass(LiteLLMUnavailableError, InvalidInputError)
    if module == "litellm":
        with pytest.raises(LiteLLMUnavailableError, match="optional extra"):
            litellm_text.load_litellm()


def test_it_refuses_to_run_under_an_asyncio_host() -> None:
    """cairn as a trio guest on an asyncio loop: building the provider (or calling one
    built elsewhere) is a typed configuration error, before any request."""
    settings = TextSettings(provider="litellm", model="openai/m")
    built = litellm_text.litellm_text_provider(settings)  # no host loop here

    async def trio_main() -> list[str]:
        messages = []
        with pytest.raises(
            LiteLLMUnavailableError, match="guest of an asyncio loop"
        ) as a:
            litellm_text.litellm_text_provider(settings)
        messages.append(str(a.value))
        with pytest.raises(LiteLLMUnavailableError, match="guest of an asyncio loop"):
            await _ask(built)
        return messages

    async def host() -> list[str]:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        trio.lowlevel.start_guest_run(
            trio_main,
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            done_callback=done.set_result,
            host_uses_signal_set_wakeup_fd=True,
        )
        result: list[str] = (await asyncio.wait_for(done, BOUND_S)).unwrap()
        return result

    with asyncio.Runner(loop_factory=asyncio.SelectorEventLoop) as runner:
        [message] = runner.run(host())
    assert "cairn serve" in message


async def test_configured_litellm_extracts_for_the_runtime(tmp_path: Path) -> None:
    """`[text] provider = "litellm"` in cairn.toml: the runtime's ingestion asks LiteLLM."""
    answer = {
        "claims": [],
        "corrections": [],
        "relations": [],
        "directive_drafts": [],
        "discarded_event_ids": ["t1"],
    }
    data = tmp_path / "data"
    data.mkdir()
    with trio.fail_after(30):
        async with open_fake_server(chat_content=json.dumps(answer)) as server:
            (data / "cairn.toml").write_text(
                f'[text]\nprovider = "litellm"\nmodel = "openai/fake-chat"\n'
                f'endpoint = "{server.base_url}/v1"\napi_key_env = "{KEY_VAR}"\n',
                encoding="utf-8",
            )
            async with open_memory(
                data, TEST_CONFIG, clock=FixedDomainClock(), embedder=HashingEmbedder()
            ) as memory:
                provider = runtime_core(memory).switch.text_provider
                assert isinstance(provider, LiteLLMTextProvider)
                await memory.ingest("a", [turn("t1", "I love jasmine rice.")])
                await memory.wait_idle("a")
                status = await memory.status()
    chats = [request for request in server.requests if "chat" in request.path]
    assert len(chats) == 1
    assert chats[0].headers["authorization"] == f"Bearer {SECRET}"
    assert status.agent("a").claims == 0  # the model's answer, not the rules'
    assert SECRET not in json.dumps(status, default=str)


_OFFLINE_SCRIPT = textwrap.dedent(
    """
    import ipaddress, json, socket, sys

    attempts = []

    def loopback(host):
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return host == "localhost"

    def audit(event, args):
        host = None
        if event == "socket.connect":
            address = args[1]
            if isinstance(address, tuple):
                host = address[0]
        elif event == "socket.getaddrinfo":
            host = args[0]
            if isinstance(host, bytes):
                host = host.decode()
        elif event in {"urllib.Request", "http.client.connect"}:
            attempts.append(f"{event} {args[:2]!r}")
            raise OSError("network disabled by the test")
        if host is not None and not loopback(str(host)):
            attempts.append(f"{event} {host}")
            raise OSError("network disabled by the test")

    sys.addaudithook(audit)

    import trio
    from cairn.providers import litellm_text
    from cairn.providers.settings import TextSettings
    from tests.providers.fakes import open_fake_server

    class Answer(__import__("msgspec").Struct):
        ok: bool

    state = {"after_import": sorted(set(sys.modules) & {"litellm", "trio_asyncio"})}

    async def main():
        with trio.fail_after(120):
            async with open_fake_server(chat_content='{"ok": true}') as server:
                provider = litellm_text.litellm_text_provider(
                    TextSettings(
                        provider="litellm",
                        model="openai/fake-chat",
                        endpoint=server.base_url + "/v1",
                        api_key_env="CAIRN_TEST_LITELLM_KEY",
                    )
                )
                state["after_build"] = sorted(
                    set(sys.modules) & {"litellm", "trio_asyncio"}
                )
                answer = await provider.complete_json("s", "u", Answer, max_tokens=5)
                state["answer"] = answer.ok
                state["requests"] = len(server.requests)

    trio.run(main)
    import os
    state["environment"] = {
        name: os.environ.get(name)
        for name in ("LITELLM_LOCAL_MODEL_COST_MAP", "LITELLM_MODE")
    }
    state["after_call"] = sorted(set(sys.modules) & {"litellm", "trio_asyncio"})
    state["attempts"] = attempts
    print(json.dumps(state))
    """
)


@pytest.mark.subprocess
def test_no_network_but_the_endpoint_at_import_or_call(tmp_path: Path) -> None:
    """A fresh process with every non-loopback connection and name lookup refused and
    recorded: importing LiteLLM and calling it reach only the loopback fake (without
    LITELLM_LOCAL_MODEL_COST_MAP, the import tries to download a price list)."""
    environ = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("LITELLM_")
    }
    environ.update(
        {
            "PYTHONPATH": str(ROOT),
            KEY_VAR: SECRET,
            "NO_PROXY": "*",
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", _OFFLINE_SCRIPT],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    state = json.loads(done.stdout.strip().splitlines()[-1])
    assert state["attempts"] == []
    assert state["after_import"] == []  # importing cairn's module imports neither
    assert state["after_build"] == []  # nor does building the provider
    assert state["after_call"] == ["litellm", "trio_asyncio"]
    assert state["answer"] is True
    assert state["requests"] == 1
    assert state["environment"] == {
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_MODE": "PRODUCTION",
    }
    assert SECRET not in done.stdout + done.stderr
