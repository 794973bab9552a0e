"""What the durable recall record costs: recall latency with the record written before the
answer returns, against the same recall answered without it, interleaved in one process
(so machine load hits both alike), and the record write alone.

Uses the deterministic hashing embedder over ``--turns`` synthetic turns (as
bench/ipc_latency.py). ``without`` calls the supervisor's answer step directly (what
``recall`` did before records existed); ``with`` is ``Memory.recall``. The concurrent part
runs ``--tasks`` recall loops for ``--seconds``, four alternating rounds each way.

    python bench/recall_record_cost.py [--turns 2000] [--queries 300] [--tasks 8]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import trio

from cairn import MemoryConfig, Turn, open_memory
from cairn.domain.scope import RecallContext
from cairn.runtime.contributions import encode_manifest
from cairn.runtime.core import runtime_core
from cairn.runtime.recall import RecallPlan
from cairn.runtime.writes import RecordRecall
from cairn.serde.recall import recall_to_bytes
from cairn.testing import FixedDomainClock, HashingEmbedder

AGENT = "bench"
TOPICS = ["tea", "hiking", "cello", "Lisbon", "bonsai", "ramen", "chess", "sailing"]
CONFIG = MemoryConfig(recall_wait_s=30.0)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 3)


def summary(values_ms: list[float]) -> dict[str, float]:
    return {
        "p50": percentile(values_ms, 0.5),
        "p99": percentile(values_ms, 0.99),
        "mean": round(sum(values_ms) / len(values_ms), 3),
    }


def question(i: int) -> str:
    return f"what about {TOPICS[i % len(TOPICS)]} number {i % 97}?"


async def measure(
    data_dir: Path, turns: int, count: int, tasks: int, seconds: float
) -> dict[str, Any]:
    async with open_memory(
        data_dir, CONFIG, clock=FixedDomainClock(), embedder=HashingEmbedder()
    ) as memory:
        batch = [
            Turn(
                f"t{i}",
                f"s{i // 50}",
                "user",
                f"I like {TOPICS[i % len(TOPICS)]} and tried number {i % 97} today.",
                speaker="Ana",
            )
            for i in range(turns)
        ]
        for start in range(0, turns, 500):
            await memory.ingest(AGENT, batch[start : start + 500])
        await memory.wait_idle(AGENT)
        supervisor = await runtime_core(memory).registry.get(AGENT)
        config = runtime_core(memory).config

        def plan(i: int) -> RecallPlan:
            return RecallPlan(
                question(i), RecallContext(), config.recall_k, config.budget_bytes
            )

        async def without(i: int) -> None:
            await supervisor._answer(plan(i), 30.0)  # noqa: SLF001 - the step before records

        async def with_record(i: int) -> None:
            await memory.recall(AGENT, question(i))

        for i in range(20):  # warm-up
            await with_record(i)
            await without(i)
        timings: dict[str, list[float]] = {"without": [], "with": [], "write": []}
        # The write alone, with a real answer's size (text and manifest).
        answer = await memory.recall(AGENT, question(0))
        payload, manifest = recall_to_bytes(answer), encode_manifest(answer.manifest)
        for i in range(count):
            for name, step in (("without", without), ("with", with_record)):
                started = time.perf_counter()
                await step(i)
                timings[name].append((time.perf_counter() - started) * 1000)
            request = RecordRecall(
                uuid.uuid4().hex, None, None, "ok", manifest, payload, 0, keep=1000
            )
            started = time.perf_counter()
            await supervisor.commit(request)
            timings["write"].append((time.perf_counter() - started) * 1000)

        async def sustained(step: Any) -> float:
            done = [0] * tasks

            async def loop(index: int) -> None:
                position = index
                with trio.move_on_after(seconds):
                    while True:
                        await step(position)
                        done[index] += 1
                        position += tasks

            started = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for index in range(tasks):
                    nursery.start_soon(loop, index)
            return round(sum(done) / (time.perf_counter() - started), 1)

        # Alternating rounds, so a change in machine load hits both sides alike.
        rounds: dict[str, list[float]] = {"without": [], "with": []}
        for _ in range(4):
            rounds["without"].append(await sustained(without))
            rounds["with"].append(await sustained(with_record))
        per_s = {name: round(sum(v) / len(v), 1) for name, v in rounds.items()}
    without_ms, with_ms = summary(timings["without"]), summary(timings["with"])
    return {
        "turns": turns,
        "queries": count,
        "recall_ms": {"without_record": without_ms, "with_record": with_ms},
        "with_over_without": {
            "p50": round(with_ms["p50"] / without_ms["p50"], 3),
            "mean": round(with_ms["mean"] / without_ms["mean"], 3),
        },
        "record_write_ms": summary(timings["write"]),
        "sustained_requests_per_s": {"tasks": tasks, **per_s},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3.0)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cairn-bench-") as directory:
        result = trio.run(
            measure,
            Path(directory) / "data",
            arguments.turns,
            arguments.queries,
            arguments.tasks,
            arguments.seconds,
        )
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
