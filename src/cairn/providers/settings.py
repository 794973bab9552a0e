"""Which embedding provider to use: a TOML file plus environment variables.

The file is ``$CAIRN_CONFIG`` or ``<data dir>/cairn.toml``; environment variables override
it field by field. With neither, the embedded local model serves: external providers are
configuration, never a requirement. Keys are never configured directly, only the *name* of
the environment variable that holds one (``api_key_env``), so no file, status output or
error can carry a secret.

    [embedding]
    provider = "openai-compatible"     # or "ollama", or "local" (the default)
    base_url = "http://127.0.0.1:8080"
    model = "text-embedding-3-small"
    dimension = 1536
    api_key_env = "OPENAI_API_KEY"
    max_batch_size = 64
    connect_timeout_s = 5.0
    read_timeout_s = 30.0
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from cairn.errors import InvalidInputError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["PROVIDERS", "EmbeddingSettings", "load_embedding_settings"]

PROVIDERS = ("local", "openai-compatible", "ollama")
_ENV_PREFIX = "CAIRN_EMBEDDING_"
_FIELDS = {
    "provider": str,
    "base_url": str,
    "model": str,
    "dimension": int,
    "api_key_env": str,
    "max_batch_size": int,
    "connect_timeout_s": float,
    "read_timeout_s": float,
}


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
    source: str = "default"

    def __attrs_post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise InvalidInputError(
                f"unknown embedding provider {self.provider!r}; use one of {', '.join(PROVIDERS)}"
            )
        if self.provider != "local":
            missing = [
                name
                for name in ("base_url", "model", "dimension")
                if getattr(self, name) is None
            ]
            if missing:
                raise InvalidInputError(
                    f"provider {self.provider!r} needs {', '.join(missing)} ({self.source})"
                )


def _coerce(name: str, value: object, source: str) -> object:
    kind = _FIELDS[name]
    try:
        if kind is int and isinstance(value, str | int) and not isinstance(value, bool):
            return int(value)
        if (
            kind is float
            and isinstance(value, str | int | float)
            and not isinstance(value, bool)
        ):
            return float(value)
        if kind is str and isinstance(value, str):
            return value
    except ValueError:
        pass
    raise InvalidInputError(
        f"{source}: {name} must be a {kind.__name__}, not {value!r}"
    )


def load_embedding_settings(
    data_dir: Path, environ: Mapping[str, str] | None = None
) -> EmbeddingSettings:
    """Read ``[embedding]`` from the config file, then apply ``CAIRN_EMBEDDING_*`` variables."""
    environ = os.environ if environ is None else environ
    path = (
        Path(environ["CAIRN_CONFIG"])
        if environ.get("CAIRN_CONFIG")
        else data_dir / "cairn.toml"
    )
    values: dict[str, Any] = {}
    sources: list[str] = []
    if path.is_file():
        try:
            document = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise InvalidInputError(f"{path}: {error}") from None
        table = document.get("embedding", {})
        if not isinstance(table, dict):
            raise InvalidInputError(f"{path}: [embedding] must be a table")
        unknown = set(table) - set(_FIELDS)
        if unknown:
            raise InvalidInputError(
                f"{path}: unknown keys {', '.join(sorted(unknown))}"
            )
        values.update({k: _coerce(k, v, str(path)) for k, v in table.items()})
        sources.append(str(path))
    for name in _FIELDS:
        variable = _ENV_PREFIX + name.upper()
        if variable in environ:
            values[name] = _coerce(name, environ[variable], variable)
            sources.append(variable)
    return EmbeddingSettings(**values, source=", ".join(sources) or "default")
