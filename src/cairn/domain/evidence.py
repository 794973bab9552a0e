"""Evidence: what actually happened, kept verbatim."""

from __future__ import annotations

import datetime as dt
import enum

import attrs

from cairn.domain.ids import EventId, SessionId
from cairn.domain.metadata import Metadata

__all__ = [
    "EARLIEST_TIME",
    "LATEST_TIME",
    "URGENT_KINDS",
    "EventKind",
    "EvidenceClass",
    "EvidenceEvent",
    "PreparedEvent",
    "Role",
    "SessionInfo",
    "SessionKind",
    "Turn",
    "time_problem",
]


class Role(enum.StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    EVENT = "event"


class EventKind(enum.StrEnum):
    """What a turn or runtime event is.

    ``message`` is a user or assistant turn; ``tool_result`` a tool result summary; the
    ``task_*`` and ``needs_input`` kinds are runtime events of the agent's tasks;
    ``message_deleted`` withdraws the message named by ``replaces``.
    """

    MESSAGE = "message"
    TOOL_RESULT = "tool_result"
    TASK_STARTED = "task_started"
    TASK_FINISHED = "task_finished"
    TASK_FAILED = "task_failed"
    TASK_BLOCKED = "task_blocked"
    NEEDS_INPUT = "needs_input"
    MESSAGE_DELETED = "message_deleted"


class EvidenceClass(enum.StrEnum):
    """Whether a stored turn is worth recalling, decided at intake
    (cairn.ingestion.classify).

    ``content`` is everything a person or a tool said that may matter; every other value
    is a kind of noise (a heartbeat, an "ok"/"thanks" alone, a raw log line, a pasted
    traceback with nothing asked about it, progress output, a turn without words): kept
    as evidence for audit, lineage, export and forgetting, but not a recall candidate
    unless the caller asks for noise (design/architecture.md, "Evidence classes").
    """

    CONTENT = "content"
    HEARTBEAT = "heartbeat"
    ACKNOWLEDGEMENT = "acknowledgement"
    LOG_LINE = "log_line"
    TRACEBACK = "traceback"
    PROGRESS = "progress"
    EMPTY = "empty"

    @property
    def is_noise(self) -> bool:
        return self is not EvidenceClass.CONTENT


# Terminal, failed, blocked and needs-input events start an extraction batch at once
# instead of waiting for the batch to fill (design/architecture.md, ingestion).
URGENT_KINDS = frozenset(
    {
        EventKind.TASK_FINISHED,
        EventKind.TASK_FAILED,
        EventKind.TASK_BLOCKED,
        EventKind.NEEDS_INPUT,
    }
)


# The instants a turn may carry, in UTC. A year inside each end of what ``datetime`` can
# hold: a time at the very edge overflows on the way to UTC, and the arithmetic after
# intake (a zone's local day, "next year", a recurrence's window) needs room on both sides.
EARLIEST_TIME = dt.datetime(2, 1, 1, tzinfo=dt.UTC)
LATEST_TIME = dt.datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC)


def time_problem(what: str, value: dt.datetime) -> str | None:
    """Why ``value`` (aware) is outside the supported calendar, as a sentence, or None."""
    try:
        utc = value.astimezone(dt.UTC)
    except (OverflowError, ValueError):
        utc = None
    if utc is None or not EARLIEST_TIME <= utc <= LATEST_TIME:
        return (
            f"{what} {value.isoformat()} is outside the supported calendar"
            f" ({EARLIEST_TIME.date().isoformat()} to {LATEST_TIME.date().isoformat()} UTC)"
        )
    return None


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

    ``replaces`` names an earlier message of the same session that this one edits or
    retries (or, with ``kind="message_deleted"``, deletes): extraction of the session is
    rewound from that message.

    ``metadata`` is the caller's (cairn.domain.metadata): stored with the turn, inherited
    by the claims learned from it, and a recall can filter on it. It is not part of the
    turn's identity: the same turn again with other metadata is a duplicate.
    """

    event_id: EventId
    session_id: SessionId
    role: Role = attrs.field(converter=Role)
    text: str
    at: dt.datetime | None = attrs.field(default=None, validator=_aware)
    speaker: str | None = None
    kind: EventKind = attrs.field(default=EventKind.MESSAGE, converter=EventKind)
    replaces: EventId | None = None
    metadata: Metadata | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.instance_of(Metadata)),
    )

    def __attrs_post_init__(self) -> None:
        required: tuple[str, ...] = ("event_id", "session_id")
        if self.kind is not EventKind.MESSAGE_DELETED:
            required += ("text",)
        elif not self.replaces:
            raise ValueError(
                "a message_deleted event must name the message it replaces"
            )
        for name in required:
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-blank string")
        if not isinstance(self.text, str):
            raise TypeError("text must be a string")
        if self.replaces is not None and self.replaces == self.event_id:
            raise ValueError("an event cannot replace itself")


class SessionKind(enum.StrEnum):
    """``subagent`` sessions are recalled into but never extracted: their "user" is the
    parent agent, not a person."""

    MAIN = "main"
    SUBAGENT = "subagent"


@attrs.frozen
class SessionInfo:
    """How a host declares a session before (or while) ingesting into it.

    ``forked_from`` is ``(parent_session_id, event_id)``: the fork shares the parent's
    messages up to and including that event, so the same messages replayed into the fork
    are kept as evidence but not extracted a second time.
    """

    session_id: SessionId
    kind: SessionKind = attrs.field(default=SessionKind.MAIN, converter=SessionKind)
    forked_from: tuple[SessionId, EventId] | None = None

    def __attrs_post_init__(self) -> None:
        if not self.session_id.strip():
            raise ValueError("session_id must be a non-blank string")


@attrs.frozen
class PreparedEvent:
    """A turn after redaction and cutting, ready for the evidence table.

    ``segments`` concatenate to ``text`` exactly, so a span of a segment is a verbatim span
    of the redacted message; ``redactions`` names the kinds of secrets replaced by markers.
    The raw text is not kept here: nothing after intake ever sees it. ``exported`` marks
    a row of an export coming back (an import): its ID may be a segment's.
    """

    event_id: EventId
    session_id: SessionId
    role: Role
    kind: EventKind
    text: str
    segments: tuple[str, ...]
    at: dt.datetime | None
    speaker: str | None
    replaces: EventId | None
    redactions: tuple[str, ...] = ()
    exported: bool = False
    evidence_class: EvidenceClass = EvidenceClass.CONTENT
    metadata: Metadata | None = None


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
    kind: EventKind = EventKind.MESSAGE
    repeat_count: int = 1
    evidence_class: EvidenceClass = EvidenceClass.CONTENT
    metadata: Metadata | None = None

    def embedding_text(self) -> str:
        """What the embedder sees: the turn as said, after the turn it answers."""
        own = f"{self.speaker}: {self.text}" if self.speaker else self.text
        return own if self.context is None else f"{self.context}\n{own}"
