"""Ranking: temporal eligibility, weighted fusion, grouping by evidence, succession,
de-duplication.

A claim and the turn it was extracted from say the same thing twice. Ranked as separate
items they split the top positions between them; so fusion scores are pooled per source
event: a claim lends its score to the event it cites, and the group (claims first, then
the verbatim turn) ranks by the pooled score. Measured on LoCoMo dev in design/recall.md.

A question about something that changed ("where does Mei live now?") usually matches the
old value's words best. So a candidate that is history at the recall's moment passes its
group's score to the value that replaced it (``Candidates.successors``), whose group ranks
first; a group that states only history ranks at :data:`HISTORY_WEIGHT` of its score, and
its items say they are history and until when they held (tests/retrieval/test_current_value.py, tests/retrieval/test_rank_succession.py).
"""

from __future__ import annotations

import datetime as dt
import unicodedata
from typing import TYPE_CHECKING

import attrs

from cairn.domain.belief import Belief, Stage, initial_stage
from cairn.domain.claim import Claim, Lifecycle, Origin
from cairn.domain.evidence import Role
from cairn.retrieval.candidates import Candidates
from cairn.retrieval.fusion import RRF_K, weighted_rrf
from cairn.retrieval.keys import CandidateKind
from cairn.retrieval.succession import attribute_of, standing_at
from cairn.retrieval.temporal import eligibility
from cairn.retrieval.types import ItemOrigin, RecallItem, Standing

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cairn.domain.evidence import EvidenceEvent
    from cairn.domain.metadata import Metadata
    from cairn.retrieval.keys import CandidateKey

__all__ = [
    "BELIEF_BOUNDS",
    "CONFLICTING",
    "HISTORY_WEIGHT",
    "IMPORTANCE_WEIGHT",
    "belief_factor",
    "importance_factor",
    "rank_candidates",
]

# A group stating only superseded values still answers "where did she live before?", but
# below what holds now.
HISTORY_WEIGHT = 0.5
# The qualifier of a claim in an open conflict (cairn.store.conflicts): another claim of
# its scope says otherwise, and the user has not yet said which holds.
CONFLICTING = "conflicting"

# The learning layer's belief moves a claim's score by at most a fifth either way, so
# neither a fresh claim nor a much-used one decides a ranking by trust alone.
BELIEF_BOUNDS = (0.8, 1.2)
# A claim with no support for a long time ranks a little below an equal fresh one.
DECAYING_WEIGHT = 0.9
# A caller's importance (0 to 1, cairn.domain.metadata) moves a score by at most a tenth
# either way: it orders otherwise-equal memories, never overturns what the query found.
# A memory without one ranks as 0.5 would, exactly as before importance existed.
IMPORTANCE_WEIGHT = 0.2


def importance_factor(metadata: Metadata | None) -> float:
    """``1 + IMPORTANCE_WEIGHT * (importance - 0.5)``: 0.9 to 1.1, 1 without one."""
    if metadata is None or metadata.importance is None:
        return 1.0
    return 1 + IMPORTANCE_WEIGHT * (metadata.importance - 0.5)


def belief_factor(claim: Claim, belief: Belief | None) -> float:
    """``1 + (confidence - prior) / 2``, times :data:`DECAYING_WEIGHT` for a decaying
    claim, bounded by :data:`BELIEF_BOUNDS`: a claim nothing has confirmed or contradicted
    (its posterior is its prior) ranks exactly as without learning. Usefulness is not in
    it: most of it is retrieval support, and ranking by what ranking selected before
    would feed the ranking its own opinion (design/recall.md, "Belief in scoring")."""
    if belief is None:
        return 1.0
    factor = 1 + (belief.confidence - claim.confidence) / 2
    if belief.stage is Stage.DECAYING:
        factor *= DECAYING_WEIGHT
    low, high = BELIEF_BOUNDS
    return min(max(factor, low), high)


def stage_of(claim: Claim, belief: Belief | None) -> Stage:
    """The belief's stage; before the learning pass has looked, the one it would start
    at (superseded for a superseded claim)."""
    if belief is not None:
        return belief.stage
    if claim.lifecycle is Lifecycle.SUPERSEDED:
        return Stage.SUPERSEDED
    return initial_stage(claim.origin, claim.from_assistant)


_CLAIM_ORIGINS = {
    Origin.USER: ItemOrigin.REMEMBERED_BY_USER,
    Origin.MODEL: ItemOrigin.REMEMBERED_BY_MODEL,
}
_EVENT_ORIGINS = {
    Role.USER: ItemOrigin.USER_SAID,
    Role.ASSISTANT: ItemOrigin.ASSISTANT_SAID,
}


def _normal(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _iso_date(moment: dt.datetime) -> str:
    return moment.date().isoformat()


@attrs.define
class _Group:
    score: float = 0.0
    # The best score of a history group whose value this group's claim replaced.
    inherited: float = 0.0
    claims: list[RecallItem] = attrs.field(factory=list)
    evidence: RecallItem | None = None
    event_rowid: int | None = None

    def order_key(self, key: str) -> tuple[float, bool, str]:
        """Best first; at equal scores, what holds now before what it replaced. A group
        stating only history ranks at :data:`HISTORY_WEIGHT` of its score, a group whose
        claim replaced a found one at least at that one's."""
        standings = [item.standing for item in self.claims]
        if self.evidence is not None:
            standings.append(self.evidence.standing)
        history = [standing is Standing.HISTORY for standing in standings]
        only_history = bool(history) and all(history)
        own = self.score * (HISTORY_WEIGHT if only_history else 1.0)
        return (-max(own, self.inherited), any(history), key)


@attrs.define
class _Ranking:
    candidates: Candidates
    moment: dt.datetime
    as_of: bool
    groups: dict[str, _Group] = attrs.field(factory=dict)
    placed: dict[int, str] = attrs.field(factory=dict)  # claim rowid -> group key

    def claim_item(self, claim: Claim, score: float) -> RecallItem | None:
        rule = eligibility(claim, self.moment)
        if not rule.eligible:
            return None
        standing = standing_at(claim, self.moment, as_of=self.as_of)
        temporal = claim.temporal
        at = None
        if temporal is not None and temporal.valid_from is not None:
            at = temporal.valid_from.isoformat()
        if rule.at is not None:  # a recurring item's next occurrence
            at = rule.at.isoformat()
        qualifier = rule.qualifier
        until = None if temporal is None else temporal.valid_until
        if standing is Standing.HISTORY:
            until = claim.superseded_at or until
            qualifier = "previously" + (
                f", until {_iso_date(until)}" if until is not None else ""
            )
        if claim.conflicting:
            # Another claim says otherwise and the user has not said which holds.
            qualifier = (
                CONFLICTING if qualifier is None else f"{qualifier}; {CONFLICTING}"
            )
        origin = _CLAIM_ORIGINS.get(claim.origin)
        if origin is None:
            origin = (
                ItemOrigin.ASSISTANT_CITED
                if claim.from_assistant
                else ItemOrigin.EXTRACTED
            )
        belief = self.candidates.beliefs.get(claim.rowid)
        return RecallItem(
            id=claim.claim_id,
            kind=claim.kind.value,
            text=claim.text,
            score=score * rule.weight * belief_factor(claim, belief),
            source_refs=claim.source_event_ids,
            at=at,
            qualifier=qualifier,
            origin=origin,
            lifecycle=claim.lifecycle.value,
            standing=standing,
            valid_until=None if until is None else until.isoformat(),
            stage=stage_of(claim, belief).value,
            metadata=claim.metadata,
        )

    def place_claim(self, rowid: int, score: float) -> _Group | None:
        """Put claim ``rowid`` in its group (once); the group, or None if ineligible."""
        if rowid in self.placed:
            return self.groups[self.placed[rowid]]
        claim = self.candidates.claims[rowid]
        item = self.claim_item(claim, score)
        if item is None:
            return None
        anchor = claim.source_event_ids[0] if claim.source_event_ids else claim.claim_id
        group = self.groups.setdefault(anchor, _Group())
        group.score += item.score
        group.claims.append(item)
        self.placed[rowid] = anchor
        return group

    def event_item(self, event: EvidenceEvent, score: float) -> RecallItem:
        speaker = f"{event.speaker}: " if event.speaker else ""
        return RecallItem(
            id=event.event_id,
            kind="evidence",
            text=speaker + event.text,
            score=score,
            source_refs=(event.event_id,),
            at=event.occurred_at.isoformat(),
            origin=_EVENT_ORIGINS.get(event.role, ItemOrigin.RUNTIME),
            metadata=event.metadata,
        )

    def mark_evidence(self, group: _Group) -> None:
        """A turn stands as its claims do: history if it states a superseded value
        (partly, when it also states a current one), current if it backs a current
        value of an attribute, unmarked otherwise."""
        if group.evidence is None or group.event_rowid is None:
            return
        candidates = self.candidates
        standings: list[tuple[Standing | None, Claim]] = []
        for rowid in candidates.claims_by_event.get(group.event_rowid, ()):
            claim = candidates.claims[rowid]
            if attribute_of(claim) is not None:
                standings.append(
                    (standing_at(claim, self.moment, as_of=self.as_of), claim)
                )
        ended = [
            claim.superseded_at
            for standing, claim in standings
            if standing is Standing.HISTORY and claim.superseded_at is not None
        ]
        history = any(standing is Standing.HISTORY for standing, _ in standings)
        current = any(standing is Standing.CURRENT for standing, _ in standings)
        if history:
            until = min(ended) if ended else None
            when = "" if until is None else f" {_iso_date(until)}"
            group.evidence = attrs.evolve(
                group.evidence,
                standing=Standing.HISTORY,
                valid_until=None if until is None else until.isoformat(),
                qualifier=(
                    f"partly superseded{' on' + when if when else ''}"
                    if current
                    else f"previously{', until' + when if when else ''}"
                ),
            )
        elif current or group.event_rowid in candidates.anchors.values():
            group.evidence = attrs.evolve(group.evidence, standing=Standing.CURRENT)


def rank_candidates(
    candidates: Candidates,
    now: dt.datetime,
    weights: Mapping[str, float],
    rrf_k: int = RRF_K,
    *,
    as_of: bool = False,
    limit: int | None = None,
    off_focus: float = 1.0,
    sessions_cap: int | None = None,
) -> list[RecallItem]:
    """Ranked items at ``now`` (the recall's ``as_of`` moment when ``as_of``), at most
    ``limit`` of them. When the question names entities, a turn neither said by nor
    speaking of them ranks at ``off_focus`` of its score; with ``sessions_cap``, no session's evidence beyond that many
    groups ranks above another session's (a list question wants coverage)."""
    ranking = _Ranking(candidates, now, as_of)
    groups = ranking.groups
    scores = _fused_scores(candidates, weights, rrf_k)
    event_groups: list[tuple[int, _Group]] = []
    for key, score in scores.items():
        if score <= 0:
            continue
        rowid = key.rowid
        if key.kind is CandidateKind.EVENT:
            event = candidates.events[rowid]
            group = groups.setdefault(event.event_id, _Group())
            group.score += score
            group.event_rowid = rowid
            if rowid not in candidates.hidden_events:
                group.evidence = ranking.event_item(event, score)
            event_groups.append((rowid, group))
            continue
        ranking.place_claim(rowid, score)
    # Claims ride with the evidence they cite: found through it, ranked with it.
    for event_rowid, _group in event_groups:
        for claim_rowid in candidates.claims_by_event.get(event_rowid, ()):
            ranking.place_claim(claim_rowid, 0.0)
    _rank_successors(ranking)
    focus = candidates.focus_events
    for group in groups.values():
        ranking.mark_evidence(group)
        if (
            focus is not None
            and group.event_rowid is not None
            and group.event_rowid not in focus
        ):
            group.score *= off_focus
    ordered = sorted((group.order_key(key), group) for key, group in groups.items())
    if sessions_cap is not None:
        ordered = _covering(ordered, candidates, sessions_cap)
    items: list[RecallItem] = []
    seen: set[str] = set()
    for (negative_score, _, _), group in ordered:
        members = sorted(
            group.claims,
            key=lambda item: (item.standing is Standing.HISTORY, -item.score, item.id),
        )
        if group.evidence is not None:
            members.append(group.evidence)
        for item in members:
            fingerprint = _normal(item.text)
            if fingerprint in seen:
                continue
            seen.add(fingerprint)
            items.append(attrs.evolve(item, score=round(-negative_score, 6)))
            if limit is not None and len(items) >= limit:
                return items
    return items


def _covering(
    ordered: list[tuple[tuple[float, bool, str], _Group]],
    candidates: Candidates,
    cap: int,
) -> list[tuple[tuple[float, bool, str], _Group]]:
    """``ordered`` with each session's groups past the first ``cap`` moved after all
    others, in their order (groups with no turn of their own keep their place)."""
    seen: dict[str, int] = {}
    first: list[tuple[tuple[float, bool, str], _Group]] = []
    later: list[tuple[tuple[float, bool, str], _Group]] = []
    for entry in ordered:
        rowid = entry[1].event_rowid
        event = None if rowid is None else candidates.events.get(rowid)
        if event is None:
            first.append(entry)
            continue
        count = seen.get(event.session_id, 0)
        seen[event.session_id] = count + 1
        (first if count < cap else later).append(entry)
    return first + later


# The claim lists are weighted low because a claim restates the turn it cites, which ranks
# beside it. A claim with no source turn (a remember) restates nothing: it is its own only
# record and ranks with the weights of evidence, or a query of its very words would leave
# it below turns that merely resemble the query (tests/retrieval/test_remembered_rank.py).
_SOURCELESS_WEIGHTS = {"claim_fts": "event_fts", "claim_vector": "event_vector"}


def _fused_scores(
    candidates: Candidates, weights: Mapping[str, float], rrf_k: int
) -> dict[CandidateKey, float]:
    scores = weighted_rrf(candidates.lists, weights, rrf_k)
    for name, evidence in _SOURCELESS_WEIGHTS.items():
        weight = weights.get(name, 1.0)
        if weight <= 0:  # a list turned off stays off
            continue
        extra = weights.get(evidence, 1.0) - weight
        for rank, key in enumerate(candidates.lists.get(name, ()), start=1):
            if not candidates.claims[key.rowid].source_event_ids:
                scores[key] += extra / (rrf_k + rank)
    for key in scores:
        row = (
            candidates.events.get(key.rowid)
            if key.kind is CandidateKind.EVENT
            else candidates.claims.get(key.rowid)
        )
        if row is not None and row.metadata is not None:
            scores[key] *= importance_factor(row.metadata)
    return scores


def _rank_successors(ranking: _Ranking) -> None:
    """Each value that replaced a candidate history claim joins the ranking with at least
    the score of the group the history was found in, with its own first source turn."""
    candidates = ranking.candidates
    for history_rowid, successor_rowid in candidates.successors.items():
        history_key = ranking.placed.get(history_rowid)
        if history_key is None:
            continue
        found_at = ranking.groups[history_key].score
        group = ranking.place_claim(successor_rowid, 0.0)
        if group is None:
            continue
        group.inherited = max(group.inherited, found_at)
        anchor = candidates.anchors.get(successor_rowid)
        if (
            group.evidence is None
            and anchor is not None
            and anchor not in candidates.hidden_events
        ):
            group.event_rowid = anchor
            group.evidence = ranking.event_item(candidates.events[anchor], 0.0)
