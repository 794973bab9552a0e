"""Temporal eligibility of claims at recall time (architecture §4, temporal rules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from cairn.domain.claim import Claim, ClaimKind

if TYPE_CHECKING:
    import datetime as dt

__all__ = ["Eligibility", "eligibility"]

# Below this, a time parse is a guess: the claim fails open, with less weight.
CONFIDENT = 0.8


@attrs.frozen
class Eligibility:
    eligible: bool
    weight: float = 1.0
    qualifier: str | None = None


def eligibility(claim: Claim, now: dt.datetime) -> Eligibility:
    span = claim.temporal
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
