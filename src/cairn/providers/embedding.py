"""The embedding provider interface shared by the embedded default and HTTP providers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from cairn.vectors.identity import EmbeddingIdentity

__all__ = ["EmbeddingProvider", "ThreadRunner", "Vectors"]

T = TypeVar("T")
Vectors = npt.NDArray[np.float32]
# How a provider reaches a worker thread: injected by the runtime (cairn.runtime.threads),
# so providers never touch trio's thread API themselves.
ThreadRunner = Callable[[Callable[[], Vectors]], Awaitable[Vectors]]


class EmbeddingProvider(Protocol):
    """Turns text into L2-normalised float32 vectors of ``identity.dimension``.

    Both methods are checkpoints and may be cancelled; a cancelled call has no effect.
    """

    @property
    def identity(self) -> EmbeddingIdentity: ...

    async def embed_documents(self, texts: Sequence[str]) -> Vectors: ...

    async def embed_query(self, text: str) -> Vectors: ...
