"""Fakes shared by the test families (importable as ``tests.fakes``): one of each, so a
change to a fake's contract is made once."""

from __future__ import annotations

from collections.abc import Sequence

import trio

from cairn.providers.embedding import Vectors
from cairn.testing import HashingEmbedder

__all__ = ["GatedDocuments"]


class GatedDocuments(HashingEmbedder):
    """Document batches wait for the test to open ``gate`` (a trio-native block);
    ``waiting`` is set once a batch is held there. Queries are instant."""

    def __init__(self, dimension: int | None = None) -> None:
        if dimension is None:
            super().__init__()
        else:
            super().__init__(dimension=dimension)
        self.gate = trio.Event()
        self.waiting = trio.Event()

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.waiting.set()
        await self.gate.wait()
        return await super().embed_documents(texts)
