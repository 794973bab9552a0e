"""The durable record of each recall's contribution: written before the answer returns,
fetchable by request ID (on-time answers too, also after a restart), listed per agent and
session, pruned by age without leaving a row that names a missing record, and stripped of
its text (never of its ID manifest) by a forget."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import trio
import trio.testing
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn import MemoryConfig, RecallStatus
from cairn.errors import InvalidInputError, UnknownRequestError
from cairn.runtime.core import runtime_core
from cairn.testing import FixedDomainClock

FACTS = [
    turn("e1", "I adopted a grey cat called Miso."),
    turn("e2", "My sister lives in Lisbon.", session="s2"),
    turn("e3", "I drink oolong tea every morning."),
]


async def _fetch_when_ready(memory, agent: str, request_id: str):
    while True:
        late = await memory.fetch_recall(agent, request_id)
        if late.status is not RecallStatus.PENDING:
            return late
        await trio.sleep(0.5)  # virtual time under the MockClock


async def test_an_on_time_answer_is_fetchable_by_its_request_id_after_a_restart(
    data_dir: Path,
) -> None:
    async with open_test_memory(data_dir) as memory:
        await memory.ingest("a", FACTS)
        await memory.wait_idle("a")
        answer = await memory.recall("a", "grey cat Miso", session_id="s1")
        assert answer.status is RecallStatus.OK
        assert "Miso" in answer.memory_block
        assert await memory.fetch_recall("a", answer.request_id) == answer
    async with open_test_memory(data_dir) as memory:
        assert await memory.fetch_recall("a", answer.request_id) == answer
        (record,) = await memory.recalls("a")
        assert record.request_id == answer.request_id
        assert record.status == "ok"
        assert record.session_id == "s1"
        assert record.manifest == answer.manifest
        # Another agent has no such request.
        with pytest.raises(UnknownRequestError):
            await memory.fetch_recall("b", answer.request_id)
        assert await memory.recalls("b") == []


async def test_records_are_listed_per_session_newest_first(memory) -> None:
    await memory.ingest("a", FACTS)
    await memory.wait_idle("a")
    first = await memory.recall("a", "cat", session_id="s1")
    second = await memory.recall("a", "sister", session_id="s2")
    runtime_core(memory).clock.advance(dt.timedelta(seconds=1))
    third = await memory.recall("a", "tea", session_id="s1")
    everything = await memory.recalls("a")
    assert [r.request_id for r in everything] == [
        third.request_id,
        second.request_id,
        first.request_id,
    ]
    in_s1 = await memory.recalls("a", session_id="s1")
    assert [r.request_id for r in in_s1] == [third.request_id, first.request_id]
    assert [r.request_id for r in await memory.recalls("a", limit=1)] == [
        third.request_id
    ]
    assert all(r.manifest is not None for r in everything)
    with pytest.raises(InvalidInputError):
        await memory.recalls("a", limit=0)


async def test_a_forget_drops_the_stored_text_but_keeps_the_id_manifest(
    memory,
) -> None:
    await memory.ingest("a", FACTS)
    await memory.wait_idle("a")
    answer = await memory.recall("a", "grey cat Miso")
    assert answer.manifest is not None
    forgotten = next(item.id for item in answer.items if "Miso" in item.text)
    assert await memory.fetch_recall("a", answer.request_id) == answer
    await memory.forget("a", forgotten)
    with pytest.raises(UnknownRequestError):
        await memory.fetch_recall("a", answer.request_id)
    (record,) = await memory.recalls("a")
    assert record.request_id == answer.request_id
    assert record.manifest == answer.manifest
    assert forgotten in record.manifest.selected_ids


async def _orphans(memory) -> tuple[int, int]:
    """Text rows and notices that name no recall record."""

    def count(reader) -> tuple[int, int]:
        connection = reader.connection
        texts = connection.execute(
            "SELECT count(*) FROM recall_requests r WHERE NOT EXISTS (SELECT 1 FROM"
            " recall_records c WHERE c.agent_id = r.agent_id"
            " AND c.request_id = r.request_id)"
        ).fetchone()[0]
        notices = connection.execute(
            "SELECT count(*) FROM attention_items a WHERE a.request_id IS NOT NULL"
            " AND NOT EXISTS (SELECT 1 FROM recall_records c WHERE"
            " c.agent_id = a.agent_id AND c.request_id = a.request_id)"
        ).fetchone()[0]
        return int(texts), int(notices)

    return await runtime_core(memory).database.read(count)


async def test_retention_prunes_records_by_age_with_what_names_them(
    data_dir: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    clock = FixedDomainClock()
    config = MemoryConfig(
        recall_wait_s=60.0,
        embed_linger_s=0.001,
        maintenance_interval_s=3600,
        extraction_linger_s=0.001,
        # The text would outlive its record here: pruning the record must take it.
        recall_result_retention_s=10 * 86400.0,
        recall_record_retention_s=86400.0,
        attention_retention_s=10 * 86400.0,
    )
    async with open_test_memory(data_dir, config, clock=clock) as memory:
        await memory.ingest("a", FACTS)
        await memory.wait_idle("a")
        old = await memory.recall("a", "cat Miso")
        late = await memory.recall("a", "oolong tea", wait_s=0.0)
        assert late.status is RecallStatus.PENDING
        assert (await _fetch_when_ready(memory, "a", late.request_id)).items
        (notice,) = await memory.attention("a")
        assert notice.request_id == late.request_id
        clock.advance(dt.timedelta(days=2))
        kept = await memory.recall("a", "sister Lisbon")
        supervisor = await runtime_core(memory).registry.get("a")
        await supervisor.run_maintenance_pass()
        assert [r.request_id for r in await memory.recalls("a")] == [kept.request_id]
        for gone in (old, late):
            with pytest.raises(UnknownRequestError):
                await memory.fetch_recall("a", gone.request_id)
        assert await memory.fetch_recall("a", kept.request_id) == kept
        assert await memory.attention("a") == []
        assert await _orphans(memory) == (0, 0)


async def test_the_record_count_is_capped_per_agent(data_dir: Path) -> None:
    config = MemoryConfig(
        recall_wait_s=60.0,
        embed_linger_s=0.001,
        maintenance_interval_s=3600,
        extraction_linger_s=0.001,
        recall_records_per_agent=2,
    )
    async with open_test_memory(data_dir, config) as memory:
        await memory.ingest("a", FACTS)
        await memory.wait_idle("a")
        answers = [
            await memory.recall("a", query) for query in ("cat", "tea", "sister")
        ]
        supervisor = await runtime_core(memory).registry.get("a")
        await supervisor.run_maintenance_pass()
        assert [r.request_id for r in await memory.recalls("a")] == [
            answers[2].request_id,
            answers[1].request_id,
        ]
        with pytest.raises(UnknownRequestError):
            await memory.fetch_recall("a", answers[0].request_id)
        assert await _orphans(memory) == (0, 0)


async def test_a_late_result_completes_its_record(
    data_dir: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    async with open_test_memory(data_dir) as memory:
        await memory.ingest("a", FACTS)
        await memory.wait_idle("a")
        pending = await memory.recall("a", "grey cat", wait_s=0.0, session_id="s1")
        assert pending.status is RecallStatus.PENDING
        late = await _fetch_when_ready(memory, "a", pending.request_id)
        (record,) = await memory.recalls("a", session_id="s1")
        assert record.request_id == pending.request_id
        assert record.status == "ok"
        assert record.manifest == late.manifest
