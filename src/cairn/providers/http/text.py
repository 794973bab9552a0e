"""Text providers: a chat model asked for one JSON answer that must fit a msgspec Struct.

The caller names the answer's shape as a :class:`msgspec.Struct` type; its JSON schema
(:func:`json_schema_for`) is sent to the provider as a structured-output constraint, and the
model's answer is decoded and validated against the same type (:func:`decode_answer`). A
refusal, an empty or truncated answer, invalid JSON or an answer of the wrong shape is a
:class:`~cairn.errors.ProviderContractError` and is never retried; transport trouble, 429 and
5xx are :class:`~cairn.errors.TransientProviderError`, retried by
:func:`~cairn.providers.http.client.post_json`.

Bounds are the caller's: ``max_tokens`` caps the answer and a trio cancel scope around the
call is its deadline; a cancelled call raises ``trio.Cancelled`` and is not retried.

Implementations: :class:`~cairn.providers.http.text_openai.OpenAICompatibleTextProvider`
(``/v1/chat/completions`` with a ``json_schema`` response format) and
:class:`~cairn.providers.http.text_ollama.OllamaTextProvider` (``/api/chat`` with ``format``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

import attrs
import msgspec

from cairn.errors import ProviderContractError
from cairn.providers.http.client import (
    DEFAULT_RETRY,
    ApiKey,
    RetryPolicy,
    provider_timeout,
    safe_endpoint,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "TOKEN_LIMIT_FIELDS",
    "HttpTextConfig",
    "TextIdentity",
    "TextProvider",
    "check_max_tokens",
    "decode_answer",
    "json_schema_for",
    "schema_name",
]

S = TypeVar("S", bound=msgspec.Struct)

_REF_PREFIX: Final = "#/$defs/"
# OpenAI's json_schema.name: letters, digits, underscores and dashes, at most 64 characters.
_NAME_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]+")
_NAME_MAX_CHARS: Final = 64
# The request field that carries the answer's token cap on OpenAI-compatible servers: older
# servers and most local ones take max_tokens; newer OpenAI models reject it and want
# max_completion_tokens.
TOKEN_LIMIT_FIELDS: Final = ("max_tokens", "max_completion_tokens")


@attrs.frozen
class TextIdentity:
    """Which text model answered: the provider kind and the model name."""

    provider: str
    model: str


class TextProvider(Protocol):
    """Asks a chat model for one JSON answer and returns it validated as ``schema``.

    ``complete_json`` is a checkpoint and may be cancelled; a cancelled call has no effect.
    """

    @property
    def identity(self) -> TextIdentity: ...

    async def complete_json(
        self, system: str, user: str, schema: type[S], *, max_tokens: int
    ) -> S: ...


@attrs.frozen(repr=False)
class HttpTextConfig:
    """Where and how to reach one chat model over HTTP.

    The API key is referenced by environment variable name only (:class:`ApiKey`); the repr
    is hand-written so it stays safe if a field is added carelessly later.

    ``max_tokens`` (when set) is a ceiling: a call asking for more is clamped to it.
    ``token_limit_field`` names the OpenAI-compatible request field for the cap (one of
    :data:`TOKEN_LIMIT_FIELDS`; Ollama always uses ``options.num_predict``). Timeouts apply
    per request (unset: the shared client's own); ``max_concurrency`` bounds this
    provider's requests in flight.
    """

    base_url: str
    model: str
    api_key: ApiKey | None = None
    retry: RetryPolicy = DEFAULT_RETRY
    max_tokens: int | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.ge(1)),
    )
    token_limit_field: str = attrs.field(
        default="max_tokens", validator=attrs.validators.in_(TOKEN_LIMIT_FIELDS)
    )
    # None: the shared client's own timeout.
    connect_timeout_s: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.gt(0.0))
    )
    read_timeout_s: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.gt(0.0))
    )
    max_concurrency: int = attrs.field(default=4, validator=attrs.validators.ge(1))

    def __repr__(self) -> str:
        return (
            f"HttpTextConfig(base_url={safe_endpoint(self.base_url)!r}, "
            f"model={self.model!r}, api_key={self.api_key!r}, "
            f"max_tokens={self.max_tokens}, "
            f"token_limit_field={self.token_limit_field!r}, "
            f"connect_timeout_s={self.connect_timeout_s}, "
            f"read_timeout_s={self.read_timeout_s}, "
            f"max_concurrency={self.max_concurrency})"
        )

    def timeout(self) -> httpx.Timeout | None:
        """The httpx timeout sent with each request to this provider (None: the client's)."""
        return provider_timeout(self.connect_timeout_s, self.read_timeout_s)

    def token_cap(self, max_tokens: int) -> int:
        """The caller's cap, clamped to the configured ceiling."""
        check_max_tokens(max_tokens)
        return (
            max_tokens if self.max_tokens is None else min(max_tokens, self.max_tokens)
        )

    def endpoint(self, path: str) -> str:
        """``base_url`` joined with ``path`` without doubling or dropping a slash."""
        return f"{self.base_url.rstrip('/')}/{path.lstrip('/')}"

    def headers(self) -> dict[str, str]:
        """The bearer header when a key is configured and set, else ``{}``."""
        return {} if self.api_key is None else self.api_key.bearer_headers()


def check_max_tokens(max_tokens: int) -> None:
    """Reject a token cap that cannot produce an answer (a caller bug, not a provider's)."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise TypeError(f"max_tokens must be an int, not {type(max_tokens).__name__}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")


def schema_name(schema: type[msgspec.Struct]) -> str:
    """A provider-safe name for ``schema`` (OpenAI's ``json_schema.name`` rules)."""
    name = _NAME_UNSAFE.sub("_", schema.__name__).strip("_") or "answer"
    return name[:_NAME_MAX_CHARS]


def json_schema_for(schema: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON schema of ``schema`` with the root object inlined.

    ``msgspec.json.schema`` answers ``{"$ref": ..., "$defs": ...}``; structured-output
    endpoints want the root to be the object itself, so it is lifted out of ``$defs``, which
    are kept only while something still refers to them (nested or recursive structs).
    """
    candidate: object = schema  # checked at run time too: callers may be untyped
    if not (isinstance(candidate, type) and issubclass(candidate, msgspec.Struct)):
        raise TypeError(f"schema must be a msgspec.Struct type, not {schema!r}")
    full = msgspec.json.schema(schema)
    defs: dict[str, Any] = full.get("$defs", {})
    ref = full.get("$ref")
    if not isinstance(ref, str) or not ref.startswith(_REF_PREFIX):
        return full
    root: dict[str, Any] = dict(defs[ref.removeprefix(_REF_PREFIX)])
    if b'"$ref"' in msgspec.json.encode(defs):
        root["$defs"] = defs
    return root


def decode_answer(content: str | None, schema: type[S], endpoint: str) -> S:
    """Decode the model's answer text into ``schema``.

    The answer itself is never quoted in the error: it is model output built from the
    caller's (possibly private) text.
    """
    if content is None or not content.strip():
        raise ProviderContractError(f"{endpoint}: empty answer")
    try:
        return msgspec.json.Decoder(schema).decode(content)
    except msgspec.ValidationError as exc:
        raise ProviderContractError(
            f"{endpoint}: answer does not match {schema.__name__}: {exc}"
        ) from None
    except msgspec.DecodeError:
        raise ProviderContractError(
            f"{endpoint}: answer is not valid JSON ({len(content)} characters)"
        ) from None
