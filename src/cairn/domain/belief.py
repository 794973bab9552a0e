"""A claim's belief: what the learning layer makes of the signals about it.

Kept apart from the claim itself: the claim's ``confidence`` is what extraction (or the
user) said when it was stored, its temporal confidence is about *when* it holds; the
belief's ``confidence`` is the posterior that it is true after everything since
(cairn.maintenance.learning says how it is computed).
"""

from __future__ import annotations

import enum

import attrs

from cairn.domain.claim import Origin

__all__ = ["LADDER", "Belief", "SignalKind", "Stage", "base_level", "initial_stage"]


class Stage(enum.StrEnum):
    """Where a claim is in its learning lifecycle."""

    CANDIDATE = "candidate"
    """Seen once, in a source that earns little trust by itself (a model's remember, the
    assistant's own words)."""
    PROBATIONARY = "probationary"
    """Some support: a user's own statement, or a candidate repeated or found useful."""
    ACTIVE = "active"
    """Supported enough to be trusted: repeated, used, or remembered by the user."""
    DECAYING = "decaying"
    """No support for a long time: still recalled, ranked a little lower."""
    SUPERSEDED = "superseded"
    """A newer value replaced it (the claim's lifecycle says so)."""
    QUARANTINED = "quarantined"
    """Reported wrong or too contradicted to trust: out of recall, kept for audit."""


class SignalKind(enum.StrEnum):
    REPEATED_EVIDENCE = "repeated_evidence"
    RETRIEVAL_SUPPORT = "retrieval_support"
    FEEDBACK_USED = "feedback_used"
    FEEDBACK_WRONG = "feedback_wrong"
    CONTRADICTION = "contradiction"
    CORRECTION = "correction"
    STALE_DECAY = "stale_decay"
    PROMOTION = "promotion"
    DEMOTION = "demotion"


@attrs.frozen
class Belief:
    claim_rowid: int
    confidence: float
    usefulness: float
    stability: float
    contradiction_risk: float
    use_count: int
    stage: Stage


LADDER = (Stage.CANDIDATE, Stage.PROBATIONARY, Stage.ACTIVE)
"""The stages a claim climbs by support, one level each."""


def base_level(origin: Origin, from_assistant: bool) -> int:
    """Where a claim starts on :data:`LADDER`: remembered by the user at the top, a claim
    from the user's own turns one up, a model's remember or the assistant's words at the
    bottom."""
    if origin is Origin.USER:
        return 2
    if origin is Origin.EXTRACTED and not from_assistant:
        return 1
    return 0


def initial_stage(origin: Origin, from_assistant: bool) -> Stage:
    """The stage of a claim nothing has supported or contradicted yet."""
    return LADDER[base_level(origin, from_assistant)]
