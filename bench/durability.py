"""What ``synchronous=FULL`` costs: ingest under the NORMAL default and under
``synchronous_full``, and forget (FULL either way), measured on this machine.

For each mode a fresh data directory is opened (hashing embedder, extraction held back
so only the measured writes compete for the writer) and:

* ``ingest_ms``: ``--ingests`` single-turn ingests, one after another (each its own
  commit), latency summary, and ``ingest_turns_per_s`` over them;
* ``batch_turns_per_s``: ``--batches`` ingests of ``--batch`` turns each;
* ``forget_ms``: ``--forgets`` remembered claims forgotten one after another (each a
  FULL commit whatever the mode, plus the scrub it wakes, which runs beside);
* ``wal_syncs_per_ingest`` / ``wal_syncs_per_forget``: the WAL ``xSync`` calls of one
  commit, counted through the fault VFS shim on a short separate run (the shim's
  Python calls would distort the timings, so they are not timed).

The data directory's file system is reported: on tmpfs an fsync costs nothing.

    python bench/durability.py [--ingests 300] [--batches 20] [--batch 20] [--forgets 60]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
import trio
from bench_support import load, summary

from cairn import MemoryConfig, open_memory
from cairn.domain.evidence import Turn
from cairn.domain.ids import EventId, SessionId
from cairn.runtime.core import runtime_core
from cairn.stress.vfs import Call, FaultVFS, FileKind
from cairn.testing import FixedDomainClock, HashingEmbedder

AT = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)
# Extraction waits for a full batch it never gets: only the measured writes commit.
CONFIG = MemoryConfig(
    recall_wait_s=30.0,
    embed_linger_s=0.001,
    extraction_linger_s=3600.0,
    rules_linger_s=3600.0,
    extraction_batch=100_000,
    maintenance_interval_s=3600.0,
)


def _turn(number: int) -> Turn:
    return Turn(
        EventId(f"t{number}"),
        SessionId("s1"),
        "user",
        f"Note {number}: the shelf in room {number % 97} holds box {number * 7}.",
        AT,
        "Ana",
    )


def _file_system(path: Path) -> str:
    result = subprocess.run(
        ["stat", "-f", "-c", "%T", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() or "unknown"


async def _measure(
    root: Path, args: argparse.Namespace, *, full: bool
) -> dict[str, Any]:
    config = attrs.evolve(CONFIG, synchronous_full=full)
    async with open_memory(
        root, config, clock=FixedDomainClock(), embedder=HashingEmbedder()
    ) as memory:
        await memory.ingest("a", [_turn(-1)])  # agent started, warm
        latencies: list[float] = []
        started = time.perf_counter()
        for number in range(args.ingests):
            begin = time.perf_counter()
            await memory.ingest("a", [_turn(number)])
            latencies.append((time.perf_counter() - begin) * 1000)
        single_s = time.perf_counter() - started
        started = time.perf_counter()
        base = args.ingests
        for batch in range(args.batches):
            turns = [_turn(base + batch * args.batch + i) for i in range(args.batch)]
            await memory.ingest("a", turns)
        batch_s = time.perf_counter() - started
        claims = []
        for number in range(args.forgets):
            stored = await memory.remember(
                "b", f"Cupboard {number} holds the blue jar {number}.", by="user"
            )
            claims.append(stored.claim_id)
        await runtime_core(memory).scrubber.wait_settled()
        forgets: list[float] = []
        for claim_id in claims:
            assert claim_id is not None
            begin = time.perf_counter()
            await memory.forget("b", claim_id)
            forgets.append((time.perf_counter() - begin) * 1000)
        await runtime_core(memory).scrubber.wait_settled()
    return {
        "ingest_ms": summary(latencies),
        "ingest_turns_per_s": round(args.ingests / single_s, 1),
        "batch_turns_per_s": round(args.batches * args.batch / batch_s, 1),
        "forget_ms": summary(forgets),
    }


async def _syncs(root: Path, *, full: bool) -> dict[str, float]:
    """WAL syncs of one ingest commit and of one forget commit, through the shim."""
    vfs = FaultVFS("cairn-durability-bench")
    try:
        config = attrs.evolve(CONFIG, synchronous_full=full, vfs=vfs.name)
        async with open_memory(
            root, config, clock=FixedDomainClock(), embedder=HashingEmbedder()
        ) as memory:
            await memory.ingest("a", [_turn(-1)])
            await memory.wait_idle("a")
            before = vfs.count(Call.SYNC, FileKind.WAL)
            for number in range(10):
                await memory.ingest("a", [_turn(number)])
            ingest = (vfs.count(Call.SYNC, FileKind.WAL) - before) / 10
            stored = await memory.remember("b", "The red jar is empty.", by="user")
            scrubber = runtime_core(memory).scrubber
            await scrubber.wait_settled()
            # Counted up to the scrubber's first step: the forget's own commit only.
            counted: list[int] = []
            scrubber.observer = lambda _step: counted.append(
                vfs.count(Call.SYNC, FileKind.WAL)
            )
            before = vfs.count(Call.SYNC, FileKind.WAL)
            assert stored.claim_id is not None
            await memory.forget("b", stored.claim_id)
            await scrubber.wait_settled()
            scrubber.observer = None
            forget = (
                counted[0] if counted else vfs.count(Call.SYNC, FileKind.WAL)
            ) - before
        return {"wal_syncs_per_ingest": ingest, "wal_syncs_per_forget": float(forget)}
    finally:
        vfs.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ingests", type=int, default=300)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--forgets", type=int, default=60)
    parser.add_argument("--dir", type=Path, default=None, help="where to put the data")
    args = parser.parse_args()
    parent = args.dir or Path(tempfile.gettempdir())
    results: dict[str, Any] = {
        "file_system": _file_system(parent),
        "cpus": os.cpu_count(),
        "load_before": load(),
    }
    with tempfile.TemporaryDirectory(dir=parent) as scratch:
        for name, full in (("normal", False), ("full", True)):
            results[name] = await _measure(Path(scratch) / name, args, full=full)
            results[name].update(
                await _syncs(Path(scratch) / f"{name}-syncs", full=full)
            )
    normal, full = results["normal"], results["full"]
    results["full_over_normal_ingest_p50"] = round(
        full["ingest_ms"]["p50"] / max(normal["ingest_ms"]["p50"], 1e-9), 2
    )
    results["load_after"] = load()
    json.dump(results, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    trio.run(main)
