"""Exact top-k kernels over a row-major matrix of vectors.

Two kernels, one per in-memory storage type, because neither wins on every axis
(numbers from bench/vector_upsert.py, 100k x 384, k = 10, 2 vCPUs):

* float16 rows go to usearch's SIMD brute force (``usearch.index.search(..., exact=True)``):
  about 12 ms. numpy has no BLAS path for float16 and takes about 95 ms on the same matrix.
* float32 rows go to a BLAS matrix-vector product plus ``argpartition``: about 6 ms for
  twice the memory. It also degrades far less when another Python thread is CPU-bound
  (about 50 ms, against 30 ms to over a second for usearch, which hands the GIL back and
  forth during the scan).

Both return row positions best first and a similarity where larger is better: cosine
similarity for ``cos``, the dot product for ``ip`` and the negated squared distance for
``l2sq``, so callers never need to know which way a metric sorts.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt
from usearch.compiled import MetricKind
from usearch.index import search as usearch_search

if TYPE_CHECKING:
    from cairn.vectors.identity import Metric

__all__ = ["numpy_topk", "usearch_topk"]

_USEARCH_METRIC: Final[dict[str, MetricKind]] = {
    "cos": MetricKind.Cos,
    "ip": MetricKind.IP,
    "l2sq": MetricKind.L2sq,
}

# usearch spins up its own threads per call; below this many rows the start-up costs more
# than the split saves (measured: 10k rows 1.3 ms on one thread, 1.4 ms on two).
_PARALLEL_ROWS: Final = 50_000


def _usable_cpus() -> int:
    # usearch defaults to std::thread::hardware_concurrency(), which ignores CPU affinity;
    # in a container pinned to 2 of 64 cores that would start 64 threads per search.
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        count = os.cpu_count() or 1
    return max(1, min(count, 8))


_CPUS: Final = _usable_cpus()


def usearch_topk(
    matrix: npt.NDArray[np.float16],
    query: npt.NDArray[np.float16],
    count: int,
    metric: Metric,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Best ``count`` rows of a C-contiguous float16 ``matrix`` for one float16 ``query``.

    ``1 <= count <= len(matrix)`` is the caller's job (usearch refuses anything else).
    """
    threads = 1 if matrix.shape[0] < _PARALLEL_ROWS else _CPUS
    matches = usearch_search(
        matrix, query, count, _USEARCH_METRIC[metric], exact=True, threads=threads
    )
    rows = np.asarray(matches.keys).astype(np.int64)
    distances = np.asarray(matches.distances, dtype=np.float32)
    # usearch reports distances: 1 - cos, 1 - dot, and the squared L2 distance.
    similarities = -distances if metric == "l2sq" else np.float32(1.0) - distances
    return rows, similarities


def numpy_topk(
    matrix: npt.NDArray[np.float32],
    norms: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    count: int,
    metric: Metric,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Best ``count`` rows of a float32 ``matrix`` whose row L2 norms are ``norms``.

    Matches :func:`usearch_topk` conventions, including cosine 0 against a zero vector.
    """
    scores = matrix @ query
    if metric == "cos":
        denominator = norms * np.float32(np.linalg.norm(query))
        scores = np.divide(
            scores, denominator, out=np.zeros_like(scores), where=denominator > 0
        )
    elif metric == "l2sq":
        query_sq = np.float32(query @ query)
        scores = -np.maximum(
            norms * norms - np.float32(2.0) * scores + query_sq, np.float32(0.0)
        )
    total = scores.shape[0]
    if count >= total:
        order = np.argsort(-scores, kind="stable")
    else:
        candidates = np.argpartition(-scores, count - 1)[:count]
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
    return order.astype(np.int64), scores[order].astype(np.float32)
