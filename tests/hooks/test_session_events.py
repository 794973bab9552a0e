"""SessionStart injects a recall of the user and the workspace's work through the host's
additionalContext (Claude Code and Codex, payloads of their documented shapes); Claude
Code's PreCompact captures what no Stop has captured yet, so compaction loses nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.hooks.test_hook_calls import claude, hook, recall_block, transcript
from tests.ipc.harness import short_directory, start_socket_server

from cairn.retrieval.render import MEMORY_OPEN

pytestmark = pytest.mark.subprocess


def injected(stdout: str, event: str) -> str:
    output: dict[str, Any] = json.loads(stdout)
    specific = output["hookSpecificOutput"]
    assert specific["hookEventName"] == event
    return str(specific["additionalContext"])


def append(path: Path, kind: str, uuid: str, text: str) -> None:
    entry = {
        "type": kind,
        "uuid": uuid,
        "sessionId": "sess-1",
        "isSidechain": False,
        "message": {"role": kind, "content": text},
    }
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(entry) + "\n")


def test_claude_code_session_start_and_pre_compact() -> None:
    with short_directory() as root:
        data = root / "data"
        server = start_socket_server(data, root / "s.sock", root / "log")
        try:
            path = transcript(
                root / "t.jsonl",
                ("user", "u-1", "In the cairn project we deploy with make release."),
                ("assistant", "a-1", "Noted: releases go through make release."),
            )
            hook(data, "claude-code", "Stop", payload=claude("Stop", path))
            start = {
                "session_id": "sess-2",
                "transcript_path": str(root / "t2.jsonl"),
                "cwd": "/work/cairn",
                "hook_event_name": "SessionStart",
                "source": "startup",
                "model": "claude-sonnet-4-5",
            }
            answer = hook(data, "claude-code", "SessionStart", payload=start)
            context = injected(answer.stdout, "SessionStart")
            assert context.startswith(MEMORY_OPEN)
            assert "make release" in context
            # An agent with no memory yet: nothing injected, nothing printed.
            empty = hook(
                data, "claude-code", "SessionStart", "--agent", "fresh", payload=start
            )
            assert empty.stdout == ""

            # Said after the last Stop, then compacted: PreCompact captures it.
            append(path, "user", "u-2", "My flight to Oslo leaves on Tuesday.")
            compact = hook(
                data,
                "claude-code",
                "PreCompact",
                payload=claude(
                    "PreCompact", path, trigger="auto", custom_instructions=""
                ),
            )
            assert compact.stdout == ""  # PreCompact reads no context
            block = recall_block(server.socket_path, "claude-code", "flight Oslo")
            assert "My flight to Oslo leaves on Tuesday." in block
            # What the Stop captured is not sent again (the transcript cursor).
            deploy = recall_block(server.socket_path, "claude-code", "deploy release")
            assert deploy.count("we deploy with make release.") == 1
        finally:
            assert server.stop() == 0


def test_codex_session_start_injects_the_workspace_recall() -> None:
    with short_directory() as root:
        data = root / "data"
        server = start_socket_server(data, root / "s.sock", root / "log")
        try:
            common = {
                "cwd": "/home/u/payments",
                "transcript_path": None,
                "model": "gpt-5-codex",
                "permission_mode": "default",
            }
            prompt = {
                **common,
                "session_id": "th-1",
                "hook_event_name": "UserPromptSubmit",
                "turn_id": "t-1",
                "prompt": "In the payments project the tests run with tox -e py312.",
            }
            hook(data, "codex", "UserPromptSubmit", payload=prompt)
            start = {
                **common,
                "session_id": "th-2",
                "hook_event_name": "SessionStart",
                "source": "startup",
            }
            answer = hook(data, "codex", "SessionStart", payload=start)
            assert "tox -e py312" in injected(answer.stdout, "SessionStart")
        finally:
            assert server.stop() == 0
