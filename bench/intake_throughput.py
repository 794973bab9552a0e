"""Intake throughput: turns per second accepted by ``Memory.ingest``; prints JSON.

Usage: ``python bench/intake_throughput.py [--turns N] [--batch B]``. One agent, 50
sessions, calls of ``--batch`` turns each, the embedded runtime with the deterministic
hashing embedder (so the model's speed does not enter), a fresh data directory. The time
is from the first call to the last answer: redaction, identifier screening, the
tombstone probes and the commit, with extraction and embedding running beside it as in
production.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
import time
from pathlib import Path

import trio

from cairn import MemoryConfig, Turn, open_memory
from cairn.domain.ids import EventId, SessionId
from cairn.testing import FixedDomainClock, HashingEmbedder

AT = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)


async def _run(turns: int, batch: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as directory:
        async with open_memory(
            Path(directory),
            MemoryConfig(),
            clock=FixedDomainClock(),
            embedder=HashingEmbedder(),
        ) as memory:
            items = [
                Turn(
                    EventId(f"e{i}"),
                    SessionId(f"s{i % 50}"),
                    "user",
                    f"Turn {i}: I visited museum number {i} with my friend and liked it.",
                    AT,
                    "Ana",
                )
                for i in range(turns)
            ]
            start = time.perf_counter()
            for first in range(0, turns, batch):
                await memory.ingest("a", items[first : first + batch])
            elapsed = time.perf_counter() - start
    return {
        "turns": turns,
        "batch": batch,
        "seconds": round(elapsed, 2),
        "turns_per_s": round(turns / elapsed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=100)
    arguments = parser.parse_args()
    print(json.dumps(trio.run(_run, arguments.turns, arguments.batch)))


if __name__ == "__main__":
    main()
