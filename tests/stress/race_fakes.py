"""Blocking fakes for the scripted race scenarios (tests/stress/test_races.py).

Each fake wraps a real part (the ``HashingEmbedder`` of ``cairn.testing``, a text provider
answering with verbatim claims, a maintenance pass) and parks the calls the test picks on
a :class:`Gate`, so
the test, not the scheduler, decides when each side of a race proceeds. A parked call can
be shielded: like work already in a worker thread or on the wire, cancellation (a fence
advancing, a stop) does not reach it, and its result arrives late, after whatever the test
let happen meanwhile. That late result is what the runtime must refuse or drop.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import attrs
import msgspec
import trio
import trio.testing

from cairn import Memory
from cairn.domain.ids import AgentId
from cairn.errors import TransientProviderError
from cairn.providers.embedding import Vectors
from cairn.providers.http.text import TextIdentity
from cairn.runtime.core import runtime_core
from cairn.testing import HashingEmbedder
from cairn.vectors.identity import EmbeddingIdentity

__all__ = [
    "Gate",
    "GatedEmbedder",
    "GatedPass",
    "GatedTextProvider",
    "TokenHold",
    "holding",
    "queued_writes",
    "settle",
    "verbatim_claims",
]

S = TypeVar("S", bound=msgspec.Struct)

# How long a parked call waits for its gate at most (below the test bound of conftest).
PARK_BOUND_S = 90.0


@attrs.define(eq=False)
class Gate:
    """One parked call: ``reached`` is set when the call arrives, it waits for
    :meth:`open`; ``shielded`` makes the wait immune to cancellation."""

    match: Callable[[str], bool]
    shielded: bool = False
    reached: trio.Event = attrs.Factory(trio.Event)
    opened: trio.Event = attrs.Factory(trio.Event)
    # The texts of the parked call, for the test's assertions.
    texts: list[str] = attrs.Factory(list)
    used: bool = False

    def open(self) -> None:
        self.opened.set()

    async def park(self, texts: Sequence[str]) -> None:
        self.used = True
        self.texts = list(texts)
        self.reached.set()
        # Bounded even when shielded: a scenario that never opens its gate fails with
        # a traceback before the test's own bound, instead of hanging its cancellation.
        with trio.CancelScope(shield=self.shielded), trio.fail_after(PARK_BOUND_S):
            await self.opened.wait()


def _take(gates: list[Gate], texts: Sequence[str]) -> Gate | None:
    """The first armed gate the call matches (each gate parks one call only)."""
    for gate in gates:
        if not gate.used and any(gate.match(text) for text in texts):
            return gate
    return None


class GatedEmbedder(HashingEmbedder):
    """The hashing embedder whose document (or query) calls park on armed gates.

    ``model`` names another embedding identity (an A/B switch needs two). ``marker``,
    when set, replaces every vector a parked document call returns, so a stale commit
    would be visible in the embeddings table.
    """

    def __init__(self, dimension: int = 64, model: str = "hashing-v1") -> None:
        super().__init__(dimension=dimension)
        self.model = model
        self.document_gates: list[Gate] = []
        self.query_gates: list[Gate] = []
        self.documents: list[str] = []

    @property
    def identity(self) -> EmbeddingIdentity:
        return EmbeddingIdentity("testing", self.model, self.dimension)

    def park_documents(self, needle: str, *, shielded: bool = False) -> Gate:
        gate = Gate(lambda text: needle.casefold() in text.casefold(), shielded)
        self.document_gates.append(gate)
        return gate

    def park_queries(self, needle: str) -> Gate:
        gate = Gate(lambda text: needle.casefold() in text.casefold())
        self.query_gates.append(gate)
        return gate

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.documents.extend(texts)
        gate = _take(self.document_gates, texts)
        if gate is not None:
            await gate.park(texts)
        return await super().embed_documents(texts)

    async def embed_query(self, text: str) -> Vectors:
        gate = _take(self.query_gates, [text])
        if gate is not None:
            await gate.park([text])
        return await super().embed_query(text)


def verbatim_claims(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The model's answer: each user turn becomes one fact quoting the whole turn."""
    claims = []
    discarded = []
    for event in events:
        text = str(event["text"]).strip().rstrip(".")
        if event.get("role") != "user" or not text:
            discarded.append(event["event_id"])
            continue
        claims.append(
            {
                "kind": "fact",
                "text": text,
                "sources": [{"event_id": event["event_id"], "quote": text}],
            }
        )
    return {
        "claims": claims,
        "corrections": [],
        "relations": [],
        "directive_drafts": [],
        "discarded_event_ids": discarded,
    }


@attrs.define(eq=False)
class GatedPass:
    """A real maintenance pass (cairn.maintenance.passes) whose first plan with work
    parks on :attr:`gate`, inside the read snapshot it was planned on, until the test
    opens it: whatever commits meanwhile is what the pass's ``apply`` must decide again
    against (its plan reaches the writer only after the gate opens)."""

    inner: Any
    gate: Gate = attrs.Factory(lambda: Gate(lambda _: True))

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def sweeps(self) -> bool:
        return bool(getattr(self.inner, "sweeps", False))

    def plan(self, connection: Any, work: Any) -> Any:
        # Runs in a reader's worker thread: the park itself runs in trio.
        plan = self.inner.plan(connection, work)
        if plan is not None and not self.gate.used:
            trio.from_thread.run(self.gate.park, [])
        return plan

    def question(self, plan: Any) -> Any:
        return self.inner.question(plan)

    def answered(self, plan: Any, answer: Any) -> Any:
        return self.inner.answered(plan, answer)

    def apply(self, connection: Any, work: Any, plan: Any) -> Any:
        return self.inner.apply(connection, work, plan)


def _events_of(user_prompt: str) -> list[dict[str, Any]]:
    """The events the prompt shows the model (one JSON object per line)."""
    return [json.loads(line) for line in user_prompt.splitlines()[1:]]


@attrs.define(eq=False)
class GatedTextProvider:
    """A text model answering :func:`verbatim_claims`; calls whose prompt holds an armed
    gate's text park there; ``failing_on`` makes matching calls fail."""

    model: str = "race-model"
    # The batch's events (as the prompt shows them) → the model's JSON answer.
    answer: Callable[[list[dict[str, Any]]], dict[str, Any]] = verbatim_claims
    # Calls whose prompt holds this text fail with a transient error.
    failing_on: str | None = None
    gates: list[Gate] = attrs.Factory(list)
    calls: list[list[str]] = attrs.Factory(list)

    @property
    def identity(self) -> TextIdentity:
        return TextIdentity("scripted", self.model)

    def park(self, needle: str, *, shielded: bool = False) -> Gate:
        gate = Gate(lambda text: needle.casefold() in text.casefold(), shielded)
        self.gates.append(gate)
        return gate

    async def complete_json(
        self, system: str, user: str, schema: type[S], *, max_tokens: int
    ) -> S:
        events = _events_of(user)
        texts = [str(event["text"]) for event in events]
        self.calls.append(texts)
        await trio.lowlevel.checkpoint()
        gate = _take(self.gates, texts)
        if gate is not None:
            await gate.park(texts)
        if self.failing_on is not None and any(
            self.failing_on in text for text in texts
        ):
            raise TransientProviderError("the model is unreachable")
        return msgspec.convert(self.answer(events), schema)


@attrs.define(eq=False)
class TokenHold:
    """Holds every token of one of the runtime's thread limiters (``store_write``: the
    writer; ``store_read``: the readers), so the next transaction of that kind waits
    until :meth:`release`. Requests of an agent queue meanwhile in arrival order."""

    memory: Memory
    name: str
    _held: int = 0

    @property
    def _limiter(self) -> trio.CapacityLimiter:
        limiter: trio.CapacityLimiter = getattr(
            runtime_core(self.memory).limiters, self.name
        )
        return limiter

    async def hold(self) -> None:
        limiter = self._limiter
        while self._held < limiter.total_tokens:
            # One borrower per token: a CapacityLimiter lends a borrower one token.
            await limiter.acquire_on_behalf_of((self, self._held))
            self._held += 1

    def release(self) -> None:
        while self._held:
            self._held -= 1
            self._limiter.release_on_behalf_of((self, self._held))

    def waiting(self) -> int:
        """Threads waiting for a token."""
        return self._limiter.statistics().tasks_waiting


@contextlib.asynccontextmanager
async def holding(memory: Memory, name: str) -> AsyncIterator[TokenHold]:
    """A :class:`TokenHold`, held on entry, released on exit at the latest."""
    hold = TokenHold(memory, name)
    await hold.hold()
    try:
        yield hold
    finally:
        hold.release()


def queued_writes(memory: Memory, agent_id: str) -> int:
    """How many requests wait in the agent's writer queue (beyond the one in hand)."""
    supervisor = runtime_core(memory).registry.running_supervisor(AgentId(agent_id))
    assert supervisor is not None, f"agent {agent_id!r} is not running"
    return supervisor._writes._send.statistics().current_buffer_used


async def settle(condition: Callable[[], bool]) -> None:
    """Let every other task run until ``condition`` holds (no clock involved)."""
    while not condition():
        await trio.testing.wait_all_tasks_blocked()
        if condition():
            return
        await trio.lowlevel.checkpoint()
