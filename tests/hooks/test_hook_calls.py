"""``cairn hook`` against a real ``cairn serve`` subprocess, fed payloads of the shapes
the hosts document (design/hooks.md): capture, recall through additionalContext, replays
as duplicates, cairn's own recalled block never re-ingested, and a call with the server
down that returns at once, spools its turn and has it ingested once a server is back."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.ipc.harness import SERVER_ENV, short_directory, start_socket_server

from cairn.ipc.blocking import BlockingClient
from cairn.retrieval.render import MEMORY_CLOSE, MEMORY_OPEN

pytestmark = pytest.mark.subprocess

HOOK_TIMEOUT_S = 30.0


def hook(
    data_dir: Path, *args: str, payload: Any = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cairn", "hook", *args, "--data", str(data_dir)],
        input=None if payload is None else json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=HOOK_TIMEOUT_S,
        env={**SERVER_ENV, **(env or {})},
        check=True,
    )


def transcript(path: Path, *entries: tuple[str, str, str]) -> Path:
    lines = []
    for kind, uuid, text in entries:
        content: Any = text if kind == "user" else [{"type": "text", "text": text}]
        lines.append(
            json.dumps(
                {
                    "type": kind,
                    "uuid": uuid,
                    "sessionId": "sess-1",
                    "isSidechain": False,
                    "message": {"role": kind, "content": content},
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def claude(event: str, path: Path | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "session_id": "sess-1",
        "transcript_path": None if path is None else str(path),
        "cwd": "/work/project",
        "hook_event_name": event,
        **extra,
    }


def context_of(result: subprocess.CompletedProcess[str]) -> str:
    if not result.stdout.strip():
        return ""
    output = json.loads(result.stdout)
    return str(output["hookSpecificOutput"]["additionalContext"])


def recall_block(socket: Path, agent: str, query: str) -> str:
    with BlockingClient.connect_unix(socket, timeout_s=30) as client:
        return client.recall(agent, query).memory_block


def test_claude_code_capture_recall_and_replay() -> None:
    with short_directory() as root:
        data = root / "data"
        server = start_socket_server(data, root / "s.sock", root / "log")
        try:
            path = transcript(
                root / "t.jsonl",
                ("user", "u-1", "My dog is called Rex and he loves the beach."),
                ("assistant", "a-1", "Rex sounds like a happy dog."),
            )
            stop = hook(
                data,
                "claude-code",
                "Stop",
                payload=claude("Stop", path, stop_hook_active=False),
            )
            assert stop.stdout == ""  # Stop prints nothing the host would read
            answer = hook(
                data,
                "claude-code",
                "UserPromptSubmit",
                payload=claude(
                    "UserPromptSubmit", path, prompt="what is my dog called?"
                ),
            )
            context = context_of(answer)
            assert context.startswith(MEMORY_OPEN)
            assert "Rex" in context
            # A replay of the whole transcript (the cursor lost) stores nothing twice.
            (data / "hooks" / "cursors").rename(root / "cursors-gone")
            hook(
                data,
                "claude-code",
                "PreCompact",
                payload=claude("PreCompact", path, trigger="auto"),
            )
            block = recall_block(server.socket_path, "claude-code", "Rex beach dog")
            assert block.count("My dog is called Rex") == 1
        finally:
            assert server.stop() == 0


def test_recalled_block_echoed_into_the_transcript_is_not_evidence() -> None:
    with short_directory() as root:
        data = root / "data"
        server = start_socket_server(data, root / "s.sock", root / "log")
        try:
            echoed = (
                MEMORY_OPEN
                + "- [evidence, 2026-12-01, user said] My parrot is named Kiwi.\n"
                + MEMORY_CLOSE
            )
            path = transcript(
                root / "t.jsonl",
                ("user", "u-echo", echoed),
                (
                    "user",
                    "u-ctl",
                    "<system-reminder>The parrot Kiwi is green.</system-reminder>",
                ),
                ("user", "u-kept", echoed + "\nI also keep bees in the garden."),
            )
            hook(
                data,
                "claude-code",
                "Stop",
                payload=claude("Stop", path, stop_hook_active=False),
            )
            block = recall_block(
                server.socket_path, "claude-code", "parrot Kiwi bees garden"
            )
            assert "Kiwi" not in block
            assert "I also keep bees in the garden." in block
        finally:
            assert server.stop() == 0


def test_codex_hooks_and_notify_share_turn_ids() -> None:
    with short_directory() as root:
        data = root / "data"
        server = start_socket_server(data, root / "s.sock", root / "log")
        try:
            common = {
                "session_id": "th-1",
                "cwd": "/w",
                "transcript_path": None,
                "model": "m",
                "permission_mode": "default",
            }
            prompt = {
                **common,
                "hook_event_name": "UserPromptSubmit",
                "turn_id": "t-1",
                "prompt": "I am allergic to peanuts.",
            }
            first = hook(data, "codex", "UserPromptSubmit", payload=prompt)
            assert first.stdout == ""  # nothing to recall yet: no context
            stop = {
                **common,
                "hook_event_name": "Stop",
                "turn_id": "t-1",
                "stop_hook_active": False,
                "last_assistant_message": "I will avoid peanuts in recipes.",
            }
            hook(data, "codex", "Stop", payload=stop)
            notify = {
                "type": "agent-turn-complete",
                "thread-id": "th-1",
                "turn-id": "t-1",
                "cwd": "/w",
                "input-messages": ["I am allergic to peanuts."],
                "last-assistant-message": "I will avoid peanuts in recipes.",
            }
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "cairn",
                    "hook",
                    "codex",
                    "notify",
                    "--data",
                    str(data),
                    json.dumps(notify),
                ],
                check=True,
                timeout=HOOK_TIMEOUT_S,
                env=SERVER_ENV,
                capture_output=True,
            )
            block = recall_block(server.socket_path, "codex", "peanuts allergy")
            assert block.count("I am allergic to peanuts.") == 1
            # Per-host agents: Claude Code's memory does not see Codex's.
            assert "peanuts" not in recall_block(
                server.socket_path, "claude-code", "peanuts allergy"
            )
        finally:
            assert server.stop() == 0


def test_server_down_spools_then_ingests_once_back() -> None:
    with short_directory() as root:
        data = root / "data"
        data.mkdir()
        path = transcript(
            root / "t.jsonl", ("user", "u-1", "My sister Ana lives in Porto.")
        )
        # The server the hook starts is a no-op here, so the server stays down.
        down = {"CAIRN_HOOK_SERVE_COMMAND": json.dumps(["true"])}
        started = time.monotonic()
        result = hook(
            data,
            "claude-code",
            "Stop",
            "--budget",
            "2",
            payload=claude("Stop", path),
            env=down,
        )
        assert time.monotonic() - started < 2.0 + 5.0  # the budget, plus process start
        assert result.stdout == ""
        # It says the server it started exited, and where that server's log is.
        assert "exited with status 0" in result.stderr, result.stderr
        assert str(data / "hooks" / "server.log") in result.stderr
        spooled = list((data / "hooks" / "spool").glob("*.json"))
        assert len(spooled) == 1
        server = start_socket_server(data, root / "s.sock", root / "log")
        try:
            answer = hook(
                data,
                "claude-code",
                "UserPromptSubmit",
                payload=claude(
                    "UserPromptSubmit", path, prompt="where does my sister live?"
                ),
            )
            assert "Porto" in context_of(answer)
            assert list((data / "hooks" / "spool").glob("*.json")) == []
            # A second call finds nothing left to drain: stored once.
            hook(data, "claude-code", "Stop", payload=claude("Stop", path))
            block = recall_block(server.socket_path, "claude-code", "sister Porto")
            assert block.count("My sister Ana lives in Porto.") == 1
        finally:
            assert server.stop() == 0


def test_bad_payload_fails_open() -> None:
    with short_directory() as root:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "cairn",
                "hook",
                "claude-code",
                "Stop",
                "--data",
                str(root),
            ],
            input="not json",
            capture_output=True,
            text=True,
            timeout=HOOK_TIMEOUT_S,
            env=SERVER_ENV,
            check=False,
        )
        assert result.returncode == 0
        assert result.stdout == ""
        assert "not JSON" in result.stderr
