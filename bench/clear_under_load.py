"""Time to clear N claims of one agent, and recall latency of ANOTHER agent meanwhile.

Loads N synthetic claims (with stored claim vectors, so the vector phase has work) into
agent ``cleared`` and M claims with evidence into agent ``other``, reopens (projections
rebuilt from the stored blobs), then:

* ``baseline_other_recall_ms``: p50/p95 of ``other``'s recall with no clear running;
* ``clear_s``: wall time of ``Memory.clear("cleared")`` (durable job, 256-row batches,
  tombstones, FTS, lineage, vectors, FTS purge request);
* ``other_recall_during_clear_ms``: p50/p95 of ``other``'s recalls issued back to back
  while the clear runs, and the event-loop lag meanwhile;
* ``fts_purge_s``: the maintenance pass that rewrites the lexical index afterwards.

    python bench/clear_under_load.py --claims 100000 [--other 10000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from typing import Any

import numpy as np
import trio

from cairn import MemoryConfig, Turn, open_memory
from cairn.domain.claim import ClaimDraft, ClaimKind, SourceSpan
from cairn.domain.ids import AgentId, EventId
from cairn.ingestion.intake import prepare_turns
from cairn.runtime.core import runtime_core
from cairn.runtime.threads import run_in_thread
from cairn.store.agents import ensure_agent
from cairn.store.claims import insert_claims
from cairn.store.embeddings import store_embeddings
from cairn.store.evidence import insert_events
from cairn.store.extraction_state import ExtractionState
from cairn.testing import FixedDomainClock, HashingEmbedder
from cairn.vectors.codec import encode_vector
from cairn.vectors.keys import EmbedTarget

CLEARED = AgentId("cleared")
OTHER = AgentId("other")
CHUNK = 5_000
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def vocabulary(rng: np.random.Generator, size: int = 8_000) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters, rng.integers(3, 10))))
    return sorted(words)


def sentence(rng: np.random.Generator, words: list[str], length: int) -> str:
    ranks = np.minimum(rng.zipf(1.3, length), len(words)) - 1
    return " ".join(words[r] for r in ranks)


def summary(values_ms: list[float]) -> dict[str, float]:
    ordered = sorted(values_ms)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 3)

    return {"n": len(ordered), "p50": at(0.5), "p95": at(0.95), "max": at(1.0)}


def load_cleared(
    memory: Any, n: int, rng: np.random.Generator, words: list[str]
) -> None:
    identity = memory.embedder.identity
    connection = runtime_core(memory).database.writer
    for start in range(0, n, CHUNK):
        drafts = [
            ClaimDraft(ClaimKind.FACT, f"{sentence(rng, words, 12)} #{i}", ())
            for i in range(start, min(n, start + CHUNK))
        ]
        vectors = rng.standard_normal((len(drafts), identity.dimension)).astype(
            np.float32
        )
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with connection:
            ensure_agent(connection, CLEARED, NOW)
            committed = insert_claims(connection, CLEARED, drafts, {}, NOW)
            store_embeddings(
                connection,
                CLEARED,
                identity,
                [
                    (EmbedTarget.CLAIM, rowid, encode_vector(vector))
                    for (rowid, _), vector in zip(
                        committed.inserted, vectors, strict=True
                    )
                ],
            )


def load_other(memory: Any, n: int, rng: np.random.Generator, words: list[str]) -> None:
    identity = memory.embedder.identity
    connection = runtime_core(memory).database.writer
    for start in range(0, n, CHUNK):
        turns = [
            Turn(f"t{i}", "s1", "user", sentence(rng, words, 14), NOW, "Ana")
            for i in range(start, min(n, start + CHUNK))
        ]
        vectors = rng.standard_normal((len(turns), identity.dimension)).astype(
            np.float32
        )
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with connection:
            ensure_agent(connection, OTHER, NOW)
            results = insert_events(connection, OTHER, prepare_turns(turns, 2400), NOW)
            rowids = {r.event_id: r.rowid for r in results}
            drafts = [
                ClaimDraft(
                    ClaimKind.FACT,
                    f"Ana {turn.text[:70]}",
                    (SourceSpan(EventId(turn.event_id), 0, min(10, len(turn.text))),),
                )
                for turn in turns
            ]
            insert_claims(connection, OTHER, drafts, rowids, NOW)
            connection.execute(
                "UPDATE events SET extracted = ? WHERE agent_id = ?",
                (ExtractionState.EXTRACTED.value, OTHER),
            )
            store_embeddings(
                connection,
                OTHER,
                identity,
                [
                    (EmbedTarget.EVENT, rowid, encode_vector(vector))
                    for rowid, vector in zip(rowids.values(), vectors, strict=True)
                ],
            )


async def clear_while_recalling(
    memory: Any, nursery: trio.Nursery, texts: list[str]
) -> dict[str, Any]:
    """Clear CLEARED while OTHER recalls back to back; the loop-lag probe runs too."""
    during: list[float] = []
    lag: list[float] = []
    done = trio.Event()

    async def recall_loop() -> None:
        index = 0
        while not done.is_set():
            started = time.perf_counter()
            await memory.recall(OTHER, texts[index % len(texts)])
            during.append((time.perf_counter() - started) * 1000)
            index += 1

    async def lag_probe() -> None:
        while not done.is_set():
            started = time.perf_counter()
            await trio.sleep(0.001)
            lag.append((time.perf_counter() - started - 0.001) * 1000)

    nursery.start_soon(recall_loop)
    nursery.start_soon(lag_probe)
    started = time.perf_counter()
    report = await memory.clear(CLEARED)
    elapsed = time.perf_counter() - started
    done.set()
    return {
        "clear_s": round(elapsed, 2),
        "clear_claims_per_s": round(report.claims_deleted / elapsed),
        "claims_deleted": report.claims_deleted,
        "other_recall_during_clear_ms": summary(during),
        "loop_lag_during_clear_ms": summary(lag),
    }


async def measure(n: int, other: int, queries: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    words = vocabulary(rng)
    config = MemoryConfig(recall_wait_s=60.0, maintenance_interval_s=3600)
    result: dict[str, Any] = {"cleared_claims": n, "other_claims": other}
    limiters: list[Any] = []

    def embedder() -> HashingEmbedder:
        return HashingEmbedder(
            dimension=384,
            run_in_thread=lambda function: run_in_thread(
                function, limiter=limiters[-1].cpu, background=limiters[-1].background
            ),
        )

    with tempfile.TemporaryDirectory(prefix="cairn-clear-") as directory:
        clock = FixedDomainClock(NOW)
        async with open_memory(
            directory, config, clock=clock, embedder=embedder()
        ) as memory:
            limiters.append(runtime_core(memory).limiters)
            started = time.perf_counter()
            await run_in_thread(
                lambda: (
                    load_cleared(memory, n, rng, words),
                    load_other(memory, other, rng, words),
                ),
                limiter=runtime_core(memory).limiters.store_write,
            )
            result["bulk_load_s"] = round(time.perf_counter() - started, 2)
        async with (
            open_memory(directory, config, clock=clock, embedder=embedder()) as memory,
            trio.open_nursery() as nursery,
        ):
            limiters.append(runtime_core(memory).limiters)
            for agent in (CLEARED, OTHER):
                supervisor = await memory._supervisor(agent)  # noqa: SLF001 - bench
                await supervisor.slot.caught_up.wait()
            texts = [
                sentence(rng, words, int(rng.integers(3, 7))) for _ in range(queries)
            ]
            baseline = []
            for text in texts:
                started = time.perf_counter()
                await memory.recall(OTHER, text)
                baseline.append((time.perf_counter() - started) * 1000)
            result["baseline_other_recall_ms"] = summary(baseline)

            result.update(await clear_while_recalling(memory, nursery, texts))
            supervisor = await memory._supervisor(CLEARED)  # noqa: SLF001 - bench
            started = time.perf_counter()
            await supervisor.maintenance.run_pass()
            result["fts_purge_s"] = round(time.perf_counter() - started, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--other", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    arguments = parser.parse_args()
    result = trio.run(
        measure, arguments.claims, arguments.other, arguments.queries, arguments.seed
    )
    json.dump(result, sys.stdout)
    print(flush=True)


if __name__ == "__main__":
    main()
