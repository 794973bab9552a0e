"""Candidate collection: lexical and vector lists, then authoritative re-validation.

Synchronous; the runtime runs the lexical and vector searches in parallel threads and
the validation in a reader thread. Vector hits are never
trusted: every claim or event a list proposes is re-loaded through owner- and scope-checked
SQL, and anything that does not come back is discarded before ranking
(tests/retrieval/test_isolation.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs
import numpy as np
import numpy.typing as npt

from cairn.domain.belief import Belief
from cairn.domain.claim import Claim, Lifecycle
from cairn.domain.evidence import EvidenceEvent
from cairn.domain.ids import AgentId
from cairn.domain.metadata import RecallFilter
from cairn.domain.scope import Scope
from cairn.retrieval.keys import CandidateKey, CandidateKind
from cairn.retrieval.succession import attribute_of, standing_at
from cairn.retrieval.types import Standing
from cairn.store.beliefs import load_beliefs
from cairn.store.claims import claims_citing, first_sources, load_claims
from cairn.store.evidence import load_events
from cairn.store.succession import values_at
from cairn.vectors.keys import VectorKey

if TYPE_CHECKING:
    import apsw

    from cairn.store.search import LexicalSearcher
    from cairn.vectors.index import ExactVectorIndex

__all__ = [
    "CandidateRequest",
    "Candidates",
    "ProposedLists",
    "lexical_candidates",
    "validate_candidates",
    "validate_with_refill",
    "vector_candidates",
]


@attrs.frozen
class CandidateRequest:
    agent_id: AgentId
    terms: Sequence[str]
    scopes: Sequence[Scope]
    query_vector: npt.NDArray[np.float32] | None
    lexical_limit: int
    vector_limit: int
    now: dt.datetime
    # Recall what held at this moment instead of now: later turns and values are unseen.
    as_of: dt.datetime | None = None
    # How many items the caller wants: the vector list refills until it has them, asking
    # one search for at most ``refill_cap`` hits.
    want: int = 10
    refill_cap: int = 800
    # Turns classified as noise (cairn.ingestion.classify) are candidates only if asked.
    include_noise: bool = False
    # The caller's filter (tags, kinds, time): applied in every list's SQL before its
    # LIMIT and again in validation, so a vector hit it refuses never ranks.
    recall_filter: RecallFilter | None = None

    @property
    def moment(self) -> dt.datetime:
        return self.now if self.as_of is None else self.as_of


@attrs.frozen
class Candidates:
    """Validated candidates and, per source, the ranked candidate keys."""

    claims: dict[int, Claim]
    events: dict[int, EvidenceEvent]
    lists: dict[str, list[CandidateKey]]
    proposed: int
    lexical_exhausted: bool = False
    # The vector list stayed short of what the caller wants after refilling to the cap.
    vector_exhausted: bool = False
    # Valid claims citing each candidate event: they join their evidence in the ranking.
    claims_by_event: dict[int, list[int]] = attrs.field(factory=dict)
    # Source turns of forgotten claims: never shown, but the other claims learned from
    # them still rank through them (forgetting a claim removes that claim only).
    hidden_events: frozenset[int] = frozenset()
    # A candidate claim that is history at the recall's moment -> the claim holding its
    # attribute then, and that claim's first source turn (loaded into ``events``): the
    # current value ranks where the query found the old one.
    successors: dict[int, int] = attrs.field(factory=dict)
    anchors: dict[int, int] = attrs.field(factory=dict)
    # The learning layer's belief of each claim that has one (cairn.store.beliefs).
    beliefs: dict[int, Belief] = attrs.field(factory=dict)
    # When the question names entities the agent knows: the candidate turns said by or
    # speaking of them (cairn.retrieval.entity_lists); None when it names none.
    focus_events: frozenset[int] | None = None


@attrs.frozen
class ProposedLists:
    """Ranked keys per source before validation; for the vector source, how many hits
    were asked for (``searched``) and how many came back (fewer: the index is spent)."""

    lists: dict[str, list[CandidateKey]]
    lexical_exhausted: bool = False
    searched: int = 0
    returned: int = 0


def lexical_candidates(
    lexical: LexicalSearcher, request: CandidateRequest
) -> ProposedLists:
    """Claim and event FTS lists (owner and scope inside the index)."""
    claim_result = lexical.search_claims(
        request.agent_id,
        request.terms,
        request.scopes,
        request.lexical_limit,
        recall_filter=request.recall_filter,
    )
    event_result = lexical.search_events(
        request.agent_id,
        request.terms,
        request.lexical_limit,
        noise=request.include_noise,
        recall_filter=request.recall_filter,
    )
    return ProposedLists(
        {
            "claim_fts": [CandidateKey.claim(hit.rowid) for hit in claim_result.hits],
            "event_fts": [CandidateKey.event(hit.rowid) for hit in event_result.hits],
        },
        claim_result.exhausted or event_result.exhausted,
    )


def vector_candidates(
    index: ExactVectorIndex, request: CandidateRequest, count: int | None = None
) -> ProposedLists:
    """Claim and event lists from one exact search of the agent's projection, oversampled
    (``count`` hits, by default twice the list size) for the filtering that follows."""
    if request.query_vector is None or not len(index):
        return ProposedLists({})
    count = request.vector_limit * 2 if count is None else count
    claim_vector: list[CandidateKey] = []
    event_vector: list[CandidateKey] = []
    hits = index.search(request.query_vector, count)
    for key, _similarity in hits:
        candidate = CandidateKey.from_vector(VectorKey.decode(key))
        if candidate.kind is CandidateKind.EVENT:
            event_vector.append(candidate)
        else:
            claim_vector.append(candidate)
    return ProposedLists(
        {"claim_vector": claim_vector, "event_vector": event_vector},
        searched=count,
        returned=len(hits),
    )


def validate_candidates(
    connection: apsw.Connection, request: CandidateRequest, *proposed: ProposedLists
) -> Candidates:
    """Reload every proposed row through owner/scope/lifecycle-checked SQL; drop the rest.

    Claims come back active or superseded: a superseded one is history, shown as such
    and below the value that replaced it, which joins the candidates (``successors``).
    """
    lists: dict[str, list[CandidateKey]] = {}
    for part in proposed:
        lists.update(part.lists)
    keys = {key for ranked in lists.values() for key in ranked}
    claim_rowids = {key.rowid for key in keys if key.kind is CandidateKind.CLAIM}
    event_rowids = {key.rowid for key in keys if key.kind is CandidateKind.EVENT}
    events = load_events(
        connection,
        request.agent_id,
        event_rowids,
        noise=request.include_noise,
        recall_filter=request.recall_filter,
    )
    if request.as_of is not None:
        events = {
            rowid: event
            for rowid, event in events.items()
            if event.occurred_at <= request.as_of
        }
    citing = claims_citing(connection, request.agent_id, events)
    claim_rowids.update(rowid for rowids in citing.values() for rowid in rowids)
    claims = _recallable(
        request,
        load_claims(
            connection,
            request.agent_id,
            claim_rowids,
            request.scopes,
            _LIFECYCLES,
            request.recall_filter,
        ),
    )
    successors, anchors = _successors(connection, request, claims, events)
    valid = {CandidateKey.claim(rowid) for rowid in claims} | {
        CandidateKey.event(rowid) for rowid in events
    }
    for name, ranked in lists.items():
        limit = request.vector_limit if name.endswith("_vector") else None
        lists[name] = [key for key in ranked if key in valid][:limit]
    return Candidates(
        claims,
        events,
        lists,
        len(claim_rowids) + len(event_rowids),
        lexical_exhausted=any(part.lexical_exhausted for part in proposed),
        claims_by_event={
            event: [rowid for rowid in rowids if rowid in claims]
            for event, rowids in citing.items()
        },
        successors=successors,
        anchors=anchors,
        beliefs=load_beliefs(connection, claims),
    )


_LIFECYCLES = (Lifecycle.ACTIVE, Lifecycle.SUPERSEDED)


def _recallable(
    request: CandidateRequest, claims: dict[int, Claim]
) -> dict[int, Claim]:
    """Claims as they stood at the recall's moment; with ``as_of``, none said later."""
    as_of = request.as_of is not None
    return {
        rowid: claim
        for rowid, claim in claims.items()
        if standing_at(claim, request.moment, as_of=as_of) is not None
    }


def _successors(
    connection: apsw.Connection,
    request: CandidateRequest,
    claims: dict[int, Claim],
    events: dict[int, EvidenceEvent],
) -> tuple[dict[int, int], dict[int, int]]:
    """For each history claim, the claim holding its attribute at the recall's moment,
    loaded into ``claims`` (owner and scope checked) with its first source turn loaded
    into ``events``."""
    moment = request.moment
    as_of = request.as_of is not None
    history: dict[int, tuple[str, str, str, str | None]] = {}
    for rowid, claim in claims.items():
        attribute = attribute_of(claim)
        if attribute is not None and (
            standing_at(claim, moment, as_of=as_of) is Standing.HISTORY
        ):
            history[rowid] = attribute
    if not history:
        return {}, {}
    holders = values_at(connection, request.agent_id, history.values(), moment)
    missing = set(holders.values()) - set(claims)
    if missing:
        claims.update(
            _recallable(
                request,
                load_claims(
                    connection,
                    request.agent_id,
                    missing,
                    request.scopes,
                    _LIFECYCLES,
                    request.recall_filter,
                ),
            )
        )
    successors = {
        rowid: holders[attribute]
        for rowid, attribute in history.items()
        if holders.get(attribute) in claims and holders[attribute] != rowid
    }
    first = first_sources(connection, set(successors.values()))
    unloaded = set(first.values()) - set(events)
    if unloaded:
        loaded = load_events(
            connection,
            request.agent_id,
            unloaded,
            noise=request.include_noise,
            recall_filter=request.recall_filter,
        )
        events.update(
            (rowid, event)
            for rowid, event in loaded.items()
            if request.as_of is None or event.occurred_at <= request.as_of
        )
    anchors = {claim: event for claim, event in first.items() if event in events}
    return successors, anchors


def validate_with_refill(
    connection: apsw.Connection,
    request: CandidateRequest,
    lexical: ProposedLists,
    vector: ProposedLists | None,
    index: ExactVectorIndex | None,
) -> Candidates:
    """Validate, and while filtering (scope, lifecycle, forgetting, noise) leaves the vector
    lists short of ``request.want`` and the index has more, search again with twice the
    hits, up to ``request.refill_cap``, with the same query vector; short at the cap,
    the candidates say ``vector_exhausted``. Bounded: at most log2(cap / first) more
    searches, each in this (reader) thread."""
    parts = [lexical] if vector is None else [lexical, vector]
    candidates = validate_candidates(connection, request, *parts)
    if vector is None or index is None:
        return candidates
    while (
        vector.searched
        and vector.returned >= vector.searched
        and _vector_found(candidates) < request.want
    ):
        if vector.searched >= request.refill_cap:
            return attrs.evolve(candidates, vector_exhausted=True)
        vector = vector_candidates(
            index, request, min(vector.searched * 2, request.refill_cap)
        )
        candidates = validate_candidates(connection, request, lexical, vector)
    return candidates


def _vector_found(candidates: Candidates) -> int:
    return len(candidates.lists.get("claim_vector", ())) + len(
        candidates.lists.get("event_vector", ())
    )
