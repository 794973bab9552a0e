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

from cairn.domain.claim import Claim
from cairn.domain.evidence import EvidenceEvent
from cairn.domain.ids import AgentId
from cairn.domain.scope import Scope
from cairn.retrieval.keys import CandidateKey, CandidateKind
from cairn.store.claims import claims_citing, load_claims
from cairn.store.evidence import load_events
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


@attrs.frozen
class Candidates:
    """Validated candidates and, per source, the ranked candidate keys."""

    claims: dict[int, Claim]
    events: dict[int, EvidenceEvent]
    lists: dict[str, list[CandidateKey]]
    proposed: int
    lexical_exhausted: bool = False
    # Valid claims citing each candidate event: they join their evidence in the ranking.
    claims_by_event: dict[int, list[int]] = attrs.field(factory=dict)
    # Source turns of forgotten claims: never shown, but the other claims learned from
    # them still rank through them (forgetting a claim removes that claim only).
    hidden_events: frozenset[int] = frozenset()


@attrs.frozen
class ProposedLists:
    """Ranked keys per source before validation."""

    lists: dict[str, list[CandidateKey]]
    lexical_exhausted: bool = False


def lexical_candidates(
    lexical: LexicalSearcher, request: CandidateRequest
) -> ProposedLists:
    """Claim and event FTS lists (owner and scope inside the index)."""
    claim_result = lexical.search_claims(
        request.agent_id, request.terms, request.scopes, request.lexical_limit
    )
    event_result = lexical.search_events(
        request.agent_id, request.terms, request.lexical_limit
    )
    return ProposedLists(
        {
            "claim_fts": [CandidateKey.claim(hit.rowid) for hit in claim_result.hits],
            "event_fts": [CandidateKey.event(hit.rowid) for hit in event_result.hits],
        },
        claim_result.exhausted or event_result.exhausted,
    )


def vector_candidates(
    index: ExactVectorIndex, request: CandidateRequest
) -> ProposedLists:
    """Claim and event lists from one exact search of the agent's projection."""
    if request.query_vector is None or not len(index):
        return ProposedLists({})
    claim_vector: list[CandidateKey] = []
    event_vector: list[CandidateKey] = []
    for key, _similarity in index.search(
        request.query_vector, request.vector_limit * 2
    ):
        candidate = CandidateKey.from_vector(VectorKey.decode(key))
        if candidate.kind is CandidateKind.EVENT:
            event_vector.append(candidate)
        else:
            claim_vector.append(candidate)
    return ProposedLists(
        {
            "claim_vector": claim_vector[: request.vector_limit],
            "event_vector": event_vector[: request.vector_limit],
        }
    )


def validate_candidates(
    connection: apsw.Connection, request: CandidateRequest, *proposed: ProposedLists
) -> Candidates:
    """Reload every proposed row through owner/scope/lifecycle-checked SQL; drop the rest."""
    lists: dict[str, list[CandidateKey]] = {}
    for part in proposed:
        lists.update(part.lists)
    keys = {key for ranked in lists.values() for key in ranked}
    claim_rowids = {key.rowid for key in keys if key.kind is CandidateKind.CLAIM}
    event_rowids = {key.rowid for key in keys if key.kind is CandidateKind.EVENT}
    events = load_events(connection, request.agent_id, event_rowids)
    citing = claims_citing(connection, request.agent_id, events)
    claim_rowids.update(rowid for rowids in citing.values() for rowid in rowids)
    claims = load_claims(connection, request.agent_id, claim_rowids, request.scopes)
    valid = {CandidateKey.claim(rowid) for rowid in claims} | {
        CandidateKey.event(rowid) for rowid in events
    }
    for name, ranked in lists.items():
        lists[name] = [key for key in ranked if key in valid]
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
    )
