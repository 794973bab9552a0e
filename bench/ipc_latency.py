"""IPC cost: recall round-trip latency over the Unix socket against the same call embedded,
and the requests/s one server sustains with 8 concurrent clients.

Both sides use the deterministic hashing embedder (the server through the tests' entry
point, tests/support/serve_hashing.py) on the same data directory, so the difference is
the protocol: framing, MessagePack, the socket, and the server's per-request task.

    python bench/ipc_latency.py [--turns 2000] [--queries 300] [--clients 8] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import trio

from cairn import MemoryConfig, Turn, open_memory
from cairn.ipc import BlockingClient, open_unix_client
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


def queries(count: int) -> list[str]:
    return [
        f"what about {TOPICS[i % len(TOPICS)]} number {i % 97}?" for i in range(count)
    ]


async def load(data_dir: Path, turns: int) -> None:
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


async def embedded(data_dir: Path, questions: list[str]) -> list[float]:
    timings: list[float] = []
    async with open_memory(
        data_dir, CONFIG, clock=FixedDomainClock(), embedder=HashingEmbedder()
    ) as memory:
        for question in questions[:20]:  # warm-up: projection load, caches
            await memory.recall(AGENT, question)
        for question in questions:
            started = time.perf_counter()
            await memory.recall(AGENT, question)
            timings.append((time.perf_counter() - started) * 1000)
    return timings


async def embedded_concurrent(
    data_dir: Path, tasks: int, seconds: float
) -> dict[str, Any]:
    """The same load as ``throughput`` but in-process: what the runtime itself sustains."""
    questions = queries(97)
    done = [0] * tasks
    async with open_memory(
        data_dir, CONFIG, clock=FixedDomainClock(), embedder=HashingEmbedder()
    ) as memory:
        await memory.recall(AGENT, questions[0])

        async def one(index: int) -> None:
            position = index
            with trio.move_on_after(seconds):
                while True:
                    await memory.recall(AGENT, questions[position % len(questions)])
                    done[index] += 1
                    position += tasks

        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for index in range(tasks):
                nursery.start_soon(one, index)
        elapsed = time.perf_counter() - started
    return {"tasks": tasks, "requests_per_s": round(sum(done) / elapsed, 1)}


async def over_socket(
    socket_path: Path, questions: list[str]
) -> tuple[list[float], list[float]]:
    timings: list[float] = []
    pings: list[float] = []
    async with open_unix_client(socket_path) as client:
        for _ in questions:
            started = time.perf_counter()
            await client.ping()
            pings.append((time.perf_counter() - started) * 1000)
        for question in questions[:20]:
            await client.recall(AGENT, question)
        for question in questions:
            started = time.perf_counter()
            await client.recall(AGENT, question)
            timings.append((time.perf_counter() - started) * 1000)
    return timings, pings


def blocking(socket_path: Path, questions: list[str]) -> list[float]:
    timings: list[float] = []
    with BlockingClient.connect_unix(socket_path) as client:
        for question in questions[:20]:
            client.recall(AGENT, question)
        for question in questions:
            started = time.perf_counter()
            client.recall(AGENT, question)
            timings.append((time.perf_counter() - started) * 1000)
    return timings


async def throughput(
    socket_path: Path, clients: int, seconds: float, *, ping: bool = False
) -> dict[str, Any]:
    questions = queries(97)
    done = [0] * clients
    timings: list[float] = []

    async def one(index: int) -> None:
        async with open_unix_client(socket_path) as client:
            position = index
            with trio.move_on_after(seconds):
                while True:
                    started = time.perf_counter()
                    if ping:
                        await client.ping()
                    else:
                        await client.recall(AGENT, questions[position % len(questions)])
                    timings.append((time.perf_counter() - started) * 1000)
                    done[index] += 1
                    position += clients

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for index in range(clients):
            nursery.start_soon(one, index)
    elapsed = time.perf_counter() - started
    return {
        "clients": clients,
        "requests": sum(done),
        "requests_per_s": round(sum(done) / elapsed, 1),
        "latency_ms": summary(timings),
    }


# The real command line with the hashing embedder injected.
HASHING_CAIRN = (
    Path(__file__).resolve().parents[1] / "tests" / "support" / "serve_hashing.py"
)


def start_server(data_dir: Path, socket_path: Path) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [
            *(sys.executable, str(HASHING_CAIRN), "--data", str(data_dir)),
            *("serve", "--socket", str(socket_path)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    if not process.stdout.readline():
        raise SystemExit("the server did not start")
    return process


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    arguments = parser.parse_args()
    questions = queries(arguments.queries)
    with tempfile.TemporaryDirectory(
        prefix="cairn-ipc-bench-", dir="/tmp"
    ) as directory:
        data_dir = Path(directory) / "data"
        socket_path = Path(directory) / "cairn.sock"
        trio.run(load, data_dir, arguments.turns)
        embedded_ms = trio.run(embedded, data_dir, questions)
        embedded_sustained = trio.run(
            embedded_concurrent, data_dir, arguments.clients, arguments.seconds
        )
        server = start_server(data_dir, socket_path)
        try:
            socket_ms, ping_ms = trio.run(over_socket, socket_path, questions)
            blocking_ms = blocking(socket_path, questions)
            sustained = trio.run(
                throughput, socket_path, arguments.clients, arguments.seconds
            )
            sustained_ping = trio.run(
                partial(
                    throughput,
                    socket_path,
                    arguments.clients,
                    arguments.seconds,
                    ping=True,
                )
            )
        finally:
            server.terminate()
            server.wait(60)
    embedded_summary, socket_summary = summary(embedded_ms), summary(socket_ms)
    print(
        json.dumps(
            {
                "turns": arguments.turns,
                "queries": arguments.queries,
                "cpus": os.cpu_count(),
                "recall_ms": {
                    "embedded": embedded_summary,
                    "ipc_socket_trio_client": socket_summary,
                    "ipc_socket_blocking_client": summary(blocking_ms),
                },
                "ping_round_trip_ms": summary(ping_ms),
                "ipc_over_embedded_ratio": {
                    "p50": round(socket_summary["p50"] / embedded_summary["p50"], 2),
                    "p99": round(socket_summary["p99"] / embedded_summary["p99"], 2),
                },
                "ipc_overhead_ms_p50": round(
                    socket_summary["p50"] - embedded_summary["p50"], 3
                ),
                "sustained_recall": sustained,
                "sustained_recall_embedded": embedded_sustained,
                "sustained_ping": sustained_ping,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
