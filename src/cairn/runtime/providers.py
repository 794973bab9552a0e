"""Building the configured embedder (and the shared HTTP client it may need)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from cairn.providers.http.client import ApiKey, open_http_client
from cairn.providers.http.config import HttpEmbedderConfig
from cairn.providers.http.ollama import OllamaEmbedder
from cairn.providers.http.openai_compat import OpenAICompatibleEmbedder
from cairn.providers.local import LocalE5Embedder
from cairn.runtime.threads import Limiters, run_in_thread

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from cairn.providers.embedding import EmbeddingProvider
    from cairn.providers.settings import EmbeddingSettings

__all__ = ["local_embedder", "open_embedder"]


def local_embedder(limiters: Limiters) -> LocalE5Embedder:
    """The embedded default, with document batches as background work and queries not."""
    return LocalE5Embedder(
        lambda function: run_in_thread(
            function, limiter=limiters.cpu, background=limiters.background
        ),
        # A query embedding is a pure computation: a deadline may abandon it.
        run_query_in_thread=lambda function: run_in_thread(
            function, limiter=limiters.query, abandon_on_cancel=True
        ),
    )


@contextlib.asynccontextmanager
async def open_embedder(
    settings: EmbeddingSettings, limiters: Limiters
) -> AsyncIterator[EmbeddingProvider]:
    """The embedder ``settings`` select; an HTTP one shares a client closed on exit."""
    if settings.provider == "local":
        yield local_embedder(limiters)
        return
    assert settings.base_url is not None  # noqa: S101 - checked by EmbeddingSettings
    assert settings.model is not None  # noqa: S101
    assert settings.dimension is not None  # noqa: S101
    config = HttpEmbedderConfig(
        base_url=settings.base_url,
        model=settings.model,
        dimension=settings.dimension,
        api_key=None if settings.api_key_env is None else ApiKey(settings.api_key_env),
        max_batch_size=settings.max_batch_size,
    )
    async with open_http_client(
        connect_timeout_s=settings.connect_timeout_s,
        read_timeout_s=settings.read_timeout_s,
    ) as client:
        if settings.provider == "ollama":
            yield OllamaEmbedder(client, config)
        else:
            yield OpenAICompatibleEmbedder(client, config)
