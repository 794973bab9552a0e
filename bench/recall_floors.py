"""cairn's recall beside its floors, on one corpus in one run, quiet and beside a neighbour.

For each size the corpus of ``bench/recall_latency.py`` (synthetic claims, each with an
evidence turn and its stored vector, Zipf vocabulary, a third of the turns naming
someone) is loaded into one agent, the directory reopened (the projection rebuilt from
the stored blobs), and the same questions are timed four ways:

* ``engine``: ``Memory.recall`` with the query vector given (no embedding);
* ``end_to_end``: ``Memory.recall`` with the embedded model embedding the query;
* ``fts5``: the bare SQLite floor, one ``event_fts MATCH`` of all the question's terms
  (OR, namespaced as cairn indexes them) ranked by bm25, ``LIMIT 50``, on a connection
  of its own to the same file;
* ``numpy_scan``: the bare vector floor, an exact f32 scan of the same vectors
  (``matrix @ query`` and an ``argpartition`` for the top 50) with numpy's BLAS, as
  the engine's projection scans.

``ratios`` divides cairn's figures by the floors' (``engine`` by ``fts5 + numpy_scan``).
With ``--neighbour N`` (default 1) the engine and end-to-end timings are taken again
while N CPU-bound processes run beside (a busy loop each), and ``contention`` gives the
loaded p95 over the quiet p95: the contention ratio, taken in one run.

    python bench/recall_floors.py [--claims 10000 100000 1000000] [--queries 150]
                                  [--neighbour 1] [--seed 7]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
import numpy as np
import trio
from bench_support import load, summary
from recall_latency import AGENT, bulk_load, question, vocabulary

from cairn import MemoryConfig, open_memory
from cairn.runtime.core import runtime_core
from cairn.runtime.memory import DATABASE_NAME
from cairn.runtime.threads import run_in_thread
from cairn.store.fts import namespace, query_terms, quote_term
from cairn.testing import FixedDomainClock
from cairn.vectors.codec import decode_vectors

if TYPE_CHECKING:
    from collections.abc import Iterator
    from multiprocessing.synchronize import Event

TOP = 50
DIMENSION = 384


def _busy(running: Event, seconds: float) -> None:
    running.set()
    end = time.monotonic() + seconds
    spins = 0
    while time.monotonic() < end:
        spins += 1


@contextlib.contextmanager
def neighbours(count: int, seconds: float = 3600.0) -> Iterator[None]:
    """``count`` CPU-bound processes running beside the block (each in its loop before
    the block starts)."""
    started = [multiprocessing.Event() for _ in range(count)]
    processes = [
        multiprocessing.Process(target=_busy, args=(event, seconds), daemon=True)
        for event in started
    ]
    for process in processes:
        process.start()
    for event in started:
        event.wait(timeout=30)
    try:
        yield
    finally:
        for process in processes:
            process.terminate()
            process.join()


def _fts_floor(database: Path, questions: list[str]) -> list[float]:
    connection = apsw.Connection(str(database), flags=apsw.SQLITE_OPEN_READONLY)
    prefix = namespace(AGENT)
    timings = []
    try:
        for text in questions:
            terms = [quote_term(prefix + term) for term in query_terms(text)]
            if not terms:
                continue
            started = time.perf_counter()
            list(
                connection.execute(
                    "SELECT rowid FROM event_fts WHERE event_fts MATCH ?"
                    " ORDER BY rank LIMIT ?",
                    (" OR ".join(terms), TOP),
                )
            )
            timings.append((time.perf_counter() - started) * 1000)
    finally:
        connection.close()
    return timings


def _scan_floor(database: Path, vectors: np.ndarray) -> tuple[list[float], int]:
    connection = apsw.Connection(str(database), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        blobs = [
            bytes(row[0])
            for row in connection.execute(
                "SELECT vector FROM embeddings WHERE agent_id = ?", (AGENT,)
            )
        ]
    finally:
        connection.close()
    matrix = decode_vectors(blobs, DIMENSION).astype(np.float32)
    timings = []
    for query in vectors:
        started = time.perf_counter()
        scores = matrix @ query
        top = np.argpartition(scores, -TOP)[-TOP:]
        top[np.argsort(scores[top])[::-1]]
        timings.append((time.perf_counter() - started) * 1000)
    return timings, int(matrix.shape[0])


async def _recalls(
    memory: Any, questions: list[str], vectors: np.ndarray, end_to_end: int
) -> tuple[list[float], list[float]]:
    engine, embedded = [], []
    for text, vector in zip(questions, vectors, strict=True):
        started = time.perf_counter()
        await memory.recall(AGENT, text, query_vector=vector)
        engine.append((time.perf_counter() - started) * 1000)
    for text in questions[:end_to_end]:
        started = time.perf_counter()
        await memory.recall(AGENT, text)
        embedded.append((time.perf_counter() - started) * 1000)
    return engine, embedded


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if not numerator or not denominator:
        return None
    return round(numerator / denominator, 2)


async def measure(n: int, queries: int, seed: int, neighbour: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    words = vocabulary(rng)
    config = MemoryConfig(recall_wait_s=60.0, maintenance_interval_s=3600)
    result: dict[str, Any] = {"claims": n, "queries": queries, "load_start": load()}
    with tempfile.TemporaryDirectory(prefix="cairn-floors-") as directory:
        clock = FixedDomainClock(dt.datetime(2026, 1, 2, tzinfo=dt.UTC))
        async with open_memory(directory, config, clock=clock) as memory:
            started = time.perf_counter()
            await run_in_thread(
                lambda: bulk_load(memory, n, rng, words, DIMENSION),
                limiter=runtime_core(memory).limiters.store_write,
            )
            result["bulk_load_s"] = round(time.perf_counter() - started, 2)
        questions = [text for _, text in (question(rng, words) for _ in range(queries))]
        vectors = rng.standard_normal((queries, DIMENSION)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        end_to_end = max(20, queries // 3)
        async with open_memory(directory, config, clock=clock) as memory:
            await memory.recall(AGENT, "warm up the reader and the embedder")
            engine, embedded = await _recalls(memory, questions, vectors, end_to_end)
            result["engine_ms"] = summary(engine)
            result["end_to_end_ms"] = summary(embedded)
            if neighbour:
                with neighbours(neighbour):
                    loaded = await _recalls(memory, questions, vectors, end_to_end)
                result["with_neighbour"] = {
                    "processes": neighbour,
                    "engine_ms": summary(loaded[0]),
                    "end_to_end_ms": summary(loaded[1]),
                }
        database = Path(directory) / DATABASE_NAME
        limiter = trio.CapacityLimiter(1)
        result["fts5_ms"] = summary(
            await run_in_thread(
                lambda: _fts_floor(database, questions), limiter=limiter
            )
        )
        scan, rows = await run_in_thread(
            lambda: _scan_floor(database, vectors), limiter=limiter
        )
        result["numpy_scan_ms"] = summary(scan)
        result["vectors"] = rows
    floor = {
        q: result["fts5_ms"][q] + result["numpy_scan_ms"][q] for q in ("p50", "p95")
    }
    result["ratios"] = {
        "engine_over_floors_p50": _ratio(result["engine_ms"]["p50"], floor["p50"]),
        "engine_over_floors_p95": _ratio(result["engine_ms"]["p95"], floor["p95"]),
        "engine_over_scan_p50": _ratio(
            result["engine_ms"]["p50"], result["numpy_scan_ms"]["p50"]
        ),
        "engine_over_fts5_p50": _ratio(
            result["engine_ms"]["p50"], result["fts5_ms"]["p50"]
        ),
    }
    if neighbour:
        loaded = result["with_neighbour"]
        result["contention"] = {
            "engine_p95": _ratio(
                loaded["engine_ms"]["p95"], result["engine_ms"]["p95"]
            ),
            "end_to_end_p95": _ratio(
                loaded["end_to_end_ms"]["p95"], result["end_to_end_ms"]["p95"]
            ),
        }
    result["load_end"] = load()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--claims", type=int, nargs="+", default=[10_000, 100_000, 1_000_000]
    )
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--neighbour", type=int, default=1)
    parser.add_argument("--seed", type=int, default=7)
    arguments = parser.parse_args()
    for n in arguments.claims:
        json.dump(
            trio.run(
                measure, n, arguments.queries, arguments.seed, arguments.neighbour
            ),
            sys.stdout,
        )
        print(flush=True)


if __name__ == "__main__":
    main()
