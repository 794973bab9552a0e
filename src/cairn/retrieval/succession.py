"""Where a claim stands at the recall's moment: current, history, or not yet said.

The moment is the recall's ``as_of`` when given, else now. Succession (cairn.store.
succession) records when each value took effect (``evidence_at``) and until when a
superseded one held (``superseded_at``); standing follows those times rather than the
lifecycle, so an ``as_of`` recall sees a since-superseded value as current when it held.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cairn.domain.claim import Lifecycle
from cairn.retrieval.types import Standing

if TYPE_CHECKING:
    import datetime as dt

    from cairn.domain.claim import Claim

__all__ = ["attribute_of", "standing_at"]


def standing_at(claim: Claim, moment: dt.datetime, *, as_of: bool) -> Standing | None:
    """``None`` when the claim was not yet stated at an ``as_of`` moment (it must not be
    recalled); otherwise current or history. Without ``as_of``, an active claim is current
    (its temporal validity is recall's temporal rules' business)."""
    if claim.superseded_at is not None and claim.superseded_at <= moment:
        return Standing.HISTORY
    if as_of and claim.evidence_at is not None and claim.evidence_at > moment:
        return None
    if claim.lifecycle is Lifecycle.SUPERSEDED and claim.superseded_at is None:
        return Standing.HISTORY  # superseded by a route that kept no time
    return Standing.CURRENT


def attribute_of(claim: Claim) -> tuple[str, str, str, str | None] | None:
    """The attribute a claim is a value of, as succession keys it (or ``None``)."""
    if claim.subject is None or claim.predicate is None:
        return None
    return (claim.subject, claim.predicate, claim.scope.kind.value, claim.scope.key)
