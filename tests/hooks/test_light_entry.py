"""``cairn hook`` stays light: the console script's entry point (cairn.entry) runs a hook
call, recall and capture against a real server included, without importing the typer
CLI, rich, the MCP SDK or any engine package (the host waits for that process start on
every prompt: bench/hook_latency.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.hooks.test_hook_calls import HOOK_TIMEOUT_S, claude, transcript
from tests.ipc.harness import SERVER_ENV, short_directory, start_socket_server

pytestmark = pytest.mark.subprocess

HEAVY = ("typer", "click", "rich", "mcp", "numpy", "usearch", "apsw", "trio")

# cairn.entry.main() as the console script calls it, then the modules it loaded.
SCRIPT = """
import json, sys
import cairn.entry
sys.argv = ["cairn", *json.loads(sys.argv[1])]
cairn.entry.main()
with open(MODULES, "w") as out:
    json.dump(sorted(sys.modules), out)
"""


def modules_after_hook(modules: Path, args: list[str], payload: object) -> set[str]:
    script = SCRIPT.replace("MODULES", repr(str(modules)))
    result = subprocess.run(
        [sys.executable, "-c", script, json.dumps(args)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=HOOK_TIMEOUT_S,
        env=SERVER_ENV,
        check=True,
    )
    assert result.stderr == ""
    return set(json.loads(modules.read_text(encoding="utf-8")))


def heavy(modules: set[str]) -> list[str]:
    return sorted(name for name in modules if name.split(".")[0] in HEAVY)


def test_hook_calls_import_no_cli_and_no_engine() -> None:
    with short_directory() as root:
        data = root / "data"
        server = start_socket_server(data, root / "s.sock", root / "log")
        try:
            path = transcript(root / "t.jsonl", ("user", "u-1", "I sail on Sundays."))
            stop = modules_after_hook(
                root / "stop.json",
                ["hook", "claude-code", "Stop", "--data", str(data)],
                claude("Stop", path),
            )
            recall = modules_after_hook(
                root / "recall.json",
                ["hook", "claude-code", "UserPromptSubmit", "--data", str(data)],
                claude("UserPromptSubmit", path, prompt="when do I sail?"),
            )
        finally:
            assert server.stop() == 0
    for loaded in (stop, recall):
        # The calls really went through the client (this is not an import-only check).
        assert "cairn.ipc.blocking" in loaded
        assert heavy(loaded) == []
        assert not any(name.startswith("cairn.cli") for name in loaded)
        assert not any(name.startswith("cairn.runtime") for name in loaded)
    assert "cairn.domain.evidence" in stop  # the captured turn was built
