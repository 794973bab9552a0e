"""Benchmark of cairn.vectors: upsert throughput, exact search latency, publish and load.

Prints one JSON object. Fixed RNG seed; random unit vectors (d = 384 by default), which is
the worst case for exact search (no structure to exploit) and irrelevant for the rest.

* ``upsert``: vectors/s building a 100k index from empty in batches of 64 and 1024, and
  replacing existing keys in batches of 64 (which appends, tombstones and compacts).
* ``search``: p50/p95 ms of ``ExactVectorIndex.search`` at 10k and 100k rows for k = 10 and
  k = 100, per kernel: ``usearch_f16`` (float16 rows, usearch SIMD brute force),
  ``numpy_f32`` (float32 rows, BLAS) and, for comparison, raw ``numpy_f16`` matmul +
  argpartition on the float16 matrix.
* ``search_beside_busy_thread``: the same 100k / k = 10 search while another Python thread
  spins, the situation of a worker thread next to a busy event loop.
* ``persist``: publish (atomic save with fsync) and load of the 100k index.

    python bench/vector_upsert.py [--rows 100000] [--dimension 384]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import usearch

from cairn.vectors import (
    EmbeddingIdentity,
    ExactVectorIndex,
    Storage,
    load_index,
    save_index,
)

SEED = 20261130


def _unit_rows(rng: np.random.Generator, n: int, d: int) -> npt.NDArray[np.float32]:
    rows = rng.standard_normal((n, d), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def _percentiles(samples: list[float]) -> dict[str, float]:
    ms = sorted(sample * 1e3 for sample in samples)
    return {
        "p50_ms": round(statistics.median(ms), 3),
        "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 3),
    }


def _build(data: npt.NDArray[np.float32], storage: Storage) -> ExactVectorIndex:
    index = ExactVectorIndex(data.shape[1], "cos", storage=storage)
    for start in range(0, len(data), 4096):
        index.upsert(
            np.arange(start, min(start + 4096, len(data))), data[start : start + 4096]
        )
    return index


def bench_upsert(data: npt.NDArray[np.float32]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    n = len(data)
    keys = np.arange(n, dtype=np.int64)
    index = ExactVectorIndex(data.shape[1], "cos")
    for batch in (64, 1024):
        index = ExactVectorIndex(data.shape[1], "cos")
        began = time.perf_counter()
        for start in range(0, n, batch):
            index.upsert(keys[start : start + batch], data[start : start + batch])
        elapsed = time.perf_counter() - began
        result[f"insert_batch_{batch}_vectors_per_s"] = round(n / elapsed)
    # Replace every key of the last full index once, in random order.
    rng = np.random.default_rng(SEED + 1)
    order = rng.permutation(n)
    began = time.perf_counter()
    for start in range(0, n, 64):
        chosen = order[start : start + 64]
        index.upsert(keys[chosen], data[chosen][:, ::-1])
    elapsed = time.perf_counter() - began
    result["replace_batch_64_vectors_per_s"] = round(n / elapsed)
    result["replace_compactions"] = index.statistics().compactions
    return result


def _time_searches(
    search: Any, queries: npt.NDArray[np.float32], k: int, repeats: int
) -> dict[str, float]:
    samples = []
    for position in range(repeats):
        query = queries[position % len(queries)]
        began = time.perf_counter()
        search(query, k)
        samples.append(time.perf_counter() - began)
    return _percentiles(samples)


def _numpy_f16(matrix: npt.NDArray[np.float16]) -> Any:
    def search(query: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
        scores = matrix @ query.astype(np.float16)
        top = np.argpartition(-scores, k - 1)[:k]
        return top[np.argsort(-scores[top])]

    return search


def bench_search(
    data: npt.NDArray[np.float32], queries: npt.NDArray[np.float32]
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for size in (10_000, 100_000):
        if size > len(data):
            continue
        half = _build(data[:size], "f16")
        full = _build(data[:size], "f32")
        matrix = data[:size].astype(np.float16)
        kernels = {
            "usearch_f16": (half.search, 60),
            "numpy_f32": (full.search, 60),
            "numpy_f16": (_numpy_f16(matrix), 60 if size <= 10_000 else 12),
        }
        for k in (10, 100):
            for name, (search, repeats) in kernels.items():
                search(queries[0], k)  # warm up
                result[f"{name}_{size // 1000}k_k{k}"] = _time_searches(
                    search, queries, k, repeats
                )
    return result


def bench_busy_neighbour(
    data: npt.NDArray[np.float32], queries: npt.NDArray[np.float32]
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    size = min(100_000, len(data))
    for storage in ("f16", "f32"):
        index = _build(data[:size], storage)
        stop = threading.Event()

        def spin(stop: threading.Event = stop) -> None:
            spins = 0
            while not stop.is_set():
                spins += 1

        thread = threading.Thread(target=spin)
        thread.start()
        try:
            timing = _time_searches(index.search, queries, 10, 8)
        finally:
            stop.set()
            thread.join()
        name = "usearch_f16" if storage == "f16" else "numpy_f32"
        result[f"{name}_{size // 1000}k_k10"] = timing
    return result


def bench_persist(data: npt.NDArray[np.float32], dimension: int) -> dict[str, Any]:
    identity = EmbeddingIdentity("bench", "random", dimension)
    index = _build(data, "f16")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "bench.vec"
        began = time.perf_counter()
        save_index(path, identity, index)
        publish = time.perf_counter() - began
        began = time.perf_counter()
        loaded = load_index(path, identity)
        load = time.perf_counter() - began
        size = path.stat().st_size
    assert len(loaded) == len(index)
    return {
        "rows": len(index),
        "file_mb": round(size / 2**20, 1),
        "publish_ms": round(publish * 1e3, 1),
        "load_ms": round(load * 1e3, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dimension", type=int, default=384)
    args = parser.parse_args()
    rng = np.random.default_rng(SEED)
    data = _unit_rows(rng, args.rows, args.dimension)
    queries = _unit_rows(rng, 64, args.dimension)
    report = {
        "rows": args.rows,
        "dimension": args.dimension,
        "seed": SEED,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "usearch": usearch.__version__,
        "cpus": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "upsert": bench_upsert(data),
        "search": bench_search(data, queries),
        "search_beside_busy_thread": bench_busy_neighbour(data, queries),
        "persist": bench_persist(data, args.dimension),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
