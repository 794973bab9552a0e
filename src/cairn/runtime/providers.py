"""Building the configured providers over the runtime's one shared HTTP client, and the
slot that holds the embedder currently serving, replaced whole on a config switch."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import httpx
import trio

from cairn.errors import ProviderError
from cairn.providers.embedding import EmbeddingProvider
from cairn.providers.http.client import create_http_client
from cairn.providers.http.factory import (
    discover_dimension,
    http_embedder,
    http_text_provider,
)
from cairn.providers.local import LocalE5Embedder
from cairn.runtime.threads import Limiters, run_in_thread

if TYPE_CHECKING:
    from cairn.providers.http.text import TextProvider
    from cairn.providers.settings import EmbeddingSettings, TextSettings
    from cairn.vectors.identity import EmbeddingIdentity

__all__ = [
    "ActiveEmbedder",
    "EmbedderUnavailableError",
    "SharedHttpClient",
    "build_embedder",
    "build_text_provider",
    "embedder_reachability",
    "local_embedder",
]

# How long ``embedder_reachability`` waits for the provider's answer, retries included.
REACHABILITY_TIMEOUT_S = 10.0


class EmbedderUnavailableError(ProviderError):
    """The configured HTTP embedder could not be reached (or answered wrongly) while its
    dimension was being discovered, so no runtime can open with it.

    Commands that only read what is stored catch it and read without a runtime
    (cairn.cli.reading); every other caller sees one sentence saying what to do.
    """


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


@attrs.define(eq=False)
class SharedHttpClient:
    """The one ``httpx.AsyncClient`` every HTTP provider of a runtime goes over, created
    on first need (most runtimes use only the local model) and closed after the runtime.

    Timeouts and in-flight limits travel with each provider's config, so one client with
    defaults serves them all, and a provider switch needs no new client.
    """

    _client: httpx.AsyncClient | None = None

    def get(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = create_http_client()
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            with trio.CancelScope(shield=True):
                await self._client.aclose()


async def build_embedder(
    settings: EmbeddingSettings, limiters: Limiters, http: SharedHttpClient
) -> EmbeddingProvider:
    """The embedder ``settings`` select; an HTTP one goes over the shared client (its
    dimension discovered with one probe call if not configured)."""
    if settings.provider == "local":
        await trio.lowlevel.checkpoint()
        return local_embedder(limiters)
    client = http.get()
    try:
        discovered = await discover_dimension(settings, client)
    except ProviderError as error:
        raise EmbedderUnavailableError(
            f"the embedding provider is unreachable ({error}), so its dimension"
            f" cannot be learned; [embedding] dimension lets cairn open without"
            f" asking it ({settings.source})"
        ) from error
    return http_embedder(discovered, client)


async def embedder_reachability(
    settings: EmbeddingSettings,
    http: SharedHttpClient,
    timeout_s: float = REACHABILITY_TIMEOUT_S,
) -> str | None:
    """Why the HTTP embedder ``settings`` select does not answer, or None if it answers
    (one request, with the client's retries, bounded by ``timeout_s``).

    The local model is in this process: there is nothing to reach, and loading it only
    to say so would cost seconds, so it is never asked (None).
    """
    if settings.provider == "local":
        await trio.lowlevel.checkpoint()
        return None
    probe = http_embedder(
        attrs.evolve(settings, dimension=settings.dimension or 1), http.get()
    )
    with trio.move_on_after(timeout_s):
        try:
            await probe.probe_dimension()
        except ProviderError as error:
            return str(error)
        return None
    return f"no answer from {settings.base_url} within {timeout_s:g} s"


def build_text_provider(
    settings: TextSettings, http: SharedHttpClient
) -> TextProvider | None:
    """The text provider ``settings`` select over the shared client; None for ``"none"``
    (the rule extractor then serves)."""
    if settings.provider == "none":
        return None
    return http_text_provider(settings, http.get())
