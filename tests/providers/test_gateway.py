"""Query-embedding gateway: adaptive deadline, per-agent circuit breaker, and recall that
degrades to lexical with the reason in the manifest. Driven by trio's MockClock."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import trio
import trio.testing
from tests.helpers import turn

from cairn import Degradation, MemoryConfig, RecallStatus, open_memory
from cairn.errors import TransientProviderError
from cairn.providers.embedding import Vectors
from cairn.providers.gateway import QueryEmbeddingGateway
from cairn.providers.http.breaker import BreakerState
from cairn.testing import FixedDomainClock, HashingEmbedder


class FlakyEmbedder(HashingEmbedder):
    """Queries hang (``mode == "hang"``), fail (``"fail"``) or succeed (``"ok"``)."""

    def __init__(self) -> None:
        super().__init__()
        self.mode = "hang"
        self.query_calls = 0

    async def embed_query(self, text: str) -> Vectors:
        self.query_calls += 1
        if self.mode == "hang":
            await trio.sleep_forever()
        if self.mode == "fail":
            await trio.lowlevel.checkpoint()
            raise TransientProviderError("connection refused")
        return await super().embed_query(text)

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return await super().embed_documents(texts)


async def test_breaker_opens_then_one_probe_closes_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    embedder = FlakyEmbedder()
    gateway = QueryEmbeddingGateway(embedder, cooldown_s=30.0)
    for _ in range(3):
        result = await gateway.embed_query("a", "where is the cat")
        assert result.degradation is Degradation.EMBEDDING_TIMEOUT
        assert result.vector is None
    assert gateway.breaker("a").state is BreakerState.OPEN
    calls = embedder.query_calls
    assert (await gateway.embed_query("a", "q")).degradation is (
        Degradation.BREAKER_OPEN
    )
    assert embedder.query_calls == calls  # an open breaker makes no call at all
    # Another agent has its own breaker.
    assert gateway.breaker("b").state is BreakerState.CLOSED
    await trio.sleep(31)
    embedder.mode = "ok"
    probe = await gateway.embed_query("a", "where is the cat")
    assert probe.degradation is None
    assert probe.vector is not None
    assert gateway.breaker("a").state is BreakerState.CLOSED


async def test_deadline_adapts_after_a_miss_and_a_success(
    autojump_clock: trio.testing.MockClock,
) -> None:
    embedder = FlakyEmbedder()
    gateway = QueryEmbeddingGateway(embedder)
    assert gateway.deadline().timeout_s() == 2.0  # no observation yet: the ceiling
    await gateway.embed_query("a", "q")  # hangs: a miss at the ceiling
    assert gateway.deadline().timeout_s() == 2.0
    embedder.mode = "ok"
    assert (await gateway.embed_query("a", "q")).degradation is None
    # Instant under the mock clock: the observed value clamps to the floor.
    assert gateway.deadline().timeout_s() == 0.8


async def test_transport_failures_count_and_cancellation_does_not(
    autojump_clock: trio.testing.MockClock,
) -> None:
    embedder = FlakyEmbedder()
    gateway = QueryEmbeddingGateway(embedder)
    for _ in range(5):
        with trio.move_on_after(0.1):  # the caller gives up: not the provider's fault
            await gateway.embed_query("a", "q")
    assert gateway.breaker("a").state is BreakerState.CLOSED
    embedder.mode = "fail"
    outcomes = [(await gateway.embed_query("a", "q")).degradation for _ in range(3)]
    assert outcomes == [Degradation.VECTOR_UNAVAILABLE] * 3
    assert gateway.breaker("a").state is BreakerState.OPEN
    gateway.reset("a")
    assert gateway.breaker("a").state is BreakerState.CLOSED


async def _settled_recall(memory, agent: str, query: str):
    # Under the autojump clock a recall waiting on a worker thread misses any wait budget;
    # fetch the late result (virtual time only).
    recall = await memory.recall(agent, query)
    while recall.status is RecallStatus.PENDING:
        await trio.sleep(0.5)
        recall = await memory.fetch_recall(agent, recall.request_id)
    return recall


async def test_recall_reports_breaker_open_and_keeps_lexical_results(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    embedder = FlakyEmbedder()
    # Autojump moves virtual time while threads work: widen the window and the cooldown
    # so the test sees the breaker open rather than already half-open again.
    config = MemoryConfig(
        recall_wait_s=60.0,
        breaker_failures=2,
        breaker_window_s=10_000.0,
        breaker_cooldown_s=10_000.0,
    )
    async with open_memory(
        tmp_path, config, clock=FixedDomainClock(), embedder=embedder
    ) as memory:
        await memory.ingest("a", [turn("e1", "I adopted a grey cat called Miso.")])
        await memory.wait_idle("a")
        first = await _settled_recall(memory, "a", "cat Miso")
        assert first.manifest is not None
        assert Degradation.EMBEDDING_TIMEOUT in first.manifest.degradations
        await _settled_recall(memory, "a", "cat Miso")
        third = await _settled_recall(memory, "a", "cat Miso")
        assert third.manifest is not None
        assert Degradation.BREAKER_OPEN in third.manifest.degradations
        assert any("Miso" in item.text for item in third.items)
