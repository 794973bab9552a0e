"""Building HTTP providers from settings, over a client the caller owns.

The runtime opens ONE shared ``httpx.AsyncClient`` and builds every HTTP provider over it;
each provider carries its own timeouts and in-flight bound in its config, so sharing the
client shares connections, not limits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import trio

from cairn.errors import InvalidInputError
from cairn.providers.http.client import ApiKey
from cairn.providers.http.config import HttpEmbedderConfig
from cairn.providers.http.ollama import OllamaEmbedder
from cairn.providers.http.openai_compat import OpenAICompatibleEmbedder
from cairn.providers.http.text import HttpTextConfig
from cairn.providers.http.text_ollama import OllamaTextProvider
from cairn.providers.http.text_openai import OpenAICompatibleTextProvider
from cairn.providers.litellm_text import litellm_text_provider

if TYPE_CHECKING:
    import httpx

    from cairn.providers.http.embedder_base import HttpEmbedder
    from cairn.providers.http.text import TextProvider
    from cairn.providers.settings import EmbeddingSettings, TextSettings

__all__ = ["discover_dimension", "http_embedder", "http_text_provider"]


def _api_key(env_var: str | None) -> ApiKey | None:
    return None if env_var is None else ApiKey(env_var)


def http_embedder(
    settings: EmbeddingSettings, client: httpx.AsyncClient
) -> HttpEmbedder:
    """The HTTP embedder ``settings`` select, over ``client``.

    Raises:
        InvalidInputError: the settings select the local model, which is not an HTTP one.
    """
    if (
        settings.provider not in {"openai-compatible", "ollama"}
        or settings.base_url is None
        or settings.model is None
    ):
        raise InvalidInputError(
            f"embedding provider {settings.provider!r} is not an HTTP provider"
            f" ({settings.source})"
        )
    if settings.dimension is None:
        raise InvalidInputError(
            f"the embedding dimension is not known yet ({settings.source});"
            " discover it with discover_dimension()"
        )
    config = HttpEmbedderConfig(
        base_url=settings.base_url,
        model=settings.model,
        dimension=settings.dimension,
        api_key=_api_key(settings.api_key_env),
        max_batch_size=settings.max_batch_size,
        connect_timeout_s=settings.connect_timeout_s,
        read_timeout_s=settings.read_timeout_s,
        max_concurrency=settings.max_concurrency,
    )
    if settings.provider == "ollama":
        return OllamaEmbedder(client, config)
    return OpenAICompatibleEmbedder(client, config)


async def discover_dimension(
    settings: EmbeddingSettings, client: httpx.AsyncClient
) -> EmbeddingSettings:
    """``settings`` with ``dimension`` filled in by one probe call if it was not configured.

    Raises the provider's typed error if the probe fails: configure ``dimension`` to start
    without reaching the provider.
    """
    if settings.dimension is not None:
        await trio.lowlevel.checkpoint()
        return settings
    probe = http_embedder(attrs.evolve(settings, dimension=1), client)
    return attrs.evolve(settings, dimension=await probe.probe_dimension())


def http_text_provider(
    settings: TextSettings, client: httpx.AsyncClient
) -> TextProvider | None:
    """The text provider ``settings`` select over ``client``, or None for ``"none"``.

    ``"litellm"`` does not use ``client``: LiteLLM brings its own HTTP stack, on the run's
    asyncio loop (:mod:`cairn.providers.litellm_text`).

    Raises:
        LiteLLMUnavailableError: ``"litellm"`` without the ``cairn[litellm]`` extra, or
            under an asyncio host.
    """
    if settings.provider == "none":
        return None
    if settings.provider == "litellm":
        return litellm_text_provider(settings)
    if settings.base_url is None or settings.model is None:  # checked by TextSettings
        raise InvalidInputError(
            f"text provider {settings.provider!r} needs base_url and model"
            f" ({settings.source})"
        )
    config = HttpTextConfig(
        base_url=settings.base_url,
        model=settings.model,
        api_key=_api_key(settings.api_key_env),
        max_tokens=settings.max_tokens,
        token_limit_field=settings.token_limit_field,
        connect_timeout_s=settings.connect_timeout_s,
        read_timeout_s=settings.read_timeout_s,
        max_concurrency=settings.max_concurrency,
    )
    if settings.provider == "ollama":
        return OllamaTextProvider(client, config)
    return OpenAICompatibleTextProvider(client, config)
