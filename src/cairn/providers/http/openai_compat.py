"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint.

OpenAI, vLLM, llama.cpp server, LM Studio and most gateways speak this shape. The response
lists ``data`` items each carrying an ``index``; servers may answer out of order, so rows are
placed by index, and indices that are not exactly ``0..n-1`` are a contract error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs
import httpx
import msgspec
import numpy as np
import trio

from cairn.errors import ProviderContractError
from cairn.providers.http.client import post_json, safe_endpoint
from cairn.providers.http.config import MAX_QUERY_CODE_POINTS, HttpEmbedderConfig
from cairn.providers.http.shaping import batches, to_unit_rows
from cairn.vectors.identity import EmbeddingIdentity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.providers.embedding import Vectors

__all__ = ["OPENAI_COMPAT_PROVIDER", "OpenAICompatibleEmbedder"]

OPENAI_COMPAT_PROVIDER: Final = "openai-compatible"


class _EmbeddingItem(msgspec.Struct):
    index: int
    embedding: list[float]


class _EmbeddingsResponse(msgspec.Struct):
    data: list[_EmbeddingItem]


_DECODER: Final = msgspec.json.Decoder(_EmbeddingsResponse)


@attrs.define(eq=False)
class OpenAICompatibleEmbedder:
    """An :class:`~cairn.providers.embedding.EmbeddingProvider` over ``/v1/embeddings``.

    Documents are sent in batches of at most ``config.max_batch_size``, one request at a time
    (concurrency is the gateway's job). Both methods are checkpoints; a cancelled call raises
    ``trio.Cancelled`` and is not retried.
    """

    client: httpx.AsyncClient
    config: HttpEmbedderConfig

    @property
    def identity(self) -> EmbeddingIdentity:
        return EmbeddingIdentity(
            provider=OPENAI_COMPAT_PROVIDER,
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
        url = self.config.endpoint("/v1/embeddings")
        payload: dict[str, Any] = {
            "model": self.config.model,
            "input": list(texts),
            "encoding_format": "float",
        }
        if self.config.request_dimensions:
            payload["dimensions"] = self.config.dimension
        headers = (
            {} if self.config.api_key is None else self.config.api_key.bearer_headers()
        )
        response = await post_json(
            self.client,
            url,
            payload,
            headers=headers,
            decoder=_DECODER,
            retry=self.config.retry,
        )
        endpoint = safe_endpoint(url)
        ordered = sorted(response.data, key=lambda item: item.index)
        if [item.index for item in ordered] != list(range(len(ordered))):
            raise ProviderContractError(
                f"{endpoint}: response indices are not 0..{len(ordered) - 1}"
            )
        return to_unit_rows(
            [item.embedding for item in ordered],
            expected_rows=len(texts),
            dimension=self.config.dimension,
            endpoint=endpoint,
        )
