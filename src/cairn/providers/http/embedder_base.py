"""What every HTTP embedder shares: identity, batching, the query cut, the empty batch.

Subclasses say only how one batch goes over the wire (`_fetch_rows`) and under which
provider name their vectors are identified. Every request passes through one
``trio.CapacityLimiter`` per embedder, so ``config.max_concurrency`` bounds what this provider
has in flight however many tasks call it (``test_embedder_in_flight_requests_are_bounded``).
Document batches (background work) may hold at most ``max_concurrency - 1`` of those slots,
so a recall's query embedding never queues behind a full pipe of batches
(``test_document_batches_leave_a_slot_for_queries``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import attrs
import httpx
import numpy as np
import trio

from cairn.errors import ProviderContractError
from cairn.providers.http.config import MAX_QUERY_CODE_POINTS, HttpEmbedderConfig
from cairn.providers.http.shaping import batches, to_unit_rows
from cairn.vectors.identity import MAX_DIMENSION, EmbeddingIdentity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.providers.embedding import Vectors

__all__ = ["HttpEmbedder"]


@attrs.define(eq=False)
class HttpEmbedder:
    """Base of the HTTP :class:`~cairn.providers.embedding.EmbeddingProvider` classes.

    Documents are sent in batches of at most ``config.max_batch_size``; the batches of one
    call go out concurrently, and all calls share the limit of ``config.max_concurrency``
    requests in flight, of which documents may take all but one. Both methods are checkpoints; a cancelled call raises
    ``trio.Cancelled`` and is not retried.
    """

    provider: ClassVar[str]
    client: httpx.AsyncClient
    config: HttpEmbedderConfig
    _limiter: trio.CapacityLimiter = attrs.field(init=False, repr=False)
    _document_limiter: trio.CapacityLimiter = attrs.field(init=False, repr=False)

    @_limiter.default
    def _new_limiter(self) -> trio.CapacityLimiter:
        return trio.CapacityLimiter(self.config.max_concurrency)

    @_document_limiter.default
    def _new_document_limiter(self) -> trio.CapacityLimiter:
        return trio.CapacityLimiter(max(1, self.config.max_concurrency - 1))

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
        chunks = list(batches(texts, self.config.max_batch_size))
        if len(chunks) == 1:
            return await self._document_batch(chunks[0])
        parts: list[Vectors | None] = [None] * len(chunks)

        async def one(index: int) -> None:
            parts[index] = await self._document_batch(chunks[index])

        # A failed batch cancels its siblings; the first error surfaces unwrapped (as from a
        # single request), so callers catch ProviderError, not an ExceptionGroup.
        try:
            async with trio.open_nursery() as nursery:
                for index in range(len(chunks)):
                    nursery.start_soon(one, index)
        except BaseExceptionGroup as group:
            error = _first_error(group)
            if error is None:
                raise  # only cancellation: let the cancel scopes sort it out
            raise error from None
        return np.concatenate([part for part in parts if part is not None], axis=0)

    async def embed_query(self, text: str) -> Vectors:
        vectors = await self._bounded_batch([text[:MAX_QUERY_CODE_POINTS]])
        row: Vectors = vectors[0]
        return row

    async def _bounded_batch(self, texts: Sequence[str]) -> Vectors:
        async with self._limiter:
            return await self._embed_batch(texts)

    async def _document_batch(self, texts: Sequence[str]) -> Vectors:
        async with self._document_limiter:
            return await self._bounded_batch(texts)

    async def probe_dimension(self) -> int:
        """Ask the server for one embedding and return its length (dimension discovery).

        Used once when the configuration names no dimension; like batch embedding it never
        goes through the query breaker.
        """
        async with self._limiter:
            rows, endpoint = await self._fetch_rows(["dimension probe"])
        if len(rows) != 1 or not 0 < len(rows[0]) <= MAX_DIMENSION:
            raise ProviderContractError(
                f"{endpoint}: a dimension probe must return one embedding of 1..{MAX_DIMENSION}"
                " values"
            )
        return len(rows[0])

    async def _embed_batch(self, texts: Sequence[str]) -> Vectors:
        rows, endpoint = await self._fetch_rows(texts)
        return to_unit_rows(
            rows,
            expected_rows=len(texts),
            dimension=self.config.dimension,
            endpoint=endpoint,
        )

    async def _fetch_rows(self, texts: Sequence[str]) -> tuple[list[list[float]], str]:
        """One request: the raw rows in input order and the endpoint (for errors)."""
        raise NotImplementedError


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The first leaf of ``group`` that is not ``trio.Cancelled``, if any."""
    leaves: list[BaseException] = []

    def walk(error: BaseException) -> None:
        if isinstance(error, BaseExceptionGroup):
            for inner in error.exceptions:
                walk(inner)
        else:
            leaves.append(error)

    walk(group)
    return next((leaf for leaf in leaves if not isinstance(leaf, trio.Cancelled)), None)
