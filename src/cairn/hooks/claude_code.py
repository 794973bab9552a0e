"""Claude Code: its hook payloads and transcript, read as documented (design/hooks.md).

Every hook gets a JSON object on stdin with ``session_id``, ``transcript_path``, ``cwd``
and ``hook_event_name``; UserPromptSubmit adds ``prompt``, Stop ``stop_hook_active``,
PreCompact ``trigger``, SessionStart ``source``. The transcript is JSONL, one entry a
line: ``{"type": "user"|"assistant", "uuid", "sessionId", "isSidechain", "isMeta",
"message": {"role", "content": str | [blocks]}}``; the text of a message is its string
content or its ``{"type": "text"}`` blocks (tool use, tool results and thinking are not
conversation and are left out).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from cairn.hooks.envelope import (
    HookMessage,
    PayloadError,
    TurnEnvelope,
    session_query,
)

__all__ = ["EVENTS", "envelope", "read_transcript"]

# The events `cairn install claude-code` wires, as Claude Code names them.
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact")


def _string(payload: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = payload.get(name)
    if isinstance(value, str) and value:
        return value
    if required:
        raise PayloadError(f"Claude Code payload has no {name!r} string")
    return None


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ]
        return "\n".join(parts)
    return ""


def message_id(session: str, uuid: str) -> str:
    """The cairn event ID of one transcript message: host, session and message uuid."""
    return f"claude-code:{session}:{uuid}"


def read_transcript(
    path: Path, session: str, offset: int = 0
) -> tuple[list[HookMessage], int]:
    """The user and assistant messages of ``path`` from byte ``offset`` on, and the
    offset just past the last complete line read (a line still being written waits for
    the next call)."""
    messages: list[HookMessage] = []
    with path.open("rb") as transcript:
        transcript.seek(offset)
        data = transcript.read()
    end = data.rfind(b"\n") + 1
    for raw in data[:end].splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") not in {
            "user",
            "assistant",
        }:
            continue
        if entry.get("isSidechain") or entry.get("isMeta"):
            continue
        message = entry.get("message")
        uuid = entry.get("uuid")
        if not isinstance(message, dict) or not isinstance(uuid, str) or not uuid:
            continue
        text = _text(message.get("content")).strip()
        if not text:
            continue
        messages.append(
            HookMessage(
                message_id(session, uuid),
                "user" if entry["type"] == "user" else "assistant",
                text,
            )
        )
    return messages, offset + end


def envelope(
    payload: dict[str, Any], event: str, actor: str, *, offset: int = 0
) -> tuple[TurnEnvelope, int]:
    """The envelope of one hook call and the transcript offset it read up to.

    UserPromptSubmit carries the prompt (to recall for) and SessionStart the session's
    query (cairn.hooks.envelope.session_query); Stop and PreCompact carry the
    transcript's messages since ``offset``: what is not captured yet, so a compaction
    loses nothing the transcript held before it."""
    session = _string(payload, "session_id")
    assert session is not None  # noqa: S101 - required above
    workspace = _string(payload, "cwd", required=False) or ""
    prompt = None
    messages: list[HookMessage] = []
    end = offset
    if event == "UserPromptSubmit":
        prompt = _string(payload, "prompt", required=False) or ""
    elif event == "SessionStart":
        # Every source (startup, resume, clear, compact): after a clear or a compaction
        # the context injected before is gone from the conversation too.
        prompt = session_query(workspace)
    elif event in {"Stop", "PreCompact", "SessionEnd"}:
        transcript = _string(payload, "transcript_path", required=False)
        if transcript is not None and Path(transcript).is_file():
            messages, end = read_transcript(Path(transcript), session, offset)
    return (
        TurnEnvelope(
            "claude-code",
            actor,
            session,
            workspace,
            event,
            tuple(messages),
            prompt,
        ),
        end,
    )


def output(event: str, context: str) -> dict[str, Any] | None:
    """The JSON Claude Code reads from stdout: ``hookSpecificOutput.additionalContext``
    for UserPromptSubmit and SessionStart; None (print nothing) otherwise."""
    if not context or event not in {"UserPromptSubmit", "SessionStart"}:
        return None
    return {
        "hookSpecificOutput": {"hookEventName": event, "additionalContext": context}
    }


def cursor_key(session: str) -> str:
    return "claude-code-" + hashlib.sha256(session.encode()).hexdigest()[:32]
