"""Evidence: what actually happened, kept verbatim."""

from __future__ import annotations

import datetime as dt
import enum

import attrs

from cairn.domain.ids import EventId, SessionId

__all__ = ["EvidenceEvent", "Role", "Turn"]


class Role(enum.StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    EVENT = "event"


def _aware(
    _: object, attribute: attrs.Attribute[dt.datetime | None], value: dt.datetime | None
) -> None:
    if value is not None and value.utcoffset() is None:
        raise ValueError(f"{attribute.name} must be timezone-aware")


@attrs.frozen
class Turn:
    """A finished turn or runtime event as a host hands it to cairn.

    ``event_id`` is the caller's ID: ingesting the same ID with the same content again is a
    no-op, with different content a :class:`~cairn.errors.ConflictingEventError`.
    """

    event_id: EventId
    session_id: SessionId
    role: Role = attrs.field(converter=Role)
    text: str
    at: dt.datetime | None = attrs.field(default=None, validator=_aware)
    speaker: str | None = None

    def __attrs_post_init__(self) -> None:
        for name in ("event_id", "session_id", "text"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-blank string")


@attrs.frozen
class EvidenceEvent:
    """A stored evidence row."""

    rowid: int
    event_id: EventId
    session_id: SessionId
    role: Role
    text: str
    occurred_at: dt.datetime
    speaker: str | None
    context: str | None = None

    def embedding_text(self) -> str:
        """What the embedder sees: the turn as said, after the turn it answers."""
        own = f"{self.speaker}: {self.text}" if self.speaker else self.text
        return own if self.context is None else f"{self.context}\n{own}"
