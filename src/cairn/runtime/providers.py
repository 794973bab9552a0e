"""Building the configured embedder (and the shared HTTP client it may need), and the
slot that holds the embedder currently serving, replaced whole on a config switch."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import attrs
import trio

from cairn.providers.embedding import EmbeddingProvider
from cairn.providers.http.client import open_http_client
from cairn.providers.http.factory import discover_dimension, http_embedder
from cairn.providers.local import LocalE5Embedder
from cairn.runtime.threads import Limiters, run_in_thread

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import httpx

    from cairn.providers.settings import EmbeddingSettings
    from cairn.vectors.identity import EmbeddingIdentity

__all__ = ["ActiveEmbedder", "build_embedder", "local_embedder", "open_embedder"]


@attrs.define(eq=False)
class ActiveEmbedder:
    """The embedder serving document batches now.

    Work snapshots ``provider`` (and its identity) together with its fence identity when it
    starts; a switch replaces ``provider`` and advances every agent's epoch, so work that
    started with the old one can no longer commit. ``generation`` counts switches.
    """

    provider: EmbeddingProvider
    generation: int = 0

    @property
    def identity(self) -> EmbeddingIdentity:
        return self.provider.identity

    def replace(self, provider: EmbeddingProvider) -> None:
        self.provider = provider
        self.generation += 1


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


async def build_embedder(
    settings: EmbeddingSettings,
    limiters: Limiters,
    client: httpx.AsyncClient | None,
) -> EmbeddingProvider:
    """The embedder ``settings`` select; an HTTP one goes over the shared ``client``
    (its dimension discovered with one probe call if not configured)."""
    if settings.provider == "local":
        await trio.lowlevel.checkpoint()
        return local_embedder(limiters)
    if client is None:
        raise ValueError("an HTTP embedding provider needs the shared HTTP client")
    return http_embedder(await discover_dimension(settings, client), client)


@contextlib.asynccontextmanager
async def open_embedder(
    settings: EmbeddingSettings, limiters: Limiters
) -> AsyncIterator[EmbeddingProvider]:
    """The embedder ``settings`` select, with an HTTP client of its own closed on exit."""
    if settings.provider == "local":
        yield local_embedder(limiters)
        return
    async with open_http_client() as client:
        yield await build_embedder(settings, limiters, client)
