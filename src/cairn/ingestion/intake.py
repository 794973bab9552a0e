"""Intake preparation: what a turn becomes before any of it is stored.

A turn whose IDs break the ID rules (cairn.domain.ids), whose time lies outside the
supported calendar (cairn.domain.evidence) or whose text is not Unicode text is rejected
alone, with a reason and an :class:`~cairn.domain.outcomes.IntakeRejection`: the other
turns of the call go on.

cairn's own injected blocks and host scaffolding are stripped first
(cairn.ingestion.scaffolding). Redaction runs next, on the whole message, so no later step (hashing, cutting, indexing,
counting, logging, embedding, prompting a model) ever sees a secret; then the message is
cut into segments of at most ``max_bytes`` UTF-8 bytes, and classified as content or noise
(cairn.ingestion.classify) as a whole. Pure; runs in the writer thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cairn.domain.evidence import PreparedEvent, time_problem
from cairn.domain.ids import identifier_problem
from cairn.domain.outcomes import IntakeOutcome, IntakeRejection, IntakeResult
from cairn.errors import (
    InvalidIdentifierError,
    InvalidInputError,
    InvalidTemporalError,
    MessageTooLargeError,
)
from cairn.ingestion.classify import classify_turn
from cairn.ingestion.redact import redact
from cairn.ingestion.scaffolding import strip_scaffolding
from cairn.ingestion.screen import screen_identifier
from cairn.ingestion.segment import cut_segments

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.domain.evidence import Turn

__all__ = ["prepare_turns", "rejection_error", "turn_rejection"]


# Segments one message may become (about 2.4 MB at the default 2400-byte segments): a
# bound on what one turn can make the writer, the extractor and the embedder do.
MAX_SEGMENTS = 1000


def _id_problem(turn: Turn) -> str | None:
    named = [("event ID", turn.event_id), ("session ID", turn.session_id)]
    if turn.replaces is not None:
        named.append(("replaced event ID", turn.replaces))
    for what, value in named:
        problem = identifier_problem(what, value)
        if problem is not None:
            return problem
    return None


def _text_problem(turn: Turn) -> str | None:
    for what, value in (("text", turn.text), ("speaker", turn.speaker)):
        if value is None:
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            # A lone surrogate (from a JSON "\ud800" escape): no encoder, SQLite included,
            # can store it.
            return (
                f"the {what} holds a lone surrogate (U+{ord(value[error.start]):04X} at"
                f" position {error.start}), which is not Unicode text"
            )
    return None


def turn_rejection(turn: Turn) -> IntakeResult | None:
    """The rejection of ``turn`` alone when its IDs, its time or its text cannot be
    stored."""
    problem = _id_problem(turn)
    if problem is not None:
        return IntakeResult(
            turn.event_id,
            IntakeOutcome.REJECTED,
            problem,
            rejection=IntakeRejection.INVALID_ID,
        )
    if turn.at is not None and (problem := time_problem("the time", turn.at)):
        return IntakeResult(
            turn.event_id,
            IntakeOutcome.REJECTED,
            problem,
            rejection=IntakeRejection.INVALID_TIME,
        )
    if problem := _text_problem(turn):
        return IntakeResult(
            turn.event_id,
            IntakeOutcome.REJECTED,
            problem,
            rejection=IntakeRejection.INVALID_TEXT,
        )
    return None


# What a single-turn call raises for a turn intake refused on its own.
_REJECTION_ERRORS: dict[IntakeRejection, type[InvalidInputError]] = {
    IntakeRejection.INVALID_ID: InvalidIdentifierError,
    IntakeRejection.INVALID_TIME: InvalidTemporalError,
    IntakeRejection.INVALID_TEXT: InvalidInputError,
}


def rejection_error(result: IntakeResult) -> InvalidInputError | None:
    """The typed error for a turn rejected as bad input (its ID or its time), or None
    (a conflicting ID, an unknown replaced message: the caller's own errors)."""
    kind = None if result.rejection is None else _REJECTION_ERRORS.get(result.rejection)
    return None if kind is None else kind(result.reason or "the turn was rejected")


def prepare_turns(
    turns: Sequence[Turn], max_bytes: int, *, max_segments: int = MAX_SEGMENTS
) -> list[PreparedEvent | IntakeResult]:
    """Redacted, segmented turns, in order, with a rejection in the place of each turn
    :func:`turn_rejection` refuses. A turn over ``max_segments`` segments raises
    :class:`MessageTooLargeError`, a secret-bearing ID :class:`SecretInIdentifierError`,
    and nothing of the call is stored."""
    prepared: list[PreparedEvent | IntakeResult] = []
    for turn in turns:
        rejected = turn_rejection(turn)
        if rejected is not None:
            prepared.append(rejected)
            continue
        screen_identifier("event ID", turn.event_id)
        screen_identifier("session ID", turn.session_id)
        if turn.replaces is not None:
            screen_identifier("replaced event ID", turn.replaces)
        # cairn's own recalled blocks and host scaffolding go first, so recall output a
        # host echoes back is never new evidence; redaction then runs on what is kept.
        redacted = redact(strip_scaffolding(turn.text))
        speaker = None if turn.speaker is None else redact(turn.speaker).text
        text = redacted.text
        segments = tuple(cut_segments(text, max_bytes)) if text else ("",)
        if len(segments) > max_segments:
            raise MessageTooLargeError(
                f"event {turn.event_id!r} is {len(text.encode())} bytes: over"
                f" {max_segments} segments of {max_bytes} bytes; split it into"
                " several turns"
            )
        prepared.append(
            PreparedEvent(
                event_id=turn.event_id,
                session_id=turn.session_id,
                role=turn.role,
                kind=turn.kind,
                text=text,
                segments=segments,
                at=turn.at,
                speaker=speaker,
                replaces=turn.replaces,
                redactions=redacted.kinds,
                evidence_class=classify_turn(text, turn.kind),
                metadata=turn.metadata,
            )
        )
    return prepared
