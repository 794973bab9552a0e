"""The hook vocabulary: one turn envelope for every host, and the hook's own errors."""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING, Literal

import msgspec

if TYPE_CHECKING:
    from cairn.domain.evidence import Turn

__all__ = [
    "HOSTS",
    "HookError",
    "HookMessage",
    "PayloadError",
    "TurnEnvelope",
    "session_query",
    "turns",
]

HOSTS = ("claude-code", "codex")
Host = Literal["claude-code", "codex"]
MessageRole = Literal["user", "assistant", "tool"]


class HookError(Exception):
    """A hook call that cannot go on; the runner reports it on stderr and fails open."""


class PayloadError(HookError):
    """The host's payload is not of the documented shape (names the missing field)."""


class HookMessage(msgspec.Struct, frozen=True):
    """One message of a turn. ``id`` is stable across replays of the same host message
    (host session + the host's message uuid or turn id), so ingesting it twice is a
    duplicate, never a second event."""

    id: str
    role: MessageRole
    text: str


class TurnEnvelope(msgspec.Struct, frozen=True):
    """What one hook call captured, whatever the host.

    ``actor`` is the cairn agent the memory belongs to (a per-host default, so two hosts
    never share memory by accident); ``session`` the host's session (or thread) ID;
    ``workspace`` the host's working directory; ``event`` the host event name as the host
    spells it; ``prompt`` the text to recall for, if any: the user's prompt
    (UserPromptSubmit), or :func:`session_query` (SessionStart). It is never ingested as
    such: each host's adapter puts what the user said in ``messages``.
    """

    host: Host
    actor: str
    session: str
    workspace: str
    event: str
    messages: tuple[HookMessage, ...] = ()
    prompt: str | None = None


def session_query(workspace: str) -> str:
    """What a session's start recalls for: the user and the work under way in the
    workspace, named by its directory (the project a coding agent opens)."""
    name = PurePath(workspace).name if workspace else ""
    where = f" in the {name} project" if name else ""
    return f"the user's preferences and the ongoing work{where}"


def turns(envelope: TurnEnvelope) -> list[Turn]:
    """The turns ``envelope`` hands to ingest, one per message."""
    # Imported here: a hook call that only recalls never builds a turn.
    from cairn.domain.evidence import Turn  # noqa: PLC0415
    from cairn.domain.ids import EventId, SessionId  # noqa: PLC0415

    return [
        Turn(
            EventId(message.id), SessionId(envelope.session), message.role, message.text
        )
        for message in envelope.messages
    ]
