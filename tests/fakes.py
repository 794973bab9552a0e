"""Fakes shared by the test families (importable as ``tests.fakes``): one of each, so a
change to a fake's contract is made once."""

from __future__ import annotations

from collections.abc import Sequence

import trio

from cairn.providers.embedding import Vectors
from cairn.testing import HashingEmbedder

__all__ = ["ColdQueries", "GatedDocuments"]


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


class ColdQueries(HashingEmbedder):
    """A query model that is still loading until the test opens ``loaded``: every query
    (the warm-up at open first) waits for it there, a trio-native block. ``queries`` lists
    the texts asked for, ``queried`` is set at the first. Documents are instant."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded = trio.Event()
        self.queried = trio.Event()
        self.queries: list[str] = []

    async def embed_query(self, text: str) -> Vectors:
        self.queries.append(text)
        self.queried.set()
        await self.loaded.wait()
        return await super().embed_query(text)
