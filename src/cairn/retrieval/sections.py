"""The persona and working sections of a contribution, from the agent's projection.

The projection (cairn.store.projections) names claims, not text; here each entry is read
back from its claim, re-validated in the recall's snapshot (agent scope, active, no
pending clear: :func:`load_sections`), and annotated for the recall's moment with the
same temporal rules as query recall (cairn.retrieval.temporal): "since" and "until" for
what holds, "planned for" for a plan, the next occurrence of a recurring item. A claim
whose time is over leaves its section (an ended state, a past plan, a finished
recurrence: what is over belongs to "recent events" only when it is an event), and a
claim mentioning a suppressed topic is never shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from cairn.domain.claim import Claim, ClaimKind, Lifecycle, Origin
from cairn.domain.scope import Scope
from cairn.retrieval.rank import stage_of
from cairn.retrieval.temporal import eligibility
from cairn.retrieval.types import ItemOrigin, RecallItem
from cairn.store.beliefs import load_beliefs
from cairn.store.claims import load_claims
from cairn.store.projections import SECTION_ORDER, Section, load_projection

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Mapping, Sequence

    import apsw

    from cairn.domain.belief import Belief
    from cairn.domain.directive import TopicMatcher
    from cairn.domain.ids import AgentId
    from cairn.domain.metadata import RecallFilter

__all__ = ["SectionItems", "load_sections", "section_items"]


@attrs.frozen
class SectionItems:
    """One section as a contribution shows it: its items in the projection's order."""

    section: Section
    items: tuple[RecallItem, ...]


# As ranking labels them (cairn.retrieval.rank): who made the claim.
_ORIGINS = {
    Origin.USER: ItemOrigin.REMEMBERED_BY_USER,
    Origin.MODEL: ItemOrigin.REMEMBERED_BY_MODEL,
}


def _origin(claim: Claim) -> ItemOrigin:
    origin = _ORIGINS.get(claim.origin)
    if origin is not None:
        return origin
    return ItemOrigin.ASSISTANT_CITED if claim.from_assistant else ItemOrigin.EXTRACTED


def _day(moment: dt.datetime) -> str:
    return moment.date().isoformat()


def _annotated(
    claim: Claim, moment: dt.datetime, belief: Belief | None = None
) -> RecallItem | None:
    """The claim as a section line at ``moment``, or ``None`` when its time is over."""
    rule = eligibility(claim, moment)
    if not rule.eligible:
        return None
    temporal = claim.temporal
    qualifier = rule.qualifier
    at = None
    if claim.kind is ClaimKind.PLAN and qualifier == "previously planned":
        return None  # a past plan is no longer ahead
    if claim.kind is ClaimKind.RECURRING:
        if rule.at is None:
            return None  # its window has ended
        at = rule.at.isoformat()
    elif claim.kind is ClaimKind.EVENT:
        when = temporal.valid_from if temporal is not None else None
        at = (when or claim.evidence_at or moment).isoformat()
    elif claim.kind is not ClaimKind.PLAN and temporal is not None:
        spans = []
        if temporal.valid_from is not None:
            spans.append(f"since {_day(temporal.valid_from)}")
        if temporal.valid_until is not None:
            spans.append(f"until {_day(temporal.valid_until)}")
        qualifier = ", ".join([*spans, *([qualifier] if qualifier else [])]) or None
    return RecallItem(
        id=claim.claim_id,
        kind=claim.kind.value,
        text=claim.text,
        score=0.0,
        source_refs=claim.source_event_ids,
        at=at,
        qualifier=qualifier,
        origin=_origin(claim),
        lifecycle=claim.lifecycle.value,
        stage=stage_of(claim, belief).value,
    )


def section_items(
    entries: Sequence[tuple[Section, int]],
    claims: Mapping[int, Claim],
    moment: dt.datetime,
    matcher: TopicMatcher | None = None,
    beliefs: Mapping[int, Belief] | None = None,
) -> tuple[SectionItems, ...]:
    """The non-empty sections, in :data:`SECTION_ORDER`, each in its stored order.

    ``claims`` holds the entries' claims that re-validated; an entry without one (its
    claim forgotten, archived or superseded since the rebuild) is left out.
    """
    grouped: dict[Section, list[RecallItem]] = {
        section: [] for section in SECTION_ORDER
    }
    for section, rowid in entries:
        claim = claims.get(rowid)
        if claim is None or (matcher and matcher.matches(claim.text)):
            continue
        item = _annotated(claim, moment, (beliefs or {}).get(rowid))
        if item is not None:
            grouped[section].append(item)
    return tuple(
        SectionItems(section, tuple(items))
        for section, items in grouped.items()
        if items
    )


def load_sections(
    connection: apsw.Connection,
    agent_id: AgentId,
    moment: dt.datetime,
    matcher: TopicMatcher | None = None,
    recall_filter: RecallFilter | None = None,
) -> tuple[SectionItems, ...]:
    """The agent's sections at ``moment``, read in the caller's snapshot: the projection's
    entries (one primary-key range), then their claims by rowid, re-validated (and
    with ``recall_filter`` only those it keeps: a filtered recall shows nothing else)."""
    entries = load_projection(connection, agent_id)
    if not entries:
        return ()
    claims = load_claims(
        connection,
        agent_id,
        [rowid for _, rowid in entries],
        (Scope.agent(),),
        (Lifecycle.ACTIVE,),
        recall_filter,
    )
    # The stage labels a section line as it does an item ("not confirmed lately").
    return section_items(
        entries, claims, moment, matcher, load_beliefs(connection, claims)
    )
