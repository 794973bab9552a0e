"""The two embedders a run switches between (A→B→A): the hashing embedder and the same
features reversed. Same dimension, different identity and vector space, and both
deterministic, so the checker can recompute every stored vector and catch one that was
computed under the other identity."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cairn.testing import HashingEmbedder
from cairn.vectors.identity import EmbeddingIdentity

if TYPE_CHECKING:
    from cairn.providers.embedding import Vectors

__all__ = ["DIMENSION", "ReversedHashingEmbedder", "embedders_by_key"]

DIMENSION = 256


class ReversedHashingEmbedder(HashingEmbedder):
    @property
    def identity(self) -> EmbeddingIdentity:
        return EmbeddingIdentity("testing", "hashing-reversed-v1", self.dimension)

    def _embed(self, text: str) -> Vectors:
        vector: Vectors = super()._embed(text)[::-1].copy()
        return vector


def embedders_by_key() -> dict[str, HashingEmbedder]:
    """Identity key → an embedder that recomputes that identity's vectors."""
    embedders = (HashingEmbedder(DIMENSION), ReversedHashingEmbedder(DIMENSION))
    return {embedder.identity.key(): embedder for embedder in embedders}
