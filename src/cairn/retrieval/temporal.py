"""Temporal eligibility of claims at recall time (architecture §4, temporal rules)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import attrs

from cairn.domain.claim import Claim, ClaimKind
from cairn.domain.temporal import next_occurrence

if TYPE_CHECKING:
    from cairn.domain.temporal import Recurrence, TemporalSpan

__all__ = ["Eligibility", "eligibility"]

# Below this, a time parse is a guess: the claim fails open, with less weight.
CONFIDENT = 0.8


@attrs.frozen
class Eligibility:
    """Whether a claim takes part in recall at ``now``, its weight and its qualifier;
    ``at`` is the next occurrence of a recurring claim (the item's time when set)."""

    eligible: bool
    weight: float = 1.0
    qualifier: str | None = None
    at: dt.datetime | None = None


def eligibility(claim: Claim, now: dt.datetime) -> Eligibility:
    """The recall-time temporal rules (architecture §4), relative to ``now``: the
    recall's moment, which is "as of" when recall looks back."""
    span = claim.temporal
    if claim.recurrence is not None:
        return _recurring(claim.recurrence, span, now)
    if span is None:
        return Eligibility(True)
    confident = span.confidence >= CONFIDENT
    weight = 1.0 if confident else 0.7
    uncertain = None if confident else "time uncertain"
    if claim.kind is ClaimKind.STATE and not span.contains(now):
        return Eligibility(not confident, weight, uncertain or "may be outdated")
    if claim.kind is ClaimKind.PLAN:
        if span.valid_until is not None and span.valid_until <= now:
            return Eligibility(True, weight * 0.8, "previously planned")
        if span.valid_from is not None and span.valid_from > now:
            return Eligibility(
                True, weight, f"planned for {span.valid_from.date().isoformat()}"
            )
    return Eligibility(True, weight, uncertain)


def _recurring(
    recurrence: Recurrence, span: TemporalSpan | None, now: dt.datetime
) -> Eligibility:
    """ "every Monday 09:00 (Europe/Berlin); next 2026-12-07 09:00", or history once the
    window has ended (dropped from current recall when the parse is confident)."""
    confident = span is None or span.confidence >= CONFIDENT
    weight = 1.0 if confident else 0.7
    label = recurrence.describe()
    following = next_occurrence(recurrence, now)
    if following is None:
        return Eligibility(not confident, weight * 0.8, f"{label}; ended")
    local = following.astimezone(recurrence.zone)
    when = local.strftime("%Y-%m-%d %H:%M" if recurrence.time else "%Y-%m-%d")
    uncertain = "" if confident else "; time uncertain"
    # In the stated zone, so the item's date is the local one.
    return Eligibility(True, weight, f"{label}; next {when}{uncertain}", local)
