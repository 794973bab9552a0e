"""How fast a forget's text leaves the disk, and what the scrub costs other writes.

Agent ``A`` holds ``--claims`` synthetic claims, bulk-loaded through the store functions
(the runtime closed meanwhile). After a reopen, ``--wal-claims`` more are remembered
through the API so the WAL holds that many transactions' pages, then one claim is
forgotten while single remembers are written to agent ``B`` at a steady pace (one every
``--interval-s``, each its own task). Reported:

* ``forget_to_settled_ms``: the forget call returning → nothing owed any more;
* ``purge_ms``, ``checkpoint_ms``: the scrubber's steps (FTS ``optimize`` of the whole
  claim index; PASSIVE from a reader then TRUNCATE on the writer), and
  ``passive_reader_ms``, the copy beside writes, and ``truncate_writer_ms``, the part
  that held the write limiter;
* ``wal_bytes_before``: the WAL's size when the forget returned;
* ``remember_ms`` of ``B`` before the forget and while the scrub ran, and the event-loop
  lag (a 1 ms trio sleep's lateness) in both;
* ``probe_us``: the cost of the owed-work probe every agent write now runs.

    python bench/forget_scrub.py [--claims 100000] [--wal-claims 3000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import trio
from bench_support import load, summary

import cairn.runtime.database as database_module
from cairn import MemoryConfig, open_memory
from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.domain.ids import AgentId
from cairn.runtime.core import runtime_core
from cairn.store.agents import ensure_agent
from cairn.store.claims import insert_claims
from cairn.store.connection import open_connection
from cairn.store.embeddings import store_embeddings
from cairn.store.fts_purge import scrub_owed
from cairn.testing import FixedDomainClock, HashingEmbedder
from cairn.vectors.codec import encode_vector
from cairn.vectors.keys import EmbedTarget

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
CHUNK = 5_000


def populate(db: Path, claims: int, embedder: HashingEmbedder) -> None:
    """Bulk claims of A with their vectors stored (so the warm-up embeds nothing)."""
    connection = open_connection(db)
    vector = encode_vector(np.ones(embedder.dimension, dtype=np.float32) / 16)
    try:
        for start in range(0, claims, CHUNK):
            with connection:
                ensure_agent(connection, AgentId("A"), NOW)
                drafts = [
                    ClaimDraft(
                        ClaimKind.FACT, f"Bulk fact {n} about topic{n % 997} here.", ()
                    )
                    for n in range(start, min(claims, start + CHUNK))
                ]
                committed = insert_claims(connection, AgentId("A"), drafts, {}, NOW)
                store_embeddings(
                    connection,
                    AgentId("A"),
                    embedder.identity,
                    [
                        (EmbedTarget.CLAIM, rowid, vector)
                        for rowid, _ in committed.inserted
                    ],
                )
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        connection.close()


def probe_cost_us(db: Path) -> float:
    connection = open_connection(db)
    try:
        rounds = 20_000
        started = time.perf_counter()
        for _ in range(rounds):
            scrub_owed(connection)
        return round((time.perf_counter() - started) / rounds * 1e6, 2)
    finally:
        connection.close()


async def lag_monitor(samples: list[float], stop: trio.Event) -> None:
    while not stop.is_set():
        started = trio.current_time()
        await trio.sleep(0.001)
        samples.append((trio.current_time() - started - 0.001) * 1000)


async def paced_remembers(
    memory: Any, latencies: list[float], stop: trio.Event, interval_s: float
) -> None:
    async def one(n: int) -> None:
        started = time.perf_counter()
        await memory.remember("B", f"Paced memory number {n} of agent B.", by="user")
        latencies.append((time.perf_counter() - started) * 1000)

    async with trio.open_nursery() as nursery:
        n = 0
        while not stop.is_set():
            nursery.start_soon(one, n)
            n += 1
            await trio.sleep(interval_s)


async def phase(
    memory: Any, interval_s: float, body: Any
) -> tuple[list[float], list[float], Any]:
    latencies: list[float] = []
    lags: list[float] = []
    stop = trio.Event()
    result: list[Any] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lag_monitor, lags, stop)
        nursery.start_soon(paced_remembers, memory, latencies, stop, interval_s)
        result.append(await body())
        stop.set()
    return latencies, lags, result[0]


async def main(args: argparse.Namespace) -> dict[str, Any]:
    directory = Path(tempfile.mkdtemp(prefix="cairn-scrub-"))
    data_dir = directory / "data"
    data_dir.mkdir()
    db = data_dir / "cairn.db"
    embedder = HashingEmbedder()
    populate(db, args.claims, embedder)
    truncate_ms: list[float] = []
    passive_ms: list[float] = []
    # The two checkpoint steps, timed from inside (a bench may look behind the API).
    original = database_module._checkpoint  # noqa: SLF001

    def timed(connection: Any, mode: int) -> bool:
        started = time.perf_counter()
        try:
            return original(connection, mode)
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            if mode == database_module.apsw.SQLITE_CHECKPOINT_TRUNCATE:
                truncate_ms.append(elapsed)
            else:
                passive_ms.append(elapsed)

    database_module._checkpoint = timed  # type: ignore[assignment]  # noqa: SLF001
    config = MemoryConfig(maintenance_interval_s=3600, embed_linger_s=0.001)
    async with open_memory(
        data_dir, config, clock=FixedDomainClock(), embedder=embedder
    ) as memory:
        stored = await memory.remember(
            "A", "Zanzibarquokka is the secret word.", by="user"
        )
        for n in range(args.wal_claims):
            await memory.remember(
                "A", f"Fresh fact {n} about subject{n % 313}.", by="user"
            )
        await memory.remember("B", "Agent B exists.", by="user")
        await memory.wait_idle()
        scrubber = runtime_core(memory).scrubber
        marks: dict[str, float] = {}
        scrubber.observer = lambda step: marks.setdefault(step, time.perf_counter())

        async def idle() -> None:
            await trio.sleep(args.baseline_s)

        base_latency, base_lag, _ = await phase(memory, args.interval_s, idle)

        async def forget() -> dict[str, float]:
            before = scrubber.attempts
            await memory.forget("A", stored.claim_id)
            returned = time.perf_counter()
            wal = (data_dir / "cairn.db-wal").stat().st_size
            await scrubber.wait_attempts(before + 1)
            await scrubber.wait_settled()
            done = time.perf_counter()
            return {"returned": returned, "done": done, "wal": wal}

        scrub_latency, scrub_lag, times = await phase(memory, args.interval_s, forget)
    return {
        "claims": args.claims,
        "wal_claims": args.wal_claims,
        "load": load(),
        "wal_bytes_before": times["wal"],
        "forget_to_settled_ms": round((times["done"] - times["returned"]) * 1000, 1),
        "purge_ms": round((marks["checkpoint"] - marks["purge"]) * 1000, 1),
        "checkpoint_ms": round((marks["settle"] - marks["checkpoint"]) * 1000, 1),
        "passive_reader_ms": [round(value, 1) for value in passive_ms],
        "truncate_writer_ms": [round(value, 1) for value in truncate_ms],
        "remember_ms_idle": summary(base_latency),
        "remember_ms_during_scrub": summary(scrub_latency),
        "loop_lag_ms_idle": summary(base_lag),
        "loop_lag_ms_during_scrub": summary(scrub_lag),
        "probe_us": probe_cost_us(db),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--wal-claims", type=int, default=3_000)
    parser.add_argument("--interval-s", type=float, default=0.005)
    parser.add_argument("--baseline-s", type=float, default=1.0)
    json.dump(trio.run(main, parser.parse_args()), sys.stdout, indent=2)
    sys.stdout.write("\n")
