"""One shared httpx client and the JSON POST every HTTP provider goes through.

Why one helper: every provider call must fail the same way. Transport trouble, read timeouts,
429 and 5xx are :class:`~cairn.errors.TransientProviderError` and are retried with exponential
backoff (stamina, which sleeps with ``trio.sleep`` under trio); any other 4xx, malformed JSON or
a body that does not match the expected msgspec type is
:class:`~cairn.errors.ProviderContractError` and is never retried, because asking again gets the
same answer.

Rate limits: a 429 or 503 with a ``Retry-After`` header (delta seconds or an HTTP-date) is a
:class:`RetryAfterError` carrying the parsed wait; the next attempt comes after exactly that
wait, capped at :attr:`RetryPolicy.retry_after_max_s`, instead of the computed backoff. The
wait is a ``trio.sleep`` inside stamina, so cancelling during it ends the call with no further
attempt (``test_cancel_during_retry_after_wait_makes_no_new_attempt``).

Timeouts are per request (:class:`httpx.Timeout` passed to ``client.post``), so one shared
client serves providers with different connect and read timeouts.

Cancellation is not an error: ``trio.Cancelled`` (a ``BaseException``) passes through the retry
loop untouched, so our own deadline, a trio cancel scope around the call, ends the call at once
with no further attempt (``test_hung_request_is_cancelled_without_retry``).

Secrets: error messages and log lines name the endpoint by scheme, host, port and path only
(no user info, no query string) and any credential sent in a header is masked out of quoted
response bodies (``test_no_secret_in_errors_logs_or_reprs``).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import logging
import os
import time
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, TypeVar

import attrs
import httpx
import msgspec
import stamina

from cairn.errors import ProviderContractError, TransientProviderError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_READ_TIMEOUT_S",
    "DEFAULT_RETRY",
    "ApiKey",
    "RetryAfterError",
    "RetryPolicy",
    "create_http_client",
    "open_http_client",
    "parse_retry_after",
    "post_json",
    "provider_timeout",
    "request_timeout",
    "safe_endpoint",
]

T = TypeVar("T")

logger = logging.getLogger(__name__)

_ENCODER: Final = msgspec.json.Encoder()
# Header names whose values are credentials; their values are masked in any text we quote.
_SECRET_HEADERS: Final = frozenset({"authorization", "api-key", "x-api-key"})
_MASK: Final = "***"
_BODY_SNIPPET_CHARS: Final = 200
DEFAULT_CONNECT_TIMEOUT_S: Final = 5.0
DEFAULT_READ_TIMEOUT_S: Final = 30.0
# Statuses whose Retry-After header we honour (RFC 9110 section 10.2.3).
_RETRY_AFTER_STATUSES: Final = frozenset({429, 503})


class RetryAfterError(TransientProviderError):
    """A transient refusal (429 or 503) where the server said how long to wait.

    ``retry_after_s`` is the parsed, non-negative wait in seconds, uncapped; only that number
    is kept, never the response's headers.
    """

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@attrs.frozen
class RetryPolicy:
    """How often and how patiently transient failures are retried.

    ``attempts`` counts the first try. Waits grow exponentially from ``wait_initial_s`` up to
    ``wait_max_s`` plus up to ``wait_jitter_s`` of random jitter, except after a
    :class:`RetryAfterError`, which waits what the server asked, at most
    ``retry_after_max_s``. There is deliberately no
    overall timeout here: the caller bounds the whole call with a trio cancel scope.
    """

    attempts: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    wait_initial_s: float = attrs.field(default=0.1, validator=attrs.validators.ge(0.0))
    wait_max_s: float = attrs.field(default=2.0, validator=attrs.validators.ge(0.0))
    wait_jitter_s: float = attrs.field(default=0.1, validator=attrs.validators.ge(0.0))
    # A server asking for a longer wait than this gets this much: the caller's own deadline
    # still bounds the call, and a wrong or hostile header must not park work for hours.
    retry_after_max_s: float = attrs.field(
        default=30.0, validator=attrs.validators.ge(0.0)
    )

    def backoff(self, error: Exception) -> bool | float:
        """stamina's backoff hook: retry transient errors, after Retry-After when given."""
        if isinstance(error, RetryAfterError):
            return min(error.retry_after_s, self.retry_after_max_s)
        return isinstance(error, TransientProviderError)


DEFAULT_RETRY: Final = RetryPolicy()


@attrs.frozen(repr=False)
class ApiKey:
    """Where a provider's API key comes from: the *name* of an environment variable.

    The value is read at call time (so a rotated key is picked up) and is never stored on an
    object, so no repr, status or IPC reply built from config can carry it.
    """

    env_var: str

    def __repr__(self) -> str:
        return f"ApiKey(env_var={self.env_var!r})"

    def resolve(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The key's value, or None when the variable is unset or blank."""
        value = (os.environ if environ is None else environ).get(self.env_var, "")
        return value.strip() or None

    def bearer_headers(
        self, environ: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """``{"authorization": "Bearer <key>"}``, or ``{}`` when no key is set."""
        value = self.resolve(environ)
        return {} if value is None else {"authorization": f"Bearer {value}"}


def create_http_client(
    *,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
    max_connections: int = 16,
    trust_env: bool = True,
) -> httpx.AsyncClient:
    """The one ``httpx.AsyncClient`` all providers share (httpx's anyio backend runs on trio).

    The caller owns it and must ``aclose()`` it; prefer :func:`open_http_client`. The httpx
    read timeout catches a stalled server; the per-call deadline is the caller's cancel scope.
    """
    timeout = request_timeout(connect_timeout_s, read_timeout_s)
    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    return httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=trust_env)


@asynccontextmanager
async def open_http_client(
    *,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
    max_connections: int = 16,
    trust_env: bool = True,
) -> AsyncIterator[httpx.AsyncClient]:
    """Create the shared client and close it on exit, even on cancellation."""
    client = create_http_client(
        connect_timeout_s=connect_timeout_s,
        read_timeout_s=read_timeout_s,
        max_connections=max_connections,
        trust_env=trust_env,
    )
    async with client:
        yield client


def safe_endpoint(url: str | httpx.URL) -> str:
    """``scheme://host:port/path`` of ``url``: no user info, no query (either may hold a key)."""
    parsed = httpx.URL(url)
    port = f":{parsed.port}" if parsed.port is not None else ""
    return f"{parsed.scheme}://{parsed.host}{port}{parsed.path}"


def request_timeout(connect_timeout_s: float, read_timeout_s: float) -> httpx.Timeout:
    """The per-request httpx timeout for one provider (writes share the read budget)."""
    return httpx.Timeout(
        connect=connect_timeout_s, read=read_timeout_s, write=read_timeout_s, pool=None
    )


def provider_timeout(
    connect_timeout_s: float | None, read_timeout_s: float | None
) -> httpx.Timeout | None:
    """A provider's per-request timeout, or None (the shared client's) when neither is set.

    One set and one not: the unset one takes :func:`create_http_client`'s default.
    """
    if connect_timeout_s is None and read_timeout_s is None:
        return None
    return request_timeout(
        DEFAULT_CONNECT_TIMEOUT_S if connect_timeout_s is None else connect_timeout_s,
        DEFAULT_READ_TIMEOUT_S if read_timeout_s is None else read_timeout_s,
    )


def parse_retry_after(
    value: str | None, *, now: dt.datetime | None = None
) -> float | None:
    """Seconds to wait from a ``Retry-After`` value, or None when absent or unreadable.

    Accepts delta seconds (``"120"``) or an HTTP-date, measured from ``now`` (the response's
    own ``Date`` header when the caller has it, which cancels clock skew; else our clock). A
    date in the past means "now": 0.
    """
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; "-0000" parses naive
        when = when.replace(tzinfo=dt.UTC)
    # Protocol wall time (the server's date is wall time too), not business time.
    reference = dt.datetime.fromtimestamp(time.time(), dt.UTC) if now is None else now
    return max(0.0, (when - reference).total_seconds())


def _retry_after_of(response: httpx.Response) -> float | None:
    now: dt.datetime | None = None
    date = response.headers.get("date")
    if date is not None:
        try:
            now = email.utils.parsedate_to_datetime(date)
        except (TypeError, ValueError, IndexError):
            now = None
        if now is not None and now.tzinfo is None:
            now = now.replace(tzinfo=dt.UTC)
    return parse_retry_after(response.headers.get("retry-after"), now=now)


def _secrets_in(headers: Mapping[str, str]) -> list[str]:
    secrets: list[str] = []
    for name, value in headers.items():
        if name.lower() in _SECRET_HEADERS and value:
            secrets.append(value)
            token = value.split()[-1] if value.split() else ""
            if token and token != value:
                secrets.append(token)
    return secrets


def _redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, _MASK)
    return text


def _snippet(response: httpx.Response, secrets: list[str]) -> str:
    text = response.text[:_BODY_SNIPPET_CHARS]
    return _redact(text, secrets)


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    payload: Any,
    *,
    headers: Mapping[str, str],
    decoder: msgspec.json.Decoder[T],
    retry: RetryPolicy = DEFAULT_RETRY,
    http_timeout: httpx.Timeout | None = None,
) -> T:
    """POST ``payload`` as JSON and decode the 2xx answer with ``decoder``.

    ``http_timeout`` is this provider's per-request httpx timeout (:func:`provider_timeout`);
    None uses the shared client's default.

    Raises:
        TransientProviderError: every attempt failed with a connect/read error, a timeout,
            429 or 5xx (:class:`RetryAfterError` when the last answer said when to retry).
        ProviderContractError: another 4xx, malformed JSON or a schema mismatch (not retried).

    Cancellation: a cancelled call raises ``trio.Cancelled`` immediately and is never retried;
    a call cancelled mid-request has no effect on our side.
    """
    body = _ENCODER.encode(payload)
    request_headers = {**headers, "content-type": "application/json"}
    secrets = _secrets_in(headers)
    endpoint = safe_endpoint(url)
    result: T | None = None
    async for attempt in stamina.retry_context(
        on=retry.backoff,
        attempts=retry.attempts,
        timeout=None,
        wait_initial=retry.wait_initial_s,
        wait_max=retry.wait_max_s,
        wait_jitter=retry.wait_jitter_s,
    ):
        with attempt:
            result = await _post_once(
                client,
                url,
                body,
                request_headers,
                decoder,
                endpoint,
                secrets,
                http_timeout,
            )
    if result is None:  # pragma: no cover - stamina either returns a result or raises
        raise TransientProviderError(f"POST {endpoint}: no attempt was made")
    return result


async def _post_once(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    decoder: msgspec.json.Decoder[T],
    endpoint: str,
    secrets: list[str],
    http_timeout: httpx.Timeout | None,
) -> T:
    """One attempt, with every failure mapped onto the provider error tree."""
    try:
        response = await client.post(
            url,
            content=body,
            headers=headers,
            timeout=httpx.USE_CLIENT_DEFAULT if http_timeout is None else http_timeout,
        )
    except httpx.TimeoutException as exc:
        logger.warning("provider request to %s timed out", endpoint)
        raise TransientProviderError(
            f"POST {endpoint}: timed out ({type(exc).__name__})"
        ) from exc
    except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
        logger.warning(
            "provider request to %s failed: %s", endpoint, type(exc).__name__
        )
        raise TransientProviderError(
            f"POST {endpoint}: transport error ({type(exc).__name__})"
        ) from exc
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        # Bad scheme, proxy refusal, local protocol misuse: configuration, not weather.
        raise ProviderContractError(
            f"POST {endpoint}: request could not be sent ({type(exc).__name__})"
        ) from exc

    status = response.status_code
    if status == 429 or status >= 500:
        retry_after = (
            _retry_after_of(response) if status in _RETRY_AFTER_STATUSES else None
        )
        if retry_after is not None:
            logger.warning(
                "provider %s answered HTTP %d, retry after %.3g s",
                endpoint,
                status,
                retry_after,
            )
            raise RetryAfterError(
                f"POST {endpoint}: HTTP {status} (retry after {retry_after:.3g} s)",
                retry_after,
            )
        logger.warning("provider %s answered HTTP %d", endpoint, status)
        raise TransientProviderError(f"POST {endpoint}: HTTP {status}")
    if not 200 <= status < 300:
        raise ProviderContractError(
            f"POST {endpoint}: HTTP {status}: {_snippet(response, secrets)}"
        )
    try:
        return decoder.decode(response.content)
    except msgspec.ValidationError as exc:
        raise ProviderContractError(
            f"POST {endpoint}: unexpected response shape: {_redact(str(exc), secrets)}"
        ) from None
    except msgspec.DecodeError:
        raise ProviderContractError(
            f"POST {endpoint}: malformed JSON: {_snippet(response, secrets)}"
        ) from None
