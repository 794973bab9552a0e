"""Public test helpers: a fixed domain clock and a deterministic, fast embedder."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from typing import TYPE_CHECKING

import attrs
import numpy as np
import trio

from cairn.providers.embedding import ThreadRunner
from cairn.vectors.identity import EmbeddingIdentity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.providers.embedding import Vectors

__all__ = ["FixedDomainClock", "HashingEmbedder"]


@attrs.define
class FixedDomainClock:
    """A domain clock that only moves when the test says so."""

    moment: dt.datetime = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)

    def now(self) -> dt.datetime:
        return self.moment

    def advance(self, delta: dt.timedelta) -> None:
        self.moment += delta


_WORD = re.compile(r"\w+")


@attrs.define(eq=False)
class HashingEmbedder:
    """Feature hashing of words and character trigrams: deterministic, instant, no model.

    Good enough to make vector search meaningful in tests (shared words → similar vectors)
    while keeping test runs fast; never the production default.
    """

    dimension: int = 256
    calls: int = 0
    # Optional thread runner (like the local embedder's): benchmarks use it so hashing
    # does not run on the event loop; tests keep it inline and instant.
    run_in_thread: ThreadRunner | None = None

    @property
    def identity(self) -> EmbeddingIdentity:
        return EmbeddingIdentity("testing", "hashing-v1", self.dimension)

    def _embed(self, text: str) -> Vectors:
        vector = np.zeros(self.dimension, dtype=np.float32)
        words = _WORD.findall(text.casefold())
        features = words + [
            w[i : i + 3] for w in words for i in range(max(1, len(w) - 2))
        ]
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dimension
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        if not texts:
            await trio.lowlevel.checkpoint()
            return np.zeros((0, self.dimension), dtype=np.float32)
        batch = list(texts)

        def embed() -> Vectors:
            return np.stack([self._embed(text) for text in batch])

        if self.run_in_thread is not None:
            return await self.run_in_thread(embed)
        await trio.lowlevel.checkpoint()
        return embed()

    async def embed_query(self, text: str) -> Vectors:
        await trio.lowlevel.checkpoint()
        self.calls += 1
        return self._embed(text)
