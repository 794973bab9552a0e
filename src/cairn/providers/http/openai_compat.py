"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint.

OpenAI, vLLM, llama.cpp server, LM Studio and most gateways speak this shape. The response
lists ``data`` items each carrying an ``index``; servers may answer out of order, so rows are
placed by index, and indices that are not exactly ``0..n-1`` are a contract error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs
import msgspec

from cairn.errors import ProviderContractError
from cairn.providers.http.client import post_json, safe_endpoint
from cairn.providers.http.embedder_base import HttpEmbedder

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["OPENAI_COMPAT_PROVIDER", "OpenAICompatibleEmbedder"]

OPENAI_COMPAT_PROVIDER: Final = "openai-compatible"


class _EmbeddingItem(msgspec.Struct):
    index: int
    embedding: list[float]


class _EmbeddingsResponse(msgspec.Struct):
    data: list[_EmbeddingItem]


_DECODER: Final = msgspec.json.Decoder(_EmbeddingsResponse)


@attrs.define(eq=False)
class OpenAICompatibleEmbedder(HttpEmbedder):
    """An :class:`~cairn.providers.embedding.EmbeddingProvider` over ``/v1/embeddings``
    (batching and cancellation contract in :class:`HttpEmbedder`)."""

    provider = OPENAI_COMPAT_PROVIDER

    async def _fetch_rows(self, texts: Sequence[str]) -> tuple[list[list[float]], str]:
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
            http_timeout=self.config.timeout(),
        )
        endpoint = safe_endpoint(url)
        ordered = sorted(response.data, key=lambda item: item.index)
        if [item.index for item in ordered] != list(range(len(ordered))):
            raise ProviderContractError(
                f"{endpoint}: response indices are not 0..{len(ordered) - 1}"
            )
        return [item.embedding for item in ordered], endpoint
