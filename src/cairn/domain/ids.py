"""Identifier types and the rules every caller-given ID follows. IDs are always spelled
``<thing>_id``."""

from __future__ import annotations

import re
import unicodedata
import uuid
from typing import Final, NewType

__all__ = [
    "MAX_ID_BYTES",
    "SEGMENT_SEPARATOR",
    "AgentId",
    "ClaimId",
    "EventId",
    "RequestId",
    "SessionId",
    "identifier_problem",
    "is_segment_id",
    "opaque_id",
    "segment_id",
    "validate_agent_id",
]

AgentId = NewType("AgentId", str)
SessionId = NewType("SessionId", str)
EventId = NewType("EventId", str)
ClaimId = NewType("ClaimId", str)
RequestId = NewType("RequestId", str)

# Agent IDs name files (vector projections) and appear in logs, so keep them to a safe,
# bounded alphabet rather than escaping later. ``fullmatch``: ``$`` would let "a\n" in.
_AGENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")

# Event, session, scope, turn and request IDs are the host's own, stored, indexed and
# shown verbatim: any printable text up to this many UTF-8 bytes (design/schema.md).
MAX_ID_BYTES: Final = 256
# Control characters (C0, DEL, C1) and surrogates: unprintable, and a NUL or lone
# surrogate does not survive every log, terminal or encoder an ID passes through.
_FORBIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cs"})


def validate_agent_id(value: str) -> AgentId:
    """Return ``value`` as an :data:`AgentId` or raise ``ValueError``."""
    if not _AGENT_ID.fullmatch(value):
        raise ValueError(
            f"agent id {value!r} must be 1-128 characters of letters, digits and ._:@-"
        )
    return AgentId(value)


def identifier_problem(what: str, value: object) -> str | None:
    """Why ``value`` cannot be a caller-given ID (a sentence naming ``what``), or None.

    The sentence never repeats the value: it may be 100,000 characters or hold bytes
    a terminal should not receive.
    """
    if not isinstance(value, str):
        return f"the {what} must be a string"
    if not value.strip():
        return f"the {what} must not be blank"
    for position, character in enumerate(value):
        if unicodedata.category(character) in _FORBIDDEN_CATEGORIES:
            return (
                f"the {what} holds a control character or surrogate"
                f" (U+{ord(character):04X} at position {position}); use printable text"
            )
    size = len(value.encode("utf-8"))
    if size > MAX_ID_BYTES:
        return f"the {what} is {size} bytes; at most {MAX_ID_BYTES} UTF-8 bytes"
    return None


# A later segment of a long message is its own evidence row, shown and forgotten under
# ``<event_id>#seg<N>`` (N from 1). A caller's new event ID may not end that way: the
# events table has one key space (design/schema.md says why).
SEGMENT_SEPARATOR: Final = "#seg"
_SEGMENT_ID: Final = re.compile(rf".+{re.escape(SEGMENT_SEPARATOR)}[0-9]+", re.DOTALL)


def segment_id(event_id: str, index: int) -> str:
    """The ID segment ``index`` (1 or more) of the message ``event_id`` is stored under."""
    return f"{event_id}{SEGMENT_SEPARATOR}{index}"


def is_segment_id(value: str) -> bool:
    """Whether ``value`` has the shape of a segment's ID."""
    return _SEGMENT_ID.fullmatch(value) is not None


# A run of this many decimal digits can read as a card number to the secret screen, which
# every ID a caller hands back passes (cairn.ingestion.screen): an ID cairn makes has none.
_DIGIT_RUN = re.compile(r"[0-9]{12}")


def opaque_id() -> str:
    """A new random ID (32 hex digits) that no secret screen mistakes for a secret."""
    while True:
        value = uuid.uuid4().hex
        if not _DIGIT_RUN.search(value):
            return value
