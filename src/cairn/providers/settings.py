"""Which embedding and text providers to use: a TOML file plus environment variables.

The file is ``$CAIRN_CONFIG`` or ``<data dir>/cairn.toml``; environment variables
(``CAIRN_EMBEDDING_*``, ``CAIRN_TEXT_*``) override it field by field. Both tables are
decoded by the one schema of cairn.configuration, derived from the fields below. With neither, the
embedded local model embeds and no text provider is used: external providers are
configuration, never a requirement. Keys are never configured directly, only the *name* of
the environment variable that holds one (``api_key_env``), so no file, status output or
error can carry a secret. An unknown key, a value of the wrong type or an impossible value is
an :class:`~cairn.errors.InvalidInputError` (a ConfigurationError where one value is at
fault) naming the file or variable it came from.

    [embedding]
    provider = "openai-compatible"     # or "ollama", or "local" (the default)
    base_url = "http://127.0.0.1:8080"
    model = "text-embedding-3-small"
    dimension = 1536
    api_key_env = "OPENAI_API_KEY"
    max_batch_size = 64
    connect_timeout_s = 5.0
    read_timeout_s = 30.0
    max_concurrency = 4

    [text]
    provider = "openai-compatible"     # or "ollama", "litellm", or "none" (the default)
    base_url = "https://api.openai.com"
    model = "gpt-4o-mini"
    api_key_env = "OPENAI_API_KEY"
    max_tokens = 1024                  # ceiling on any one answer
    token_limit_field = "max_completion_tokens"   # or "max_tokens" (the default)
    connect_timeout_s = 5.0
    read_timeout_s = 60.0
    max_concurrency = 4

    [text]                             # needs the optional extra: pip install 'cairn[litellm]'
    provider = "litellm"
    model = "anthropic/claude-3-5-haiku-latest"   # LiteLLM's model string
    endpoint = "http://127.0.0.1:4000"  # optional: LiteLLM's api_base
    api_key_env = "ANTHROPIC_API_KEY"   # optional: else LiteLLM reads its provider's variable
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from cairn.configuration import (
    DEFAULT_SOURCE,
    DecodedTable,
    config_path,
    load_table,
    table_schema,
)
from cairn.errors import InvalidInputError
from cairn.providers.http.text import TOKEN_LIMIT_FIELDS

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

__all__ = [
    "EMBEDDING_SCHEMA",
    "PROVIDERS",
    "TEXT_PROVIDERS",
    "TEXT_SCHEMA",
    "EmbeddingSettings",
    "TextSettings",
    "config_path",
    "load_embedding_settings",
    "load_text_settings",
]

PROVIDERS = ("local", "openai-compatible", "ollama")
TEXT_PROVIDERS = ("none", "openai-compatible", "ollama", "litellm")


def _require_positive(settings: object, names: tuple[str, ...], source: str) -> None:
    for name in names:
        value = getattr(settings, name)
        if value is not None and value <= 0:
            raise InvalidInputError(f"{source}: {name} must be positive, not {value!r}")


def _require_present(
    settings: object, provider: str, names: tuple[str, ...], source: str
) -> None:
    missing = [name for name in names if getattr(settings, name) is None]
    if missing:
        raise InvalidInputError(
            f"provider {provider!r} needs {', '.join(missing)} ({source})"
        )


def _require_absent(
    settings: object, provider: str, name: str, instead: str, source: str
) -> None:
    if getattr(settings, name) is not None:
        raise InvalidInputError(
            f"provider {provider!r} takes {instead}, not {name} ({source})"
        )


@attrs.frozen
class EmbeddingSettings:
    provider: str = "local"
    base_url: str | None = None
    model: str | None = None
    dimension: int | None = None
    api_key_env: str | None = None
    max_batch_size: int = 64
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 30.0
    max_concurrency: int = 4
    source: str = "default"

    def __attrs_post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise InvalidInputError(
                f"unknown embedding provider {self.provider!r}; use one of"
                f" {', '.join(PROVIDERS)} ({self.source})"
            )
        _require_positive(
            self,
            (
                "dimension",
                "max_batch_size",
                "connect_timeout_s",
                "read_timeout_s",
                "max_concurrency",
            ),
            self.source,
        )
        if self.provider != "local":
            # No dimension: discovered by one probe call when the provider is built.
            _require_present(self, self.provider, ("base_url", "model"), self.source)


@attrs.frozen
class TextSettings:
    """The text provider (extraction, reflection, query compilation), or ``"none"``.

    ``base_url`` is for the HTTP providers; ``"litellm"`` takes LiteLLM's model string as
    ``model`` and an optional ``endpoint`` (LiteLLM's ``api_base``) instead, and maps the
    token cap per provider itself (no ``token_limit_field``).
    """

    provider: str = "none"
    base_url: str | None = None
    endpoint: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    max_tokens: int | None = None
    token_limit_field: str = "max_tokens"  # noqa: S105 - a request field name
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 60.0
    max_concurrency: int = 4
    source: str = "default"

    def __attrs_post_init__(self) -> None:
        if self.provider not in TEXT_PROVIDERS:
            raise InvalidInputError(
                f"unknown text provider {self.provider!r}; use one of"
                f" {', '.join(TEXT_PROVIDERS)} ({self.source})"
            )
        if self.token_limit_field not in TOKEN_LIMIT_FIELDS:
            raise InvalidInputError(
                f"token_limit_field must be one of {', '.join(TOKEN_LIMIT_FIELDS)},"
                f" not {self.token_limit_field!r} ({self.source})"
            )
        _require_positive(
            self,
            ("max_tokens", "connect_timeout_s", "read_timeout_s", "max_concurrency"),
            self.source,
        )
        if self.provider == "litellm":
            _require_present(self, self.provider, ("model",), self.source)
            _require_absent(self, self.provider, "base_url", "endpoint", self.source)
            if self.token_limit_field != "max_tokens":  # noqa: S105 - a field name
                raise InvalidInputError(
                    f"provider {self.provider!r} maps the token cap itself;"
                    f" remove token_limit_field ({self.source})"
                )
        elif self.provider != "none":
            _require_present(self, self.provider, ("base_url", "model"), self.source)
            _require_absent(self, self.provider, "endpoint", "base_url", self.source)


EMBEDDING_SCHEMA: Final = table_schema("embedding", EmbeddingSettings, ("source",))
TEXT_SCHEMA: Final = table_schema("text", TextSettings, ("source",))


def _source(decoded: DecodedTable, table: str) -> str:
    """The file (by its path) and the variables that set anything, as status shows."""
    labels = [label.removesuffix(f" [{table}]") for label in decoded.labels()]
    return ", ".join(labels) or DEFAULT_SOURCE


def load_embedding_settings(
    data_dir: Path, environ: Mapping[str, str] | None = None
) -> EmbeddingSettings:
    """Read ``[embedding]`` from the config file, then apply ``CAIRN_EMBEDDING_*`` variables."""
    decoded = load_table(EMBEDDING_SCHEMA, data_dir, environ)
    return EmbeddingSettings(**decoded.values, source=_source(decoded, "embedding"))


def load_text_settings(
    data_dir: Path, environ: Mapping[str, str] | None = None
) -> TextSettings:
    """Read ``[text]`` from the config file, then apply ``CAIRN_TEXT_*`` variables."""
    decoded = load_table(TEXT_SCHEMA, data_dir, environ)
    return TextSettings(**decoded.values, source=_source(decoded, "text"))
