"""Hook and MCP latency: what a coding-agent host waits for on each prompt.

1. The recall path of ``cairn hook claude-code UserPromptSubmit`` as the host runs it: a
   fresh process per call (interpreter start, the light client's imports, connect,
   recall, the JSON on stdout), against a real ``cairn serve --socket`` on a temporary
   data directory holding ``--turns`` ingested turns. Wall time per call, p50/p99.
2. The light client's import time in a fresh interpreter: ``import cairn.entry,
   cairn.hooks.run, cairn.ipc.blocking`` (all a hook call imports) against ``python -c
   pass``, and the cumulative import time ``python -X importtime`` reports for it.
3. The MCP tool round trip: an MCP client session (the ``mcp`` SDK's stdio client)
   against ``cairn mcp`` beside the same server, timing ``cairn_recall`` calls.

Both the server and ``cairn mcp`` run the real command line with the deterministic
hashing embedder (tests/support/serve_hashing.py), so no model is loaded and the numbers
are the hook's and the protocol's own cost.

    python bench/hook_latency.py [--turns 500] [--calls 50] [--mcp-calls 100]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
from bench_support import load, summary

from cairn import MemoryConfig, Turn, open_memory
from cairn.testing import FixedDomainClock, HashingEmbedder

AGENT = "claude-code"
TOPICS = ["tea", "hiking", "cello", "Lisbon", "bonsai", "ramen", "chess", "sailing"]
HASHING_CAIRN = (
    Path(__file__).resolve().parents[1] / "tests" / "support" / "serve_hashing.py"
)
LIGHT_IMPORT = "import cairn.entry, cairn.hooks.run, cairn.ipc.blocking"


def questions(count: int) -> list[str]:
    return [f"what about {TOPICS[i % len(TOPICS)]} and {i % 97}?" for i in range(count)]


async def ingest(data_dir: Path, turns: int) -> None:
    config = MemoryConfig(recall_wait_s=30.0)
    async with open_memory(
        data_dir, config, clock=FixedDomainClock(), embedder=HashingEmbedder()
    ) as memory:
        batch = [
            Turn(
                f"t{i}",
                f"s{i // 50}",
                "user",
                f"I like {TOPICS[i % len(TOPICS)]} and tried number {i % 97} today.",
            )
            for i in range(turns)
        ]
        for start in range(0, turns, 500):
            await memory.ingest(AGENT, batch[start : start + 500])
        await memory.wait_idle(AGENT)


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


def hook_command() -> list[str]:
    """The console script ``cairn install`` writes, else ``python -m cairn``."""
    script = Path(sys.executable).with_name("cairn")
    return [str(script)] if script.exists() else [sys.executable, "-m", "cairn"]


def hook_calls(data_dir: Path, prompts: list[str]) -> tuple[list[float], int]:
    """Wall ms of each hook process, and how many injected a context."""
    command = [*hook_command(), "hook", AGENT, "UserPromptSubmit", "--data"]
    timings: list[float] = []
    injected = 0
    for index, prompt in enumerate(prompts):
        payload = {
            "session_id": f"bench-{index % 5}",
            "transcript_path": None,
            "cwd": "/work/project",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
        started = time.perf_counter()
        result = subprocess.run(
            [*command, str(data_dir)],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        timings.append((time.perf_counter() - started) * 1000)
        if result.stderr:
            raise SystemExit(f"the hook failed: {result.stderr}")
        if '"additionalContext"' in result.stdout:
            injected += 1
    return timings, injected


def wall_ms(code: str, runs: int) -> list[float]:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def importtime_ms(code: str, runs: int) -> float:
    """The median over ``runs`` of the cumulative import time -X importtime reports for
    the top-level modules ``code`` imports (µs summed, in ms)."""
    totals = []
    for _ in range(runs):
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        total = 0
        for line in result.stderr.splitlines():
            # "import time: self | cumulative | name"; top level has no indent.
            match = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", line)
            if match and not match.group(2).startswith(" "):
                total += int(match.group(1))
        totals.append(total / 1000)
    return round(statistics.median(totals), 1)


async def mcp_calls(data_dir: Path, prompts: list[str]) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command = [str(HASHING_CAIRN), "--data", str(data_dir), "mcp", "--agent", AGENT]
    parameters = StdioServerParameters(command=sys.executable, args=command)
    started = time.perf_counter()
    timings: list[float] = []
    with trio.fail_after(300):
        async with (
            stdio_client(parameters) as streams,
            ClientSession(*streams) as session,
        ):
            await session.initialize()
            ready_ms = (time.perf_counter() - started) * 1000
            for prompt in prompts:
                began = time.perf_counter()
                result = await session.call_tool("cairn_recall", {"query": prompt})
                timings.append((time.perf_counter() - began) * 1000)
                if result.is_error:
                    raise SystemExit(f"cairn_recall failed: {result.content}")
    return {
        "session_start_ms": round(ready_ms, 1),
        "cairn_recall_ms": summary(timings),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--mcp-calls", type=int, default=100)
    parser.add_argument("--import-runs", type=int, default=7)
    arguments = parser.parse_args()
    result: dict[str, Any] = {
        "bench": "hook_latency",
        "turns": arguments.turns,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "loadavg_start": load(),
    }
    # One unmeasured run first, so bytecode caches and the page cache are warm.
    wall_ms(LIGHT_IMPORT, 1)
    bare = wall_ms("pass", arguments.import_runs)
    light = wall_ms(LIGHT_IMPORT, arguments.import_runs)
    result["light_client_import"] = {
        "python_pass_median_ms": round(statistics.median(bare), 1),
        "import_median_ms": round(statistics.median(light), 1),
        "import_over_bare_median_ms": round(
            statistics.median(light) - statistics.median(bare), 1
        ),
        "importtime_cumulative_ms": importtime_ms(LIGHT_IMPORT, arguments.import_runs),
    }
    with tempfile.TemporaryDirectory(prefix="cairn-hook-bench-", dir="/tmp") as root:
        data_dir = Path(root) / "data"
        trio.run(ingest, data_dir, arguments.turns)
        server = start_server(data_dir, Path(root) / "cairn.sock")
        try:
            hook_calls(data_dir, questions(2))  # unmeasured: the server's first recall
            timings, injected = hook_calls(data_dir, questions(arguments.calls))
            result["hook_user_prompt_submit_ms"] = summary(timings)
            result["hook_calls_with_context"] = injected
            result["hook_command"] = " ".join(hook_command())
            result["mcp"] = trio.run(
                mcp_calls, data_dir, questions(arguments.mcp_calls)
            )
        finally:
            server.terminate()
            server.wait(60)
    result["loadavg_end"] = load()
    json.dump(result, sys.stdout)
    print(flush=True)


if __name__ == "__main__":
    main()
