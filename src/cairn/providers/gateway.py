"""The query-embedding gateway: every recall's query embedding goes through here.

It bounds the call by an adaptive deadline per (provider, model) and guards it with a
circuit breaker per (agent, provider, model) (architecture section 8). A miss, a transport
failure or an open breaker is not an error for recall: it answers without a vector and says
why, and recall carries on with lexical and evidence candidates
(tests/providers/test_gateway.py). Batch embedding, warm-up and dimension discovery never
pass through the breaker.
"""

from __future__ import annotations

import enum

import attrs
import trio

from cairn.errors import ProviderError
from cairn.providers.embedding import EmbeddingProvider, Vectors
from cairn.providers.http.breaker import AbandonReason, CircuitBreaker, FailureKind
from cairn.providers.http.config import MAX_QUERY_CODE_POINTS
from cairn.providers.http.deadline import AdaptiveDeadline

__all__ = ["QueryEmbedding", "QueryEmbeddingGateway", "QueryOutcome"]


class QueryOutcome(enum.StrEnum):
    OK = "ok"
    TIMEOUT = "embedding_timeout"
    BREAKER_OPEN = "breaker_open"
    FAILED = "vector_unavailable"


@attrs.frozen
class QueryEmbedding:
    vector: Vectors | None
    outcome: QueryOutcome


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

    def _keys(self, agent_id: str) -> tuple[tuple[str, str], tuple[str, str, str]]:
        identity = self.embedder.identity
        return (identity.provider, identity.model), (
            agent_id,
            identity.provider,
            identity.model,
        )

    def breaker(self, agent_id: str) -> CircuitBreaker:
        _, key = self._keys(agent_id)
        breaker = self._breakers.get(key)
        if breaker is None:
            breaker = self._breakers[key] = CircuitBreaker(
                failure_threshold=self.failure_threshold,
                window_s=self.window_s,
                cooldown_s=self.cooldown_s,
            )
        return breaker

    def deadline(self) -> AdaptiveDeadline:
        key, _ = self._keys("")
        deadline = self._deadlines.get(key)
        if deadline is None:
            deadline = self._deadlines[key] = AdaptiveDeadline(
                floor_s=self.deadline_floor_s, ceiling_s=self.deadline_ceiling_s
            )
        return deadline

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
        breaker = self.breaker(agent_id)
        if not breaker.allow():
            await trio.lowlevel.checkpoint()
            return QueryEmbedding(None, QueryOutcome.BREAKER_OPEN)
        deadline = self.deadline()
        started = trio.current_time()
        try:
            with trio.move_on_after(deadline.timeout_s()) as deadline_scope:
                vector = await self.embedder.embed_query(text[:MAX_QUERY_CODE_POINTS])
        except ProviderError:
            breaker.record_failure(FailureKind.TRANSPORT)
            return QueryEmbedding(None, QueryOutcome.FAILED)
        except BaseException:
            breaker.record_abandoned(AbandonReason.CANCELLED)
            raise
        if deadline_scope.cancelled_caught:
            deadline.record_miss()
            breaker.record_failure(FailureKind.DEADLINE)
            return QueryEmbedding(None, QueryOutcome.TIMEOUT)
        deadline.record_success(trio.current_time() - started)
        breaker.record_success()
        return QueryEmbedding(vector, QueryOutcome.OK)
