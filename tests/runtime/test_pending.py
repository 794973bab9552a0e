"""Wait budget: a recall that misses it answers on time with what is ready (`partial`) and a
request ID, never an empty "no memory"; the complete result is stored and fetched by that ID.
Trio's MockClock drives time (tests/runtime/test_first_recall.py has the cold-start cases)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
import trio
import trio.testing
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn import Degradation, MemoryConfig, RecallStatus
from cairn.errors import UnknownRequestError
from cairn.providers.embedding import Vectors
from cairn.testing import HashingEmbedder


class GatedEmbedder(HashingEmbedder):
    """Query embedding waits for the test to open the gate (a trio-native block)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = trio.Event()

    async def embed_query(self, text: str) -> Vectors:
        await self.gate.wait()
        return await super().embed_query(text)

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return await super().embed_documents(texts)


async def _fetch_when_ready(memory, agent: str, request_id: str):
    while True:
        late = await memory.fetch_recall(agent, request_id)
        if late.status is RecallStatus.OK:
            return late
        await trio.sleep(0.5)  # virtual time under MockClock


async def test_missed_wait_budget_returns_partial_then_late_result(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    embedder = GatedEmbedder()
    config = MemoryConfig(
        recall_wait_s=0.05, query_deadline_floor_s=30.0, query_deadline_ceiling_s=30.0
    )
    async with open_test_memory(tmp_path, config, embedder=embedder) as memory:
        await memory.ingest("a", [turn("e1", "I adopted a grey cat called Miso.")])
        await memory.wait_idle("a")
        first = await memory.recall("a", "cat Miso")
        assert first.status is RecallStatus.PARTIAL
        assert first.request_id
        assert any("Miso" in item.text for item in first.items)
        still = await memory.fetch_recall("a", first.request_id)
        assert still.status is RecallStatus.PENDING
        embedder.gate.set()
        late = await _fetch_when_ready(memory, "a", first.request_id)
        assert late.request_id == first.request_id
        assert any("Miso" in item.text for item in late.items)
        assert late.manifest is not None
        assert Degradation.EMBEDDING_TIMEOUT not in late.manifest.degradations
        # A late result belongs to its agent: another agent cannot fetch it.
        with pytest.raises(UnknownRequestError):
            await memory.fetch_recall("b", first.request_id)


async def test_embedding_deadline_degrades_to_lexical(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    embedder = (
        GatedEmbedder()
    )  # the gate never opens: the query embedding always times out
    config = MemoryConfig(
        recall_wait_s=0.05, query_deadline_floor_s=1.0, query_deadline_ceiling_s=1.0
    )
    async with open_test_memory(tmp_path, config, embedder=embedder) as memory:
        await memory.ingest("a", [turn("e1", "I adopted a grey cat called Miso.")])
        await memory.wait_idle("a")
        first = await memory.recall("a", "cat Miso")
        assert first.status is RecallStatus.PARTIAL
        late = await _fetch_when_ready(memory, "a", first.request_id)
        assert late.manifest is not None
        assert Degradation.EMBEDDING_TIMEOUT in late.manifest.degradations
        assert any("Miso" in item.text for item in late.items)
        embedder.gate.set()


async def test_unknown_request_id(memory) -> None:
    with pytest.raises(UnknownRequestError):
        await memory.fetch_recall("a", "no-such-request")
