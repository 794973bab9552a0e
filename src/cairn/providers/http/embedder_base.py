"""What every HTTP embedder shares: identity, batching, the query cut, the empty batch.

Subclasses say only how one batch goes over the wire (`_embed_batch`) and under which
provider name their vectors are identified.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import attrs
import httpx
import numpy as np
import trio

from cairn.providers.http.config import MAX_QUERY_CODE_POINTS, HttpEmbedderConfig
from cairn.providers.http.shaping import batches
from cairn.vectors.identity import EmbeddingIdentity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.providers.embedding import Vectors

__all__ = ["HttpEmbedder"]


@attrs.define(eq=False)
class HttpEmbedder:
    """Base of the HTTP :class:`~cairn.providers.embedding.EmbeddingProvider` classes.

    Documents are sent in batches of at most ``config.max_batch_size``, one request at a
    time (concurrency is the gateway's job). Both methods are checkpoints; a cancelled call
    raises ``trio.Cancelled`` and is not retried.
    """

    provider: ClassVar[str]
    client: httpx.AsyncClient
    config: HttpEmbedderConfig

    @property
    def identity(self) -> EmbeddingIdentity:
        return EmbeddingIdentity(
            provider=self.provider,
            model=self.config.model,
            dimension=self.config.dimension,
        )

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            await trio.lowlevel.checkpoint()
            return np.zeros((0, self.config.dimension), dtype=np.float32)
        parts = [
            await self._embed_batch(batch)
            for batch in batches(texts, self.config.max_batch_size)
        ]
        return np.concatenate(parts, axis=0)

    async def embed_query(self, text: str) -> Vectors:
        vectors = await self._embed_batch([text[:MAX_QUERY_CODE_POINTS]])
        row: Vectors = vectors[0]
        return row

    async def _embed_batch(self, texts: Sequence[str]) -> Vectors:
        raise NotImplementedError
