"""Switching providers on a live runtime: the embedder and the text model.

A new embedding identity (provider, model, dimension or metric) is an epoch change for
every running agent, made with no checkpoint between installing the provider and
advancing the fences: work that starts from then on sees the new embedder and the new
epoch together, and any result of the old epoch is refused at commit (the coordinator
checks the live fence inside the transaction and records the new epoch there). Agents not
running have no work in flight; they start with the new embedder. Serialised with agent
start-up by the registry's switching lock (tests/runtime/test_switch.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from cairn.errors import RuntimeClosedError
from cairn.providers.gateway import QueryEmbeddingGateway
from cairn.providers.http.text import TextProvider
from cairn.providers.settings import load_embedding_settings, load_text_settings
from cairn.runtime.providers import (
    ActiveEmbedder,
    SharedHttpClient,
    build_embedder,
    build_text_provider,
)
from cairn.runtime.registry import AgentRegistry
from cairn.runtime.threads import Limiters, run_in_thread

if TYPE_CHECKING:
    from cairn.providers.embedding import EmbeddingProvider
    from cairn.providers.settings import EmbeddingSettings

__all__ = ["ProviderSwitch"]


@attrs.define(eq=False)
class ProviderSwitch:
    data_dir: Path
    limiters: Limiters
    active: ActiveEmbedder
    gateway: QueryEmbeddingGateway
    registry: AgentRegistry
    http: SharedHttpClient
    text_provider: TextProvider | None = None

    async def reconfigure(self, settings: EmbeddingSettings | None = None) -> bool:
        """Apply the provider configuration; returns whether the embedding identity
        changed. Without ``settings`` both ``[embedding]`` and ``[text]`` are re-read from
        the file and the environment. Bad configuration raises InvalidInputError and
        changes nothing: both providers are built before either is installed."""
        text_settings = None
        if settings is None:
            data_dir = self.data_dir
            read, text_settings = await run_in_thread(
                lambda: (
                    load_embedding_settings(data_dir),
                    load_text_settings(data_dir),
                ),
                limiter=self.limiters.store_read,
            )
            settings = read
        embedder = await build_embedder(settings, self.limiters, self.http)
        text_provider = (
            None
            if text_settings is None
            else build_text_provider(text_settings, self.http)
        )
        changed = await self.use_embedder(embedder)
        if text_settings is not None:
            self.use_text_provider(text_provider)
        return changed

    def use_text_provider(self, provider: TextProvider | None) -> None:
        """Extract with ``provider`` from the next batch on (None: the rule extractor).

        No epoch change: a proposal is validated against its batch's evidence whichever
        model made it, so a batch already in flight may still commit.
        """
        self.text_provider = provider
        for supervisor in self.registry.running():
            supervisor.use_text_provider(provider)

    async def use_embedder(self, embedder: EmbeddingProvider) -> bool:
        if self.registry.closed:
            raise RuntimeClosedError("the memory runtime is closed")
        async with self.registry.switching:
            changed = embedder.identity != self.active.identity
            # From here to the end no checkpoint: work starting now sees the new embedder
            # and the new epoch together.
            self.active.replace(embedder)
            self.gateway.switch(embedder)
            if changed:
                for supervisor in self.registry.running():
                    supervisor.switch_embedding()
        return changed
