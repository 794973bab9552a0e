"""No empty first recall: the query embedder warms at open, and a recall that misses its
wait budget still answers on time with what is ready (``partial``: the lexical lists ranked
without the query vector), ``pending`` only when nothing is. Trio's MockClock drives time;
the embedder is a cold model that loads when the test says so (tests/fakes.py)."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import trio
import trio.testing
from tests.conftest import open_test_memory
from tests.fakes import ColdQueries
from tests.helpers import turn

from cairn import Degradation, Memory, MemoryConfig, RecallStatus
from cairn.domain.scope import RecallContext, Scope
from cairn.errors import TransientProviderError
from cairn.providers.embedding import Vectors
from cairn.providers.gateway import WARM_UP_TEXT, WarmState
from cairn.retrieval.types import Recall
from cairn.runtime.core import runtime_core
from cairn.testing import HashingEmbedder

WAIT_S = 0.25
CONFIG = MemoryConfig(recall_wait_s=WAIT_S, maintenance_interval_s=3600)
# Each in its own session: a turn's lexical body includes the turn before it.
TURNS = [
    turn("e1", "I adopted a grey cat called Miso.", session="s1"),
    turn("e2", "I work as a photographer.", session="s2"),
    turn("e3", "My ex-partner Tomas also had a cat called Miso.", session="s3"),
]


async def _complete(memory: Memory, agent: str, request_id: str) -> Recall:
    while True:
        late = await memory.fetch_recall(agent, request_id)
        if late.status is RecallStatus.OK:
            return late
        await trio.sleep(0.5)  # virtual time under MockClock


async def _timed_recall(memory: Memory, agent: str, query: str, **kwargs) -> Recall:  # type: ignore[no-untyped-def]
    started = trio.current_time()
    recall = await memory.recall(agent, query, **kwargs)
    assert trio.current_time() - started <= WAIT_S + 1e-9  # on time, whatever it holds
    return recall


async def test_a_cold_embedder_gets_a_partial_answer_on_time_then_the_complete_one(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    embedder = ColdQueries()
    async with open_test_memory(tmp_path, CONFIG, embedder=embedder) as memory:
        await memory.ingest("a", TURNS[:2])
        await memory.wait_idle("a")
        first = await _timed_recall(memory, "a", "Miso camera")
        assert first.status is RecallStatus.PARTIAL
        assert first.request_id
        assert [item.source_refs for item in first.items] == [("e1",)]
        assert "Miso" in first.memory_block
        assert first.manifest is not None
        assert Degradation.VECTOR_PENDING in first.manifest.degradations
        assert first.manifest.selected_ids == tuple(item.id for item in first.items)
        # Until the model has loaded, the complete result is still on its way.
        assert (await memory.fetch_recall("a", first.request_id)).status is (
            RecallStatus.PENDING
        )
        embedder.loaded.set()
        complete = await _complete(memory, "a", first.request_id)
        assert complete.request_id == first.request_id
        assert complete.manifest is not None
        assert Degradation.VECTOR_PENDING not in complete.manifest.degradations
        assert Degradation.EMBEDDING_TIMEOUT not in complete.manifest.degradations
        # The vector side adds the photographer turn, which shares no term with the query.
        refs = {ref for item in complete.items for ref in item.source_refs}
        assert refs == {"e1", "e2"}
        # Warm now: the next recall is complete on time.
        warm = await _timed_recall(memory, "a", "Miso camera")
        assert warm.status is RecallStatus.OK


async def test_pending_only_when_not_even_the_lexical_lists_are_ready(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    embedder = ColdQueries()
    async with open_test_memory(tmp_path, CONFIG, embedder=embedder) as memory:
        await memory.ingest("a", TURNS[:1])
        await memory.wait_idle("a")
        await memory.recall("a", "start the agent", wait_s=60.0)  # partial, instant
        # Every reader connection is taken: the lexical read cannot run in time.
        readers = runtime_core(memory).limiters.store_read
        held = trio.CapacityLimiter(readers.total_tokens)
        async with trio.open_nursery() as nursery:
            release = trio.Event()

            async def hold_one() -> None:
                async with held, readers:
                    await release.wait()

            for _ in range(int(readers.total_tokens)):
                nursery.start_soon(hold_one)
            await trio.testing.wait_all_tasks_blocked()
            blocked = await _timed_recall(memory, "a", "cat Miso")
            release.set()
        assert blocked.status is RecallStatus.PENDING
        assert blocked.items == ()
        assert blocked.manifest is None
        # With the readers free again, the same cold model gives a partial answer.
        again = await _timed_recall(memory, "a", "cat Miso")
        assert again.status is RecallStatus.PARTIAL
        assert [item.source_refs for item in again.items] == [("e1",)]
        embedder.loaded.set()
        late = await _complete(memory, "a", blocked.request_id)
        assert [item.source_refs for item in late.items] == [("e1",)]


async def test_the_query_embedder_warms_at_open_before_any_recall(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    embedder = ColdQueries()
    async with open_test_memory(tmp_path, CONFIG, embedder=embedder) as memory:
        # open_memory returned while the model is still loading.
        with trio.fail_after(5):
            await embedder.queried.wait()
        assert embedder.queries == [WARM_UP_TEXT]
        gateway = runtime_core(memory).gateway
        assert gateway.warm_state is WarmState.WARMING
        embedder.loaded.set()
        await trio.testing.wait_all_tasks_blocked()
        assert gateway.warm_state is WarmState.WARM
        assert (await memory.status()).embedder_warm == "warm"
        # Warm at the first recall: it is complete on time.
        await memory.ingest("a", TURNS[:1])
        await memory.wait_idle("a")
        recall = await _timed_recall(memory, "a", "cat Miso")
        assert recall.status is RecallStatus.OK
        assert embedder.queries == [WARM_UP_TEXT, "cat Miso"]


async def test_a_partial_answer_keeps_suppression_scope_and_budget(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    embedder = ColdQueries()
    async with open_test_memory(tmp_path, CONFIG, embedder=embedder) as memory:
        await memory.ingest("a", TURNS)
        await memory.remember(
            "a", "Miso sleeps on the blue sofa.", by="user", scope=Scope.session("s9")
        )
        await memory.directives.create("a", "Tomas", kind="suppress_topic")
        await memory.wait_idle("a")
        query = "Miso cat sofa"

        elsewhere = await _timed_recall(memory, "a", query)
        assert elsewhere.status is RecallStatus.PARTIAL
        texts = [item.text for item in elsewhere.items]
        assert any("grey cat" in text for text in texts)
        assert not any("Tomas" in text for text in texts)  # suppressed topic
        assert "Tomas" not in elsewhere.memory_block
        assert not any("sofa" in text for text in texts)  # another session's claim

        in_session = await _timed_recall(
            memory, "a", query, context=RecallContext(session_id="s9")
        )
        assert in_session.status is RecallStatus.PARTIAL
        assert any("sofa" in item.text for item in in_session.items)
        assert not any("Tomas" in item.text for item in in_session.items)

        small = await _timed_recall(
            memory,
            "a",
            query,
            context=RecallContext(session_id="s9"),
            budget_bytes=260,
        )
        assert small.status is RecallStatus.PARTIAL
        assert small.manifest is not None
        allocation = small.manifest.allocation
        assert allocation.total_bytes == 260
        assert len(small.memory_block.encode()) <= allocation.memory_bytes
        assert (
            len(small.memory_block.encode()) + len(small.directive_block.encode())
            <= 260
        )
        assert small.items
        assert small.manifest.dropped_ids  # what did not fit is named
        embedder.loaded.set()


async def test_recalls_during_the_warm_up_wait_for_it_and_never_open_the_breaker(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    embedder = ColdQueries()
    # A query deadline far shorter than the model's load: cold, every query would miss it.
    config = attrs.evolve(
        CONFIG, query_deadline_floor_s=0.1, query_deadline_ceiling_s=0.1
    )
    async with open_test_memory(tmp_path, config, embedder=embedder) as memory:
        await memory.ingest("a", TURNS[:2])
        await memory.wait_idle("a")
        firsts = [
            await _timed_recall(memory, "a", "Miso camera")
            for _ in range(config.breaker_failures + 1)
        ]
        assert [first.status for first in firsts] == [RecallStatus.PARTIAL] * 4
        embedder.loaded.set()
        for first in firsts:
            complete = await _complete(memory, "a", first.request_id)
            assert complete.manifest is not None
            assert complete.manifest.degradations == ()
        assert (await memory.status()).agent("a").query_breaker == "closed"


class FailingWarmUp(ColdQueries):
    """The provider is down for the warm-up at open, up for every later query."""

    async def embed_query(self, text: str) -> Vectors:
        if text == WARM_UP_TEXT:
            await trio.lowlevel.checkpoint()
            raise TransientProviderError("provider down")
        return await HashingEmbedder.embed_query(self, text)


async def test_a_failed_warm_up_is_logged_and_changes_nothing_else(
    tmp_path: Path,
    thread_safe_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with open_test_memory(tmp_path, CONFIG, embedder=FailingWarmUp()) as memory:
        await memory.ingest("a", TURNS[:1])
        await memory.wait_idle("a")
        assert (await memory.status()).embedder_warm == "failed"
        recall = await _timed_recall(memory, "a", "cat Miso")
        assert recall.status is RecallStatus.OK
        assert recall.manifest is not None
        assert recall.manifest.degradations == ()
        assert (await memory.status()).agent("a").query_breaker == "closed"
    assert "warming the query embedder testing/hashing-v1 failed" in caplog.text
