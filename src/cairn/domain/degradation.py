"""Why a recall answered with less than it could: the one vocabulary of degradations.

The query-embedding gateway (``cairn.providers.gateway``) says why a query has no vector
with these values, and recall's manifest (``cairn.retrieval.types.Manifest``) carries them
unchanged, so no layer maps one name to another.
"""

from __future__ import annotations

import enum

__all__ = ["Degradation"]


class Degradation(enum.StrEnum):
    EMBEDDING_TIMEOUT = "embedding_timeout"
    """The query embedding missed its adaptive deadline."""
    BREAKER_OPEN = "breaker_open"
    """The query embedder's circuit breaker is open: no call was made."""
    VECTOR_UNAVAILABLE = "vector_unavailable"
    """No query vector (the provider failed) or no projection to search."""
    CANDIDATE_BUDGET_EXHAUSTED = "candidate_budget_exhausted"
    """Even the rarest query term was too common for the lexical posting budget."""
    REINDEXING = "reindexing"
    """The projection is being (re-)built for the active embedding identity."""
    VECTOR_PENDING = "vector_pending"
    """The answer was due before the vector side (query embedding, vector scan) was done:
    it is ranked from the lexical lists (a ``partial`` recall), and the complete result
    is stored under the recall's request ID for ``fetch_recall``."""
    QUERY_ANALYSIS_OFFLINE = "query_analysis_offline"
    """The text model's query contract missed its budget, failed or its breaker is open:
    the recall used the offline query analysis alone."""
