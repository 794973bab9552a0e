"""Public values to wire values and back, both directions in one place.

The clients build requests with the ``*_to_message`` half (cairn.ipc.requests); the server
reads them with the ``*_from_message`` half (cairn.ipc.dispatch). Results need no codec:
their Structs carry the public records themselves (cairn.ipc.messages), so what the server
encodes is by construction what a client decodes.
"""

from __future__ import annotations

import datetime as dt
import sys
from typing import TYPE_CHECKING, Any

from cairn.api.bounds import shown_value
from cairn.domain.evidence import Turn
from cairn.domain.ids import EventId, SessionId
from cairn.domain.metadata import Metadata
from cairn.domain.scope import RecallContext, Scope, ScopeKind
from cairn.errors import ArgumentOutOfRangeError, InvalidInputError, InvalidScopeError
from cairn.ipc.messages import MetadataMessage, ScopeMessage, TurnMessage

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "metadata_from_message",
    "metadata_to_message",
    "recall_context",
    "scope_from_message",
    "scope_to_message",
    "turn_from_message",
    "turn_to_message",
    "vector_to_message",
]


def turn_to_message(turn: Turn) -> TurnMessage:
    return TurnMessage(
        event_id=turn.event_id,
        session_id=turn.session_id,
        role=turn.role.value,
        text=turn.text,
        at=None if turn.at is None else turn.at.isoformat(),
        speaker=turn.speaker,
        kind=turn.kind.value,
        replaces=turn.replaces,
        metadata=metadata_to_message(turn.metadata),
    )


def metadata_to_message(metadata: Metadata | None) -> MetadataMessage | None:
    if metadata is None or metadata.empty:
        return None
    return MetadataMessage(
        tags=list(metadata.tags),
        importance=metadata.importance,
        extra=dict(metadata.extra),
    )


def metadata_from_message(message: MetadataMessage | None) -> Metadata | None:
    """The metadata a message names; a bad value is InvalidMetadataError."""
    if message is None:
        return None
    return Metadata(message.tags, message.importance, message.extra)


def turn_from_message(message: TurnMessage) -> Turn:
    """The turn a message names; anything a ``Turn`` refuses is InvalidInputError."""
    at = None
    if message.at is not None:
        try:
            at = dt.datetime.fromisoformat(message.at)
        except ValueError:
            raise InvalidInputError(f"'at' is not ISO-8601: {message.at!r}") from None
        if at.utcoffset() is None:
            raise InvalidInputError(f"'at' needs a UTC offset: {message.at!r}")
    metadata = metadata_from_message(message.metadata)
    try:
        return Turn(
            EventId(message.event_id),
            SessionId(message.session_id),
            message.role,
            message.text,
            at,
            message.speaker,
            kind=message.kind,
            replaces=None if message.replaces is None else EventId(message.replaces),
            metadata=metadata,
        )
    except ValueError as error:
        raise InvalidInputError(f"turn {message.event_id!r}: {error}") from None


def scope_to_message(scope: Scope | None) -> ScopeMessage | None:
    if scope is None:
        return None
    return ScopeMessage(kind=scope.kind.value, key=scope.key)


def scope_from_message(message: ScopeMessage | None) -> Scope | None:
    if message is None:
        return None
    try:
        return Scope(ScopeKind(message.kind), message.key)
    except ValueError as error:
        raise InvalidScopeError(f"scope {message.kind!r}: {error}") from None


def recall_context(
    context: RecallContext | None, session_id: str | None
) -> RecallContext:
    """The context a recall runs under, as the embedded ``Memory.recall`` decides it:
    ``session_id`` is shorthand for a context holding only it, and a ``context`` wins."""
    return RecallContext(session_id=session_id) if context is None else context


def vector_to_message(vector: Iterable[float]) -> list[float]:
    """A query vector as plain floats.

    A numpy array is flattened by numpy itself, but only when the caller has numpy loaded
    already: a client never imports it (tests/ipc/test_light_client.py).
    """
    numpy: Any = sys.modules.get("numpy")
    try:
        if numpy is not None and isinstance(vector, numpy.ndarray):
            floats: list[float] = vector.astype(float).reshape(-1).tolist()
            return floats
        return [float(value) for value in vector]
    except (TypeError, ValueError, OverflowError):
        # The server checks the length and the values (cairn.Memory.recall); what is not
        # a number at all cannot be sent, and is refused here the same way.
        raise ArgumentOutOfRangeError(
            f"query_vector must hold numbers; got {shown_value(vector)}"
        ) from None
