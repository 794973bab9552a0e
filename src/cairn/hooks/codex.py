"""Codex: its lifecycle hooks and its legacy ``notify`` program (design/hooks.md).

Hooks (``~/.codex/hooks.json``, codex-rs/hooks/schema/generated/*.command.input.schema.json)
get a JSON object on stdin: every event has ``session_id``, ``cwd``, ``hook_event_name``,
``transcript_path`` (nullable), ``model``; UserPromptSubmit adds ``turn_id`` and
``prompt``; Stop adds ``turn_id``, ``last_assistant_message`` (nullable) and
``stop_hook_active``; SessionStart ``source``. UserPromptSubmit and SessionStart read
``hookSpecificOutput.additionalContext`` from stdout.

``notify = [...]`` in ``config.toml`` runs a program with one JSON argument:
``{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd", "input-messages":
[...], "last-assistant-message"}``.

Both paths give a turn the same IDs (``codex:<session>:<turn>:user|assistant``), so a
turn captured by both is ingested once.
"""

from __future__ import annotations

from typing import Any

from cairn.hooks.envelope import (
    HookMessage,
    PayloadError,
    TurnEnvelope,
    session_query,
)

__all__ = ["EVENTS", "envelope", "notify_envelope", "output"]

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")


def _string(payload: dict[str, Any], name: str) -> str:
    value = payload.get(name)
    if not isinstance(value, str) or not value:
        raise PayloadError(f"Codex payload has no {name!r} string")
    return value


def turn_message_id(session: str, turn: str, role: str) -> str:
    return f"codex:{session}:{turn}:{role}"


def envelope(payload: dict[str, Any], event: str, actor: str) -> TurnEnvelope:
    """The envelope of one Codex hook call: SessionStart recalls for the session
    (cairn.hooks.envelope.session_query), UserPromptSubmit captures the prompt and
    recalls for it, Stop captures the assistant's last message."""
    session = _string(payload, "session_id")
    workspace = payload.get("cwd") if isinstance(payload.get("cwd"), str) else ""
    messages: list[HookMessage] = []
    prompt = None
    if event == "UserPromptSubmit":
        value = payload.get("prompt")
        prompt = value if isinstance(value, str) else ""
        turn = _string(payload, "turn_id")
        if prompt.strip():
            messages.append(
                HookMessage(turn_message_id(session, turn, "user"), "user", prompt)
            )
    elif event == "SessionStart":
        prompt = session_query(str(workspace))
    elif event == "Stop":
        turn = _string(payload, "turn_id")
        last = payload.get("last_assistant_message")
        if isinstance(last, str) and last.strip():
            messages.append(
                HookMessage(
                    turn_message_id(session, turn, "assistant"), "assistant", last
                )
            )
    return TurnEnvelope(
        "codex", actor, session, str(workspace), event, tuple(messages), prompt
    )


def notify_envelope(payload: dict[str, Any], actor: str) -> TurnEnvelope | None:
    """The envelope of a ``notify`` call, or None for a notification that is not a
    finished turn."""
    if payload.get("type") != "agent-turn-complete":
        return None
    session = _string(payload, "thread-id")
    turn = _string(payload, "turn-id")
    inputs = payload.get("input-messages")
    texts = (
        [text for text in inputs if isinstance(text, str)]
        if isinstance(inputs, list)
        else []
    )
    messages: list[HookMessage] = []
    if user := "\n\n".join(texts).strip():
        messages.append(
            HookMessage(turn_message_id(session, turn, "user"), "user", user)
        )
    last = payload.get("last-assistant-message")
    if isinstance(last, str) and last.strip():
        messages.append(
            HookMessage(turn_message_id(session, turn, "assistant"), "assistant", last)
        )
    workspace = payload.get("cwd") if isinstance(payload.get("cwd"), str) else ""
    return TurnEnvelope(
        "codex", actor, session, str(workspace), "agent-turn-complete", tuple(messages)
    )


def output(event: str, context: str) -> dict[str, Any] | None:
    if not context or event not in {"UserPromptSubmit", "SessionStart"}:
        return None
    return {
        "hookSpecificOutput": {"hookEventName": event, "additionalContext": context}
    }
