"""The query-embedding gateway: every recall's query embedding goes through here.

It bounds the call by an adaptive deadline per (provider, model) and guards it with a
circuit breaker per (agent, provider, model) (architecture section 8). A miss, a transport
failure or an open breaker is not an error for recall: it answers without a vector and says
why, and recall carries on with lexical and evidence candidates
(tests/providers/test_gateway.py). Batch embedding, warm-up and dimension discovery never
pass through the breaker.

The gateway also warms the serving embedder (:meth:`QueryEmbeddingGateway.keep_warm`, run
by the runtime from open): a cold model loads in seconds, far past any query deadline, so it
is loaded and made to embed one short text before the first recall needs it. A query that
arrives while that warm-up is still running waits for it (at most ``warmup_wait_s``, outside
the deadline and the breaker: a cold start is not the provider failing), then is embedded
under the deadline as usual. A failed warm-up is logged and changes nothing else.
"""

from __future__ import annotations

import enum
import logging

import attrs
import trio

from cairn.domain.degradation import Degradation
from cairn.errors import ProviderError
from cairn.providers.embedding import EmbeddingProvider, Vectors
from cairn.providers.http.breaker import AbandonReason, CircuitBreaker, FailureKind
from cairn.providers.http.config import MAX_QUERY_CODE_POINTS
from cairn.providers.http.deadline import AdaptiveDeadline
from cairn.vectors.identity import EmbeddingIdentity

__all__ = ["QueryEmbedding", "QueryEmbeddingGateway", "WarmState"]

logger = logging.getLogger("cairn.providers")

# What the warm-up embeds: short, and in no way a user's text.
WARM_UP_TEXT = "warm-up"


class WarmState(enum.StrEnum):
    COLD = "cold"
    """No warm-up has run for the serving embedder (yet)."""
    WARMING = "warming"
    WARM = "warm"
    """Loaded and embedded one text: the next query pays only its own time."""
    FAILED = "failed"
    """The warm-up failed (logged): queries go through the deadline as they would cold."""


@attrs.define(eq=False)
class _WarmUp:
    """The warm-up of one embedder: its state, and an event set once it has ended."""

    embedder: EmbeddingProvider
    state: WarmState = WarmState.COLD
    ended: trio.Event = attrs.field(factory=trio.Event)


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
    warmup_wait_s: float = 10.0
    _deadlines: dict[tuple[str, str], AdaptiveDeadline] = attrs.field(factory=dict)
    _breakers: dict[tuple[str, str, str], CircuitBreaker] = attrs.field(factory=dict)
    _warm_up: _WarmUp = attrs.field(init=False)
    # Set by a switch: the warm-up loop warms the new embedder.
    _switched: trio.Event = attrs.field(factory=trio.Event, init=False)

    def __attrs_post_init__(self) -> None:
        self._warm_up = _WarmUp(self.embedder)

    @property
    def warm_state(self) -> WarmState:
        """Whether the serving embedder is warm (cold, warming, warm or failed)."""
        return self._warm_up.state

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
        self._warm_up = _WarmUp(embedder)
        self._switched.set()

    def reset(self, agent_id: str | None = None) -> None:
        """Forget breaker state (config switch, agent clean-up or shutdown)."""
        if agent_id is None:
            self._breakers.clear()
            self._deadlines.clear()
            return
        for key in [key for key in self._breakers if key[0] == agent_id]:
            del self._breakers[key]

    async def keep_warm(self) -> None:
        """Warm the serving embedder now and again after every switch; runs until
        cancelled (the runtime's life)."""
        while True:
            switched = self._switched = trio.Event()
            await self.warm_up()
            await switched.wait()

    async def warm_up(self) -> WarmState:
        """Load the serving embedder and embed one short text; never raises a failure."""
        warm_up = self._warm_up
        if warm_up.state is not WarmState.COLD:
            await trio.lowlevel.checkpoint()
            return warm_up.state
        warm_up.state = WarmState.WARMING
        identity = warm_up.embedder.identity
        try:
            await warm_up.embedder.embed_query(WARM_UP_TEXT)
        except Exception:  # a failed warm-up only leaves the model cold
            warm_up.state = WarmState.FAILED
            logger.warning(
                "warming the query embedder %s/%s failed; recall embeds cold",
                identity.provider,
                identity.model,
                exc_info=True,
            )
        except BaseException:
            warm_up.state = WarmState.COLD  # cancelled: the runtime is closing
            raise
        else:
            warm_up.state = WarmState.WARM
        finally:
            warm_up.ended.set()
        return warm_up.state

    async def embed_query(self, agent_id: str, text: str) -> QueryEmbedding:
        """The query's vector, or none and why. Cancellation propagates (never a failure)."""
        # One embedder for the whole call, even if a config switch lands meanwhile.
        embedder = self.embedder
        identity = embedder.identity
        warm_up = self._warm_up
        if warm_up.embedder is embedder and warm_up.state is WarmState.WARMING:
            # The model is loading: the query's own deadline starts once it is loaded.
            with trio.move_on_after(self.warmup_wait_s):
                await warm_up.ended.wait()
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
