"""Embeddings from Ollama's ``/api/embed`` (``{"model", "input": [...]}`` → ``{"embeddings"}``).

Ollama answers rows in input order and takes no API key by default; a key is still sent when
configured, for Ollama behind an authenticating proxy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs
import msgspec

from cairn.providers.http.client import post_json, safe_endpoint
from cairn.providers.http.embedder_base import HttpEmbedder

if TYPE_CHECKING:
    from collections.abc import Sequence


__all__ = ["OLLAMA_PROVIDER", "OllamaEmbedder"]

OLLAMA_PROVIDER: Final = "ollama"


class _EmbedResponse(msgspec.Struct):
    embeddings: list[list[float]]


_DECODER: Final = msgspec.json.Decoder(_EmbedResponse)


@attrs.define(eq=False)
class OllamaEmbedder(HttpEmbedder):
    """An :class:`~cairn.providers.embedding.EmbeddingProvider` over Ollama ``/api/embed``.

    Same batching, cancellation and error contract as every :class:`HttpEmbedder`.
    """

    provider = OLLAMA_PROVIDER

    async def _fetch_rows(self, texts: Sequence[str]) -> tuple[list[list[float]], str]:
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
            http_timeout=self.config.timeout(),
        )
        return response.embeddings, safe_endpoint(url)
