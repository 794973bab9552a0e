"""Retry-After on 429 and 503: the next attempt waits what the server asked (capped), not the
computed backoff, and a cancel during that wait ends the call with no further attempt.

Virtual time (``MockClock(autojump_threshold=0)``) against the real loopback fake: network
round trips take no virtual time, so the elapsed virtual time is exactly the waits taken.
"""

from __future__ import annotations

import datetime as dt
import logging
import traceback
from collections.abc import AsyncIterator

import httpx
import msgspec
import pytest
import trio
import trio.testing
from tests.providers.fakes import open_fake_server

from cairn.errors import TransientProviderError
from cairn.providers.http import (
    ApiKey,
    HttpEmbedderConfig,
    HttpTextConfig,
    OpenAICompatibleEmbedder,
    OpenAICompatibleTextProvider,
    RetryPolicy,
    open_http_client,
    post_json,
)
from cairn.providers.http.client import RetryAfterError, parse_retry_after

SECRET = "sk-test-RETRYAFTER-0123456789"
ENV_VAR = "CAIRN_TEST_RETRY_AFTER_KEY"
# No computed backoff at all: any virtual time that passes is a Retry-After wait.
NO_BACKOFF = RetryPolicy(
    attempts=2, wait_initial_s=0.0, wait_max_s=0.0, wait_jitter_s=0.0
)
BOUND_S = 1000.0  # virtual; only a hang would reach it


class _Echo(msgspec.Struct):
    embeddings: list[list[float]]


class _Answer(msgspec.Struct, forbid_unknown_fields=True):
    ok: bool


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with open_http_client(trust_env=False) as opened:
        yield opened


async def _post(
    client: httpx.AsyncClient, base_url: str, retry: RetryPolicy = NO_BACKOFF
) -> _Echo:
    return await post_json(
        client,
        f"{base_url}/api/embed",
        {"model": "m", "input": ["x"]},
        headers={},
        decoder=msgspec.json.Decoder(_Echo),
        retry=retry,
    )


@pytest.mark.parametrize("status", [429, 503])
async def test_retry_after_seconds_is_waited(
    status: int, autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="rate_limited_then_success",
            rate_limited_status=status,
            retry_after="7",
        ) as server:
            started = trio.current_time()
            result = await _post(client, server.base_url)
            elapsed = trio.current_time() - started
    assert len(result.embeddings) == 1
    assert len(server.requests) == 2
    assert elapsed == pytest.approx(7.0)


async def test_without_retry_after_the_computed_backoff_is_used(
    autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    policy = RetryPolicy(
        attempts=2, wait_initial_s=0.25, wait_max_s=0.25, wait_jitter_s=0.0
    )
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="rate_limited_then_success") as server:
            started = trio.current_time()
            await _post(client, server.base_url, policy)
            elapsed = trio.current_time() - started
    assert elapsed == pytest.approx(0.25)


async def test_retry_after_http_date_is_measured_from_the_server_date(
    autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    # Dates far from our own wall clock: only the server's Date header makes this 12 s.
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="rate_limited_then_success",
            response_date="Wed, 21 Oct 2015 07:28:00 GMT",
            retry_after="Wed, 21 Oct 2015 07:28:12 GMT",
        ) as server:
            started = trio.current_time()
            await _post(client, server.base_url)
            elapsed = trio.current_time() - started
    assert elapsed == pytest.approx(12.0)


async def test_retry_after_is_capped(
    autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    policy = RetryPolicy(
        attempts=2,
        wait_initial_s=0.0,
        wait_max_s=0.0,
        wait_jitter_s=0.0,
        retry_after_max_s=3.0,
    )
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="rate_limited_then_success", retry_after="86400"
        ) as server:
            started = trio.current_time()
            await _post(client, server.base_url, policy)
            elapsed = trio.current_time() - started
    assert elapsed == pytest.approx(3.0)


async def test_cancel_during_retry_after_wait_makes_no_new_attempt(
    autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="rate_limited_then_success", retry_after="20"
        ) as server:
            started = trio.current_time()
            with trio.move_on_after(5) as scope:
                await _post(client, server.base_url)
            cancelled_at = trio.current_time() - started
            # Well past the asked-for wait: a leaked retry would have arrived by now.
            await trio.sleep(60)
    assert scope.cancelled_caught
    assert cancelled_at == pytest.approx(5.0)
    assert len(server.requests) == 1


async def test_exhausted_attempts_carry_the_wait_without_headers(
    autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="rate_limited_then_success", rate_limited_count=99, retry_after="4"
        ) as server:
            with pytest.raises(RetryAfterError) as caught:
                await _post(client, server.base_url)
    assert isinstance(caught.value, TransientProviderError)
    assert caught.value.retry_after_s == 4.0
    assert len(server.requests) == NO_BACKOFF.attempts
    assert "Retry-After" not in str(caught.value)
    assert not hasattr(caught.value, "headers")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        (" 5 ", 5.0),
        ("0", 0.0),
        ("-1", None),
        ("1.5", None),
        ("soon", None),
        ("", None),
        (None, None),
        ("Wed, 21 Oct 2015 07:28:30 GMT", 30.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # in the past: retry now
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    now = dt.datetime(2015, 10, 21, 7, 28, 0, tzinfo=dt.UTC)
    assert parse_retry_after(value, now=now) == expected


@pytest.mark.parametrize("kind", ["embedder", "text"])
async def test_no_secret_on_the_retry_after_path(
    kind: str,
    autojump_clock: trio.testing.MockClock,
    client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(ENV_VAR, SECRET)
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="rate_limited_then_success", rate_limited_count=99, retry_after="2"
        ) as server:
            provider: object
            if kind == "embedder":
                embedder = OpenAICompatibleEmbedder(
                    client,
                    HttpEmbedderConfig(
                        base_url=server.base_url,
                        model="m",
                        dimension=8,
                        api_key=ApiKey(ENV_VAR),
                        retry=NO_BACKOFF,
                    ),
                )
                provider = embedder
                with pytest.raises(RetryAfterError) as caught:
                    await embedder.embed_query("q")
            else:
                text = OpenAICompatibleTextProvider(
                    client,
                    HttpTextConfig(
                        base_url=server.base_url,
                        model="m",
                        api_key=ApiKey(ENV_VAR),
                        retry=NO_BACKOFF,
                    ),
                )
                provider = text
                with pytest.raises(RetryAfterError) as caught:
                    await text.complete_json("s", "u", _Answer, max_tokens=10)
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert caplog.records, "the rate limit should have been logged"
    assert "retry after 2 s" in caplog.text
    for text_seen in (
        "".join(traceback.format_exception(caught.value)),
        repr(caught.value),
        repr(provider),
        caplog.text,
        *(repr(record.__dict__) for record in caplog.records),
    ):
        assert SECRET not in text_seen


async def test_unreadable_retry_after_is_not_quoted(
    autojump_clock: trio.testing.MockClock, client: httpx.AsyncClient
) -> None:
    # A header the server filled with something secret-looking is never echoed back.
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            mode="rate_limited_then_success", rate_limited_count=99, retry_after=SECRET
        ) as server:
            with pytest.raises(TransientProviderError) as caught:
                await _post(client, server.base_url)
    assert not isinstance(caught.value, RetryAfterError)
    assert SECRET not in "".join(traceback.format_exception(caught.value))
