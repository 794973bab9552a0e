"""Candidate collection: lexical and vector lists, then authoritative re-validation.

Runs synchronously in one reader thread over one read snapshot. Vector hits are never
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
from cairn.store.claims import load_claims
from cairn.store.evidence import load_events

if TYPE_CHECKING:
    from cairn.store.search import LexicalSearcher
    from cairn.vectors.index import ExactVectorIndex

__all__ = [
    "EVENT_KEY_BASE",
    "CandidateRequest",
    "Candidates",
    "claim_key",
    "collect_candidates",
    "event_key",
]

# Claims and events share one vector projection per agent; event keys live above this base.
EVENT_KEY_BASE = 1 << 40


def claim_key(rowid: int) -> int:
    return rowid


def event_key(rowid: int) -> int:
    return EVENT_KEY_BASE + rowid


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
    """Validated candidates and, per source, the ranked keys (``c:<rowid>``/``e:<rowid>``)."""

    claims: dict[int, Claim]
    events: dict[int, EvidenceEvent]
    lists: dict[str, list[str]]
    proposed: int
    lexical_exhausted: bool = False


def collect_candidates(
    lexical: LexicalSearcher,
    index: ExactVectorIndex | None,
    request: CandidateRequest,
) -> Candidates:
    connection = lexical.connection
    lists: dict[str, list[str]] = {}
    claim_rowids: set[int] = set()
    event_rowids: set[int] = set()

    claim_result = lexical.search_claims(
        request.agent_id, request.terms, request.scopes, request.lexical_limit
    )
    claim_hits = claim_result.hits
    lists["claim_fts"] = [f"c:{hit.rowid}" for hit in claim_hits]
    claim_rowids.update(hit.rowid for hit in claim_hits)
    event_result = lexical.search_events(
        request.agent_id, request.terms, request.lexical_limit
    )
    event_hits = event_result.hits
    lists["event_fts"] = [f"e:{hit.rowid}" for hit in event_hits]
    event_rowids.update(hit.rowid for hit in event_hits)

    if index is not None and request.query_vector is not None and len(index):
        claim_vector: list[str] = []
        event_vector: list[str] = []
        for key, _similarity in index.search(
            request.query_vector, request.vector_limit * 2
        ):
            if key >= EVENT_KEY_BASE:
                event_vector.append(f"e:{key - EVENT_KEY_BASE}")
                event_rowids.add(key - EVENT_KEY_BASE)
            else:
                claim_vector.append(f"c:{key}")
                claim_rowids.add(key)
        lists["claim_vector"] = claim_vector[: request.vector_limit]
        lists["event_vector"] = event_vector[: request.vector_limit]

    claims = load_claims(connection, request.agent_id, claim_rowids, request.scopes)
    events = load_events(connection, request.agent_id, event_rowids)
    valid = {f"c:{rowid}" for rowid in claims} | {f"e:{rowid}" for rowid in events}
    for name, keys in lists.items():
        lists[name] = [key for key in keys if key in valid]
    return Candidates(
        claims,
        events,
        lists,
        len(claim_rowids) + len(event_rowids),
        lexical_exhausted=claim_result.exhausted or event_result.exhausted,
    )
