"""Structured JSON answers through LiteLLM (optional extra ``cairn[litellm]``).

LiteLLM reaches many chat providers (OpenAI, Anthropic, Gemini, Bedrock, Ollama, vLLM, ...)
behind one call, named by a model string such as ``"anthropic/claude-3-5-haiku-latest"``;
it translates the request, the ``json_schema`` response format included, for each one. Its
async entry point, ``litellm.acompletion``, is asyncio-only, so every call goes through
:func:`cairn.providers.asyncio_bridge.run_asyncio` (trio-asyncio) on this trio run's one
asyncio loop.

Same contract as the HTTP text providers (:mod:`cairn.providers.http.text`): the answer is
decoded into the caller's msgspec Struct; a refusal, an empty, truncated or non-JSON answer,
an answer of the wrong shape, a body that is not JSON and any 4xx are
:class:`~cairn.errors.ProviderContractError` (never retried); transport errors, timeouts,
408, 429 and 5xx are :class:`~cairn.errors.TransientProviderError`, retried by stamina as in
:func:`~cairn.providers.http.client.post_json` (429/503 with ``Retry-After``:
:class:`~cairn.providers.http.client.RetryAfterError`). LiteLLM's own retries and the
OpenAI SDK's are switched off (``num_retries=0``, ``max_retries=0``) so one policy counts
attempts. A cancelled call raises ``trio.Cancelled``; its asyncio task is cancelled with it.

Offline and quiet: LiteLLM is imported on the first call, in a worker thread (it takes
seconds), with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (else the import downloads a model
price list) and ``LITELLM_MODE=PRODUCTION`` (else the import loads a ``.env`` file into the
environment) unless the environment already sets them, with ``suppress_debug_info`` on
(else failures print a help banner to stdout) and, unless ``LITELLM_LOG`` is set, with
LiteLLM's own loggers at WARNING (they have their own stderr handler and at DEBUG print
whole requests). LiteLLM has no telemetry; no callback is configured, so answers go
nowhere else.

Secrets: the key is read from ``api_key_env`` at call time and handed to LiteLLM only.
LiteLLM's exception messages can quote request arguments and response bodies, so errors
here name the exception class, the HTTP status and the endpoint, never LiteLLM's message,
and never chain its exception. Without ``api_key_env`` LiteLLM reads its provider's own
variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ...).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Any, Final, TypeVar

import attrs
import msgspec
import stamina
import trio

from cairn.errors import (
    InvalidInputError,
    ProviderContractError,
    TransientProviderError,
)
from cairn.providers.asyncio_bridge import host_asyncio_loop_running, run_asyncio
from cairn.providers.http.client import (
    DEFAULT_RETRY,
    ApiKey,
    RetryAfterError,
    RetryPolicy,
    parse_retry_after,
    provider_timeout,
    safe_endpoint,
)
from cairn.providers.http.text import (
    TextIdentity,
    check_max_tokens,
    decode_answer,
    json_schema_for,
    schema_name,
)

if TYPE_CHECKING:
    from cairn.providers.settings import TextSettings

__all__ = [
    "EXTRA",
    "LITELLM_TEXT_PROVIDER",
    "LiteLLMTextConfig",
    "LiteLLMTextProvider",
    "LiteLLMUnavailableError",
    "litellm_text_provider",
    "load_litellm",
]

S = TypeVar("S", bound=msgspec.Struct)

logger = logging.getLogger(__name__)

LITELLM_TEXT_PROVIDER: Final = "litellm"
EXTRA: Final = "cairn[litellm]"
# What the extra installs and this provider imports.
_EXTRA_MODULES: Final = ("litellm", "trio_asyncio")
# Set before LiteLLM's first import unless the environment already says otherwise.
_OFFLINE_ENVIRONMENT: Final = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_MODE": "PRODUCTION",
}
_LITELLM_LOGGERS: Final = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
_RETRY_AFTER_STATUSES: Final = frozenset({429, 503})
_TRANSIENT_STATUSES: Final = frozenset({408, 429})
# Exception chains are walked this far looking for the provider's own answer.
_CHAIN_LIMIT: Final = 16


class LiteLLMUnavailableError(InvalidInputError):
    """The litellm text provider is configured but cannot run here: the optional extra is
    not installed, or cairn runs as a guest of an asyncio loop."""


@attrs.frozen(repr=False)
class LiteLLMTextConfig:
    """One LiteLLM model and how to call it.

    ``model`` is LiteLLM's model string (``"provider/model"``); ``endpoint`` is its
    ``api_base`` (for OpenAI-compatible servers, up to and including ``/v1``). The key is
    referenced by environment variable name only; the repr is hand-written.
    ``max_tokens`` (when set) is a ceiling; timeouts apply per request;
    ``max_concurrency`` bounds this provider's calls in flight.
    """

    model: str
    endpoint: str | None = None
    api_key: ApiKey | None = None
    retry: RetryPolicy = DEFAULT_RETRY
    max_tokens: int | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.ge(1)),
    )
    connect_timeout_s: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.gt(0.0))
    )
    read_timeout_s: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.gt(0.0))
    )
    max_concurrency: int = attrs.field(default=4, validator=attrs.validators.ge(1))

    def __repr__(self) -> str:
        endpoint = None if self.endpoint is None else safe_endpoint(self.endpoint)
        return (
            f"LiteLLMTextConfig(model={self.model!r}, endpoint={endpoint!r}, "
            f"api_key={self.api_key!r}, max_tokens={self.max_tokens}, "
            f"connect_timeout_s={self.connect_timeout_s}, "
            f"read_timeout_s={self.read_timeout_s}, "
            f"max_concurrency={self.max_concurrency})"
        )

    def token_cap(self, max_tokens: int) -> int:
        """The caller's cap, clamped to the configured ceiling."""
        check_max_tokens(max_tokens)
        return (
            max_tokens if self.max_tokens is None else min(max_tokens, self.max_tokens)
        )

    @property
    def where(self) -> str:
        """How errors and logs name this provider: the model and the safe endpoint."""
        if self.endpoint is None:
            return f"litellm {self.model}"
        return f"litellm {self.model} at {safe_endpoint(self.endpoint)}"


def _missing_modules() -> list[str]:
    missing = []
    for name in _EXTRA_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def _require_runnable(source: str) -> None:
    missing = _missing_modules()
    if missing:
        raise LiteLLMUnavailableError(
            f"text provider {LITELLM_TEXT_PROVIDER!r} needs the optional extra:"
            f" pip install '{EXTRA}' (missing {', '.join(missing)}) ({source})"
        )
    if host_asyncio_loop_running():
        raise LiteLLMUnavailableError(
            f"text provider {LITELLM_TEXT_PROVIDER!r} cannot run while cairn is a trio"
            " guest of an asyncio loop (open_asyncio_memory): its asyncio calls would"
            " bind to the host's loop; use another text provider there, or serve cairn"
            f" from its own process (cairn serve) ({source})"
        )


@attrs.frozen
class _LiteLLM:
    """The loaded modules: LiteLLM itself and the OpenAI SDK its exceptions derive from."""

    litellm: Any
    openai: Any


def load_litellm() -> _LiteLLM:
    """Import LiteLLM offline and quiet (blocking: seconds; call it from a worker thread).

    Raises:
        LiteLLMUnavailableError: the extra is not installed.
    """
    # LiteLLM's import sets the httpx logger to WARNING; the host's logging is not ours
    # to change, so its level is put back.
    httpx_logger = logging.getLogger("httpx")
    httpx_level = httpx_logger.level
    try:
        if "litellm" not in sys.modules:
            for name, value in _OFFLINE_ENVIRONMENT.items():
                os.environ.setdefault(name, value)
        litellm: Any = importlib.import_module("litellm")
        openai: Any = importlib.import_module("openai")
    except ImportError:
        raise LiteLLMUnavailableError(
            f"text provider {LITELLM_TEXT_PROVIDER!r} needs the optional extra:"
            f" pip install '{EXTRA}'"
        ) from None
    finally:
        httpx_logger.setLevel(httpx_level)
    litellm.suppress_debug_info = True
    if "LITELLM_LOG" not in os.environ:
        # LiteLLM's loggers write to stderr through their own handler, and at DEBUG they
        # print whole requests (the caller's text); unless LITELLM_LOG asks for more, they
        # say warnings and errors only, whatever the root logger's level.
        for name in _LITELLM_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)
    return _LiteLLM(litellm=litellm, openai=openai)


_LOADED: _LiteLLM | None = None


async def _loaded() -> _LiteLLM:
    global _LOADED  # noqa: PLW0603 - one import per process
    if _LOADED is None:
        # Seconds of imports: off the trio thread. Providers cannot reach
        # cairn.runtime.threads (layering), and an import needs no named limiter.
        _LOADED = await trio.to_thread.run_sync(load_litellm)  # noqa: TID251
    return _LOADED


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(seen) < _CHAIN_LIMIT and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _retry_after(error: BaseException) -> float | None:
    headers = getattr(error, "litellm_response_headers", None)
    getter = getattr(headers, "get", None)
    if getter is None:
        return None
    value = getter("retry-after")
    return parse_retry_after(value if isinstance(value, str) else None)


def _typed_error(
    error: Exception, modules: _LiteLLM, where: str
) -> TransientProviderError | ProviderContractError | None:
    """The cairn error for a LiteLLM failure, or None when ``error`` is not LiteLLM's.

    LiteLLM's message is never quoted: it can carry request arguments or response bodies.
    """
    openai = modules.openai
    if not isinstance(error, openai.OpenAIError):
        return None
    kind = type(error).__name__
    chain = _chain(error)
    # LiteLLM may wrap a refused connection in an InternalServerError: the SDK's
    # connection error (timeouts too) is then further down the chain.
    if any(isinstance(link, openai.APIConnectionError) for link in chain):
        return TransientProviderError(f"{where}: transport error ({kind})")
    status = getattr(error, "status_code", None)
    if not isinstance(status, int) or isinstance(status, bool):
        return ProviderContractError(f"{where}: {kind}")
    if any(isinstance(link, json.JSONDecodeError) for link in chain) and not any(
        isinstance(link, openai.APIStatusError) for link in chain[1:]
    ):
        # LiteLLM reports a body it could not parse as a 500; the provider did answer.
        return ProviderContractError(
            f"{where}: malformed JSON in the response ({kind})"
        )
    if status in _TRANSIENT_STATUSES or status >= 500:
        retry_after = _retry_after(error) if status in _RETRY_AFTER_STATUSES else None
        if retry_after is not None:
            return RetryAfterError(
                f"{where}: HTTP {status} ({kind}, retry after {retry_after:.3g} s)",
                retry_after,
            )
        return TransientProviderError(f"{where}: HTTP {status} ({kind})")
    return ProviderContractError(f"{where}: HTTP {status} ({kind})")


@attrs.define(eq=False)
class LiteLLMTextProvider:
    """A :class:`~cairn.providers.http.text.TextProvider` over ``litellm.acompletion``.

    Temperature 0 (dropped for models that refuse it: ``drop_params``), one LiteLLM call
    per attempt; build it with :func:`litellm_text_provider` or directly from a config.
    """

    config: LiteLLMTextConfig
    _limiter: trio.CapacityLimiter = attrs.field(init=False, repr=False)

    @_limiter.default
    def _new_limiter(self) -> trio.CapacityLimiter:
        return trio.CapacityLimiter(self.config.max_concurrency)

    @property
    def identity(self) -> TextIdentity:
        return TextIdentity(provider=LITELLM_TEXT_PROVIDER, model=self.config.model)

    def _request(self, system: str, user: str, schema: type[S], cap: int) -> Any:
        config = self.config
        request: dict[str, Any] = {
            "model": config.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "max_tokens": cap,
            "temperature": 0,
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": schema_name(schema),
                    "schema": json_schema_for(schema),
                    "strict": True,
                },
            },
            "drop_params": True,
            "num_retries": 0,
            "max_retries": 0,
        }
        if config.endpoint is not None:
            request["api_base"] = config.endpoint
        timeout = provider_timeout(config.connect_timeout_s, config.read_timeout_s)
        if timeout is not None:
            request["timeout"] = timeout
        return request

    async def complete_json(
        self, system: str, user: str, schema: type[S], *, max_tokens: int
    ) -> S:
        cap = self.config.token_cap(max_tokens)
        request = self._request(system, user, schema, cap)
        if host_asyncio_loop_running():  # built elsewhere, called from a guest run
            _require_runnable(self.config.where)
        modules = await _loaded()
        retry = self.config.retry
        response: Any = None
        async with self._limiter:
            async for attempt in stamina.retry_context(
                on=retry.backoff,
                attempts=retry.attempts,
                timeout=None,
                wait_initial=retry.wait_initial_s,
                wait_max=retry.wait_max_s,
                wait_jitter=retry.wait_jitter_s,
            ):
                with attempt:
                    response = await self._call_once(modules, request)
        return self._answer(response, schema, cap)

    async def _call_once(self, modules: _LiteLLM, request: Any) -> Any:
        key = None if self.config.api_key is None else self.config.api_key.resolve()
        arguments = request if key is None else {**request, "api_key": key}
        typed: ProviderContractError | TransientProviderError | None = None
        try:
            return await run_asyncio(modules.litellm.acompletion, **arguments)
        except Exception as error:
            typed = _typed_error(error, modules, self.config.where)
            if typed is None:
                raise
        # Raised outside the handler, so LiteLLM's exception (which may quote the request
        # or the response body) is not even its context.
        if isinstance(typed, TransientProviderError):
            logger.warning("text provider call failed: %s", typed)
        raise typed

    def _answer(self, response: Any, schema: type[S], cap: int) -> S:
        where = self.config.where
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise ProviderContractError(f"{where}: no choices in the answer")
        choice = choices[0]
        message = getattr(choice, "message", None)
        extra = getattr(message, "provider_specific_fields", None)
        refusal = extra.get("refusal") if isinstance(extra, dict) else None
        if refusal or getattr(message, "refusal", None):
            # The refusal text is model output about the caller's input: not quoted.
            raise ProviderContractError(f"{where}: the model refused to answer")
        if getattr(choice, "finish_reason", None) == "length":
            raise ProviderContractError(
                f"{where}: answer truncated at max_tokens={cap}"
            )
        content = getattr(message, "content", None)
        if content is not None and not isinstance(content, str):
            raise ProviderContractError(f"{where}: the answer is not text")
        return decode_answer(content, schema, where)


def litellm_text_provider(settings: TextSettings) -> LiteLLMTextProvider:
    """The LiteLLM text provider ``settings`` describe (``provider = "litellm"``).

    Raises:
        LiteLLMUnavailableError: the ``cairn[litellm]`` extra is not installed, or cairn
            runs as a guest of an asyncio loop.
        InvalidInputError: ``model`` is missing.
    """
    if settings.model is None:  # checked by TextSettings
        raise InvalidInputError(
            f"text provider {LITELLM_TEXT_PROVIDER!r} needs model ({settings.source})"
        )
    _require_runnable(settings.source)
    return LiteLLMTextProvider(
        LiteLLMTextConfig(
            model=settings.model,
            endpoint=settings.endpoint,
            api_key=None
            if settings.api_key_env is None
            else ApiKey(settings.api_key_env),
            max_tokens=settings.max_tokens,
            connect_timeout_s=settings.connect_timeout_s,
            read_timeout_s=settings.read_timeout_s,
            max_concurrency=settings.max_concurrency,
        )
    )
