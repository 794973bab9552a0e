"""Embeddings from Ollama's ``/api/embed`` (``{"model", "input": [...]}`` → ``{"embeddings"}``).

Ollama answers rows in input order and takes no API key by default; a key is still sent when
configured, for Ollama behind an authenticating proxy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs
import httpx
import msgspec
import numpy as np
import trio

from cairn.providers.http.client import post_json, safe_endpoint
from cairn.providers.http.config import MAX_QUERY_CODE_POINTS, HttpEmbedderConfig
from cairn.providers.http.shaping import batches, to_unit_rows
from cairn.vectors.identity import EmbeddingIdentity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.providers.embedding import Vectors

__all__ = ["OLLAMA_PROVIDER", "OllamaEmbedder"]

OLLAMA_PROVIDER: Final = "ollama"


class _EmbedResponse(msgspec.Struct):
    embeddings: list[list[float]]


_DECODER: Final = msgspec.json.Decoder(_EmbedResponse)


@attrs.define(eq=False)
class OllamaEmbedder:
    """An :class:`~cairn.providers.embedding.EmbeddingProvider` over Ollama ``/api/embed``.

    Same batching, cancellation and error contract as
    :class:`~cairn.providers.http.openai_compat.OpenAICompatibleEmbedder`.
    """

    client: httpx.AsyncClient
    config: HttpEmbedderConfig

    @property
    def identity(self) -> EmbeddingIdentity:
        return EmbeddingIdentity(
            provider=OLLAMA_PROVIDER,
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
        url = self.config.endpoint("/api/embed")
        headers = (
            {} if self.config.api_key is None else self.config.api_key.bearer_headers()
        )
        payload: dict[str, Any] = {"model": self.config.model, "input": list(texts)}
        if self.config.request_dimensions:
            payload["dimensions"] = self.config.dimension
        response = await post_json(
            self.client,
            url,
            payload,
            headers=headers,
            decoder=_DECODER,
            retry=self.config.retry,
        )
        return to_unit_rows(
            response.embeddings,
            expected_rows=len(texts),
            dimension=self.config.dimension,
            endpoint=safe_endpoint(url),
        )
