"""What many agents cost one process: memory, trio tasks, file descriptors, time.

Opens one memory, then touches ``--agents`` agents once each (ingest one turn,
``wait_idle``, one recall), sequentially or ``--concurrency`` at a time, and reports the
process footprint before and after: RSS (``VmRSS`` of /proc/self/status) and peak RSS
(``getrusage`` maxrss), live trio tasks (walking the root task's nurseries, with the most
frequent task names), OS threads, open file descriptors. Then it waits ``--idle-wait`` s on
the trio clock (a runtime that stops idle agents should shed them by then; pass its
setting with ``--config``), reports the footprint again, and times recalls of
``--retouch`` agents touched at the start (a stopped agent starts again on use).

Only the public API is measured; embeddings come from the deterministic hashing test
embedder in a worker thread (under the runtime's CPU limiters when it exposes them).

    python bench/agents_at_scale.py [--agents 1000] [--concurrency 1] [--idle-wait 0]
                                    [--config name=value ...]
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import resource
import sys
import tempfile
import time
from typing import Any

import attrs
import trio
from bench_support import ThreadedHashing, load, summary

from cairn import MemoryConfig, Turn, open_memory
from cairn.testing import FixedDomainClock

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TOPICS = ["tea", "hiking", "cello", "Lisbon", "bonsai", "ramen", "chess", "sailing"]


def proc_status() -> dict[str, int]:
    """VmRSS (KiB) and Threads from /proc/self/status."""
    wanted = {"VmRSS": "rss_kib", "Threads": "os_threads"}
    found: dict[str, int] = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in wanted:
                found[wanted[name]] = int(value.split()[0])
    return found


def trio_tasks() -> tuple[int, list[tuple[str, int]]]:
    """Live trio tasks under the root task, and the ten most frequent task names."""
    names: collections.Counter[str] = collections.Counter()
    stack = [trio.lowlevel.current_root_task()]
    while stack:
        task = stack.pop()
        if task is None:
            continue
        names[".".join(task.name.rsplit(".", 2)[-2:])] += 1
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return sum(names.values()), names.most_common(10)


def footprint() -> dict[str, Any]:
    tasks, top = trio_tasks()
    return {
        **proc_status(),
        "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "trio_tasks": tasks,
        "top_task_names": top,
        "open_fds": len(os.listdir("/proc/self/fd")),
    }


def config_overrides(pairs: list[str]) -> dict[str, Any]:
    """``name=value`` pairs for MemoryConfig fields this version has (values as JSON,
    else strings); an unknown name is an error, so a typo does not pass silently."""
    fields = {field.name for field in attrs.fields(MemoryConfig)}
    overrides: dict[str, Any] = {}
    for pair in pairs:
        name, _, raw = pair.partition("=")
        if name not in fields:
            raise SystemExit(f"MemoryConfig has no field {name!r}")
        try:
            overrides[name] = json.loads(raw)
        except json.JSONDecodeError:
            overrides[name] = raw
    return overrides


def agent_name(index: int) -> str:
    return f"agent-{index:05d}"


async def touch(memory: Any, index: int) -> float:
    agent = agent_name(index)
    topic = TOPICS[index % len(TOPICS)]
    started = time.perf_counter()
    await memory.ingest(
        agent,
        [
            Turn(
                "t1",
                "s1",
                "user",
                f"I like {topic} and my lucky number is {index}.",
                NOW,
                "Ana",
            )
        ],
    )
    await memory.wait_idle(agent)
    await memory.recall(agent, f"what does Ana like about {topic}?")
    return (time.perf_counter() - started) * 1000


async def measure(arguments: argparse.Namespace) -> dict[str, Any]:
    overrides = config_overrides(arguments.config)
    config = MemoryConfig(**{"recall_wait_s": 30.0, **overrides})
    hashing = ThreadedHashing()
    result: dict[str, Any] = {"config_overrides": overrides}
    # One bound over the whole run (open, touches, idle wait, retouches, close).
    with (
        trio.fail_after(arguments.timeout_s + arguments.idle_wait),
        tempfile.TemporaryDirectory(prefix="cairn-agents-") as directory,
    ):
        async with open_memory(
            directory, config, clock=FixedDomainClock(NOW), embedder=hashing.embedder
        ) as memory:
            hashing.memory = memory
            result["embedder_runner"] = hashing.runner
            result["open"] = footprint()
            latencies: list[float] = []
            indexes = iter(range(arguments.agents))

            async def worker() -> None:
                for index in indexes:  # shared: each index is taken by one worker
                    elapsed_ms = await touch(memory, index)
                    latencies.append(elapsed_ms)

            started = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for _ in range(max(1, arguments.concurrency)):
                    nursery.start_soon(worker)
            result["touch_s"] = round(time.perf_counter() - started, 2)
            result["touch_per_agent_ms"] = summary(latencies)
            result["after_touch"] = footprint()
            opened, touched = result["open"], result["after_touch"]
            result["per_agent_after_touch"] = {
                key: round((touched[key] - opened[key]) / arguments.agents, 3)
                for key in ("rss_kib", "trio_tasks", "open_fds", "os_threads")
            }
            if arguments.idle_wait > 0:
                await trio.sleep(arguments.idle_wait)
                result["after_idle_wait"] = footprint()
            retouch: list[float] = []
            for index in range(min(arguments.retouch, arguments.agents)):
                started = time.perf_counter()
                await memory.recall(agent_name(index), "what does Ana like?")
                retouch.append((time.perf_counter() - started) * 1000)
            result["retouch_recall_ms"] = summary(retouch)
            started = time.perf_counter()
        # Closing stops every agent still running.
        result["close_s"] = round(time.perf_counter() - started, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument(
        "--idle-wait", type=float, default=0.0, help="seconds on the trio clock"
    )
    parser.add_argument("--retouch", type=int, default=20)
    parser.add_argument(
        "--config",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="MemoryConfig fields, e.g. an idle-stop setting of the runtime under test",
    )
    parser.add_argument(
        "--timeout-s",
        type=float,
        default=1800.0,
        help="bound of the whole run (plus the idle wait)",
    )
    arguments = parser.parse_args()
    result: dict[str, Any] = {
        "bench": "agents_at_scale",
        "agents": arguments.agents,
        "concurrency": arguments.concurrency,
        "idle_wait_s": arguments.idle_wait,
        "cpus": os.cpu_count(),
        "loadavg_start": load(),
    }
    result.update(trio.run(measure, arguments))
    result["loadavg_end"] = load()
    json.dump(result, sys.stdout)
    print(flush=True)


if __name__ == "__main__":
    main()
