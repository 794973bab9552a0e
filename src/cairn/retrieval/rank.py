"""Ranking: temporal eligibility, weighted fusion, grouping by evidence, de-duplication.

A claim and the turn it was extracted from say the same thing twice. Ranked as separate
items they split the top positions between them; so fusion scores are pooled per source
event: a claim lends its score to the event it cites, and the group (claims first, then
the verbatim turn) ranks by the pooled score. Measured on LoCoMo dev in design/recall.md.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

import attrs

from cairn.retrieval.fusion import RRF_K, weighted_rrf
from cairn.retrieval.keys import CandidateKind
from cairn.retrieval.temporal import eligibility
from cairn.retrieval.types import RecallItem

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Mapping

    from cairn.domain.claim import Claim
    from cairn.retrieval.candidates import Candidates

__all__ = ["rank_candidates"]


def _normal(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


@attrs.define
class _Group:
    score: float = 0.0
    claims: list[RecallItem] = attrs.field(factory=list)
    evidence: RecallItem | None = None


def _claim_item(claim: Claim, score: float, now: dt.datetime) -> RecallItem | None:
    rule = eligibility(claim, now)
    if not rule.eligible:
        return None
    temporal = claim.temporal
    at = None
    if temporal is not None and temporal.valid_from is not None:
        at = temporal.valid_from.isoformat()
    at = at if rule.at is None else rule.at.isoformat()
    return RecallItem(
        id=claim.claim_id,
        kind=claim.kind.value,
        text=claim.text,
        score=score * rule.weight,
        source_refs=claim.source_event_ids,
        at=at,
        qualifier=rule.qualifier,
    )


def rank_candidates(
    candidates: Candidates,
    now: dt.datetime,
    weights: Mapping[str, float],
    rrf_k: int = RRF_K,
) -> list[RecallItem]:
    scores = weighted_rrf(candidates.lists, weights, rrf_k)
    groups: dict[str, _Group] = {}
    placed: set[int] = set()
    event_groups: list[tuple[int, _Group]] = []
    for key, score in scores.items():
        if score <= 0:
            continue
        rowid = key.rowid
        if key.kind is CandidateKind.EVENT:
            event = candidates.events[rowid]
            speaker = f"{event.speaker}: " if event.speaker else ""
            group = groups.setdefault(event.event_id, _Group())
            group.score += score
            if rowid not in candidates.hidden_events:
                group.evidence = RecallItem(
                    id=event.event_id,
                    kind="evidence",
                    text=speaker + event.text,
                    score=score,
                    source_refs=(event.event_id,),
                    at=event.occurred_at.isoformat(),
                )
            event_groups.append((rowid, group))
            continue
        claim = candidates.claims[rowid]
        placed.add(rowid)
        item = _claim_item(claim, score, now)
        if item is None:
            continue
        anchor = claim.source_event_ids[0] if claim.source_event_ids else claim.claim_id
        group = groups.setdefault(anchor, _Group())
        group.score += item.score
        group.claims.append(item)
    # Claims ride with the evidence they cite: found through it, ranked with it.
    for event_rowid, group in event_groups:
        for claim_rowid in candidates.claims_by_event.get(event_rowid, ()):
            if claim_rowid in placed:
                continue
            placed.add(claim_rowid)
            item = _claim_item(candidates.claims[claim_rowid], 0.0, now)
            if item is not None:
                group.claims.append(item)
    ordered = sorted(groups.items(), key=lambda pair: (-pair[1].score, pair[0]))
    items: list[RecallItem] = []
    seen: set[str] = set()
    for _, group in ordered:
        members = sorted(group.claims, key=lambda item: (-item.score, item.id))
        if group.evidence is not None:
            members.append(group.evidence)
        for item in members:
            fingerprint = _normal(item.text)
            if fingerprint in seen:
                continue
            seen.add(fingerprint)
            items.append(attrs.evolve(item, score=round(group.score, 6)))
    return items
