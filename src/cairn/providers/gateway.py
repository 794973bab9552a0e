"""The query-embedding gateway: every recall's query embedding goes through here.

It bounds the call by an adaptive deadline per (provider, model) and guards it with a
circuit breaker per (agent, provider, model) (architecture section 8). A miss, a transport
failure or an open breaker is not an error for recall: it answers without a vector and says
why, and recall carries on with lexical and evidence candidates
(tests/providers/test_gateway.py). Batch embedding, warm-up and dimension discovery never
pass through the breaker.
"""

from __future__ import annotations

import attrs
import trio

from cairn.domain.degradation import Degradation
from cairn.errors import ProviderError
from cairn.providers.embedding import EmbeddingProvider, Vectors
from cairn.providers.http.breaker import AbandonReason, CircuitBreaker, FailureKind
from cairn.providers.http.config import MAX_QUERY_CODE_POINTS
from cairn.providers.http.deadline import AdaptiveDeadline
from cairn.vectors.identity import EmbeddingIdentity

__all__ = ["QueryEmbedding", "QueryEmbeddingGateway"]


@attrs.frozen
class QueryEmbedding:
    """The query's vector, or none and the degradation that says why (recall's manifest
    carries it as is), and the identity of the model that made it.

    Recall searches a projection only if its identity equals ``identity``: a query embedded
    just before a config switch must not be compared with the new model's vectors.
    """

    vector: Vectors | None
    degradation: Degradation | None
    identity: EmbeddingIdentity


@attrs.define(eq=False)
class QueryEmbeddingGateway:
    embedder: EmbeddingProvider
    deadline_floor_s: float = 0.8
    deadline_ceiling_s: float = 2.0
    failure_threshold: int = 3
    window_s: float = 30.0
    cooldown_s: float = 30.0
    _deadlines: dict[tuple[str, str], AdaptiveDeadline] = attrs.field(factory=dict)
    _breakers: dict[tuple[str, str, str], CircuitBreaker] = attrs.field(factory=dict)

    def _keys(
        self, agent_id: str, identity: EmbeddingIdentity | None = None
    ) -> tuple[tuple[str, str], tuple[str, str, str]]:
        identity = identity or self.embedder.identity
        return (identity.provider, identity.model), (
            agent_id,
            identity.provider,
            identity.model,
        )

    def breaker(
        self, agent_id: str, identity: EmbeddingIdentity | None = None
    ) -> CircuitBreaker:
        _, key = self._keys(agent_id, identity)
        breaker = self._breakers.get(key)
        if breaker is None:
            breaker = self._breakers[key] = CircuitBreaker(
                failure_threshold=self.failure_threshold,
                window_s=self.window_s,
                cooldown_s=self.cooldown_s,
            )
        return breaker

    def deadline(self, identity: EmbeddingIdentity | None = None) -> AdaptiveDeadline:
        key, _ = self._keys("", identity)
        deadline = self._deadlines.get(key)
        if deadline is None:
            deadline = self._deadlines[key] = AdaptiveDeadline(
                floor_s=self.deadline_floor_s, ceiling_s=self.deadline_ceiling_s
            )
        return deadline

    def switch(self, embedder: EmbeddingProvider) -> None:
        """Serve queries with ``embedder`` from now on; a config switch clears all state."""
        self.embedder = embedder
        self.reset()

    def reset(self, agent_id: str | None = None) -> None:
        """Forget breaker state (config switch, agent clean-up or shutdown)."""
        if agent_id is None:
            self._breakers.clear()
            self._deadlines.clear()
            return
        for key in [key for key in self._breakers if key[0] == agent_id]:
            del self._breakers[key]

    async def embed_query(self, agent_id: str, text: str) -> QueryEmbedding:
        """The query's vector, or none and why. Cancellation propagates (never a failure)."""
        # One embedder for the whole call, even if a config switch lands meanwhile.
        embedder = self.embedder
        identity = embedder.identity
        breaker = self.breaker(agent_id, identity)
        if not breaker.allow():
            await trio.lowlevel.checkpoint()
            return QueryEmbedding(None, Degradation.BREAKER_OPEN, identity)
        deadline = self.deadline(identity)
        started = trio.current_time()
        try:
            with trio.move_on_after(deadline.timeout_s()) as deadline_scope:
                vector = await embedder.embed_query(text[:MAX_QUERY_CODE_POINTS])
        except ProviderError:
            breaker.record_failure(FailureKind.TRANSPORT)
            return QueryEmbedding(None, Degradation.VECTOR_UNAVAILABLE, identity)
        except BaseException:
            breaker.record_abandoned(AbandonReason.CANCELLED)
            raise
        if deadline_scope.cancelled_caught:
            deadline.record_miss()
            breaker.record_failure(FailureKind.DEADLINE)
            return QueryEmbedding(None, Degradation.EMBEDDING_TIMEOUT, identity)
        deadline.record_success(trio.current_time() - started)
        breaker.record_success()
        return QueryEmbedding(vector, None, identity)
