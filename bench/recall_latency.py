"""Recall latency and event-loop lag at scale, plus persisted ingest throughput.

Loads N synthetic claims (with one evidence turn each, Zipf-distributed vocabulary so some
query terms are very common, every turn said by Ana and about a third naming one of 200
people) into one agent, with the entity mentions the offline rules read from each turn, with synthetic unit vectors stored under the
embedded embedder's identity for every evidence turn (claims are found through the vectors
of the turns they cite; the projection is rebuilt from those blobs, as after a
restart). Then measures:

* ``engine``: recall with the query vector given (no embedding) p50/p95/p99; half the
  questions name Ana (the speaker of every turn: the entity lists' worst case), a quarter
  one of the named people (``engine_ms_by_question``: speaker, named, plain);
* ``end_to_end``: recall including the embedded embedder's query embedding;
* event-loop lag p99 while recalls and while ingests run;
* persisted ingest: turns/s through ``Memory.ingest`` (evidence + FTS committed; extraction
  and embedding follow in the background and are not counted).

    python bench/recall_latency.py --claims 10000 100000 [--queries 200]
                                   [--without-analysis]

``--without-analysis`` measures each size twice, the second time with the query
analysis's lists off (``analysis: false``): the same seed gives the same data and
questions, so the two lines are the cost of the entity-centred sources.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from functools import partial
from typing import Any

import numpy as np
import trio

from cairn import MemoryConfig, Turn, open_memory
from cairn.domain.claim import ClaimDraft, ClaimKind, SourceSpan
from cairn.domain.evidence import Role
from cairn.domain.ids import AgentId, EventId
from cairn.entities.extract import mentions_in
from cairn.ingestion.intake import prepare_turns
from cairn.runtime.core import runtime_core
from cairn.runtime.threads import run_in_thread
from cairn.store.claims import insert_claims
from cairn.store.embeddings import store_embeddings
from cairn.store.entities import record_mentions
from cairn.store.evidence import insert_events
from cairn.store.extraction_state import ExtractionState
from cairn.testing import FixedDomainClock, HashingEmbedder
from cairn.vectors.codec import encode_vector
from cairn.vectors.keys import EmbedTarget

AGENT = AgentId("bench")
CHUNK = 5_000


def vocabulary(rng: np.random.Generator, size: int = 8_000) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters, rng.integers(3, 10))))
    return sorted(words)


NAMES = [
    f"{first}{second}"
    for first in ("Al", "Be", "Cy", "Di", "Ed", "Fa", "Gu", "Ho", "Iv", "Jo")
    for second in (
        "bert",
        "nora",
        "rus",
        "ane",
        "win",
        "tima",
        "stav",
        "ward",
        "ana",
        "seph",
        "lia",
        "ric",
        "dith",
        "mar",
        "ton",
        "sha",
        "vin",
        "lyn",
        "dora",
        "mund",
    )
]


def named(rng: np.random.Generator, text: str) -> str:
    """A third of the turns name someone."""
    if rng.random() < 1 / 3:
        return f"{text} with {NAMES[int(rng.integers(len(NAMES)))]}"
    return text


def question(rng: np.random.Generator, words: list[str]) -> tuple[str, str]:
    """A question and its kind: naming the speaker, naming someone, naming no one."""
    text = sentence(rng, words, int(rng.integers(3, 7)))
    draw = rng.random()
    if draw < 0.5:
        return "speaker", f"What did Ana say about {text}?"
    if draw < 0.75:
        return "named", f"What about {NAMES[int(rng.integers(len(NAMES)))]} and {text}?"
    return "plain", text


def sentence(rng: np.random.Generator, words: list[str], length: int) -> str:
    # Zipf ranks: a few words are in a large share of texts, most are rare.
    ranks = np.minimum(rng.zipf(1.3, length), len(words)) - 1
    return " ".join(words[r] for r in ranks)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 3)


def summary(values_ms: list[float]) -> dict[str, float]:
    return {
        "p50": percentile(values_ms, 0.5),
        "p95": percentile(values_ms, 0.95),
        "p99": percentile(values_ms, 0.99),
    }


class LagProbe:
    """Measures how late a 1 ms trio sleep wakes up: the event loop's responsiveness."""

    def __init__(self) -> None:
        self.samples_ms: list[float] = []
        self.active = False

    async def run(self) -> None:
        while True:
            started = time.perf_counter()
            await trio.sleep(0.001)
            if self.active:
                self.samples_ms.append((time.perf_counter() - started - 0.001) * 1000)


def bulk_load(
    memory: Any, n: int, rng: np.random.Generator, words: list[str], dim: int
) -> None:
    """Synthetic claims straight through the store functions, in large transactions."""
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    identity = memory.embedder.identity
    for start in range(0, n, CHUNK):
        turns = [
            Turn(
                f"t{i}", "s1", "user", named(rng, sentence(rng, words, 14)), now, "Ana"
            )
            for i in range(start, min(n, start + CHUNK))
        ]
        # As the engine does: evidence turns carry vectors, claims are found through them.
        vectors = rng.standard_normal((len(turns), dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)

        def load(
            connection: Any, turns: list[Turn] = turns, vectors: Any = vectors
        ) -> None:
            results = insert_events(connection, AGENT, prepare_turns(turns, 2400), now)
            rowids = {r.event_id: r.rowid for r in results}
            drafts = [
                ClaimDraft(
                    ClaimKind.FACT,
                    f"Ana {turn.text[: 60 + len(turn.text) % 20]}",
                    (SourceSpan(EventId(turn.event_id), 0, min(10, len(turn.text))),),
                )
                for turn in turns
            ]
            insert_claims(connection, AGENT, drafts, rowids, now)
            record_mentions(
                connection,
                AGENT,
                [
                    (
                        rowids[turn.event_id],
                        tuple(mentions_in(turn.text, turn.speaker, Role.USER)),
                    )
                    for turn in turns
                ],
                now,
            )
            connection.execute(
                "UPDATE events SET extracted = ? WHERE agent_id = ?",
                (ExtractionState.EXTRACTED.value, AGENT),
            )
            rows = [
                (EmbedTarget.EVENT, rowid, encode_vector(v))
                for rowid, v in zip(rowids.values(), vectors, strict=False)
            ]
            store_embeddings(connection, AGENT, identity, rows)

        with runtime_core(memory).database.writer:
            load(runtime_core(memory).database.writer)


# The query analysis's lists off and no off-focus weight: recall as before entities.
WITHOUT_ANALYSIS = {
    "weight_entity_lexical": 0.0,
    "weight_entity_vector": 0.0,
    "weight_entity_mention": 0.0,
    "weight_entity_graph": 0.0,
    "weight_current_state": 0.0,
    "weight_time_window": 0.0,
    "off_focus_weight": 1.0,
}


async def measure(
    n: int, queries: int, seed: int, *, analysis: bool = True
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    words = vocabulary(rng)
    config = MemoryConfig(
        recall_wait_s=60.0,
        maintenance_interval_s=3600,
        **({} if analysis else WITHOUT_ANALYSIS),  # type: ignore[arg-type]
    )
    result: dict[str, Any] = {"claims": n, "analysis": analysis}
    with tempfile.TemporaryDirectory(prefix="cairn-latency-") as directory:
        clock = FixedDomainClock(dt.datetime(2026, 1, 2, tzinfo=dt.UTC))
        async with open_memory(directory, config, clock=clock) as memory:
            started = time.perf_counter()
            await run_in_thread(
                lambda: bulk_load(
                    memory, n, rng, words, memory.embedder.identity.dimension
                ),
                limiter=runtime_core(memory).limiters.store_write,
            )
            result["bulk_load_s"] = round(time.perf_counter() - started, 2)
        # Reopen: the projection is rebuilt from the stored blobs at warm-up.
        async with (
            open_memory(directory, config, clock=clock) as memory,
            trio.open_nursery() as nursery,
        ):
            probe = LagProbe()
            nursery.start_soon(probe.run)
            await memory.recall(AGENT, "warm up the reader and the embedder")
            asked = [question(rng, words) for _ in range(queries)]
            texts = [text for _, text in asked]
            vectors = rng.standard_normal((queries, 384)).astype(np.float32)
            engine: list[float] = []
            end_to_end: list[float] = []
            by_kind: dict[str, list[float]] = {}
            probe.active = True
            for (kind, text), vector in zip(asked, vectors, strict=False):
                started = time.perf_counter()
                await memory.recall(AGENT, text, query_vector=vector)
                engine.append((time.perf_counter() - started) * 1000)
                by_kind.setdefault(kind, []).append(engine[-1])
            for text in texts[: max(20, queries // 4)]:
                started = time.perf_counter()
                await memory.recall(AGENT, text)
                end_to_end.append((time.perf_counter() - started) * 1000)
            probe.active = False
            result["engine_ms"] = summary(engine)
            result["engine_ms_by_question"] = {
                kind: summary(values) for kind, values in sorted(by_kind.items())
            }
            result["end_to_end_ms"] = summary(end_to_end)
            result["loop_lag_during_recall_ms"] = summary(probe.samples_ms)
            nursery.cancel_scope.cancel()
    result.update(await _persisted_ingest(config, rng, words))
    return result


async def _persisted_ingest(
    config: MemoryConfig, rng: np.random.Generator, words: list[str]
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    # Hashing runs in a worker thread under the runtime's own limiters, as the embedded
    # embedder's document batches do.
    limiters: list[Any] = []
    # Persisted ingest through the public API, in batches of 500 turns, into a fresh
    # directory. Embedding is excluded from this figure; the fast hashing embedder keeps
    # the background work (extraction, embedding) short so the run drains quickly.
    with tempfile.TemporaryDirectory(prefix="cairn-ingest-") as directory:
        clock = FixedDomainClock(dt.datetime(2026, 1, 2, tzinfo=dt.UTC))
        async with (
            open_memory(
                directory,
                config,
                clock=clock,
                embedder=HashingEmbedder(
                    run_in_thread=lambda function: run_in_thread(
                        function,
                        limiter=limiters[0].cpu,
                        background=limiters[0].background,
                    )
                ),
            ) as memory,
            trio.open_nursery() as nursery,
        ):
            limiters.append(runtime_core(memory).limiters)
            probe = LagProbe()
            nursery.start_soon(probe.run)
            now = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
            batch_turns = [
                [
                    Turn(
                        f"i{b}-{i}", "s2", "user", sentence(rng, words, 14), now, "Ana"
                    )
                    for i in range(500)
                ]
                for b in range(20)
            ]
            probe.active = True
            started = time.perf_counter()
            for turns in batch_turns:
                await memory.ingest(AGENT, turns)
            elapsed = time.perf_counter() - started
            probe.active = False
            result["ingest_turns_per_s"] = round(10_000 / elapsed)
            await memory.wait_idle(AGENT)
            result["loop_lag_during_ingest_ms"] = summary(probe.samples_ms)
            nursery.cancel_scope.cancel()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--without-analysis",
        action="store_true",
        help="also measure with the query analysis's lists off (same data and queries)",
    )
    arguments = parser.parse_args()
    for n in arguments.claims:
        modes = (True, False) if arguments.without_analysis else (True,)
        for analysis in modes:
            json.dump(
                trio.run(
                    partial(measure, analysis=analysis),
                    n,
                    arguments.queries,
                    arguments.seed,
                ),
                sys.stdout,
            )
            print(flush=True)


if __name__ == "__main__":
    main()
