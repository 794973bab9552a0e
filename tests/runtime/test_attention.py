"""The attention inbox: a late recall result that became ready and the critical runtime
events (task failed, blocked, needs input) reach the host as durable notices; repeated
blocked or needs-input notices of one task and session are one item; consuming hides
them; a forgotten or cleared event's notice disappears; agents never see each other's."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn import AttentionKind, RecallStatus
from cairn.errors import InvalidInputError
from cairn.runtime.core import runtime_core


async def _fetch_when_ready(memory, agent: str, request_id: str) -> None:
    while True:
        if (await memory.fetch_recall(agent, request_id)).status is RecallStatus.OK:
            return
        await trio.sleep(0.5)  # virtual time under the MockClock


def _event(event_id: str, kind: str, text: str, *, task: str = "deploy", **kw):
    return turn(event_id, text, role="event", speaker=task, kind=kind, **kw)


async def test_a_late_result_appears_once_ready_and_consume_hides_it(
    data_dir: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    async with open_test_memory(data_dir) as memory:
        await memory.ingest("a", [turn("e1", "I adopted a grey cat called Miso.")])
        await memory.wait_idle("a")
        pending = await memory.recall("a", "grey cat", session_id="s1", wait_s=0.0)
        assert pending.status is RecallStatus.PENDING
        await _fetch_when_ready(memory, "a", pending.request_id)
        (item,) = await memory.attention("a")
        assert item.kind is AttentionKind.RECALL_READY
        assert item.request_id == pending.request_id
        assert item.session_id == "s1"
        assert item.text is None
        late = await memory.fetch_recall("a", item.request_id)
        assert "Miso" in late.memory_block
        assert await memory.consume_attention("a", [item.item_id]) == 1
        assert await memory.attention("a") == []
        assert await memory.consume_attention("a", [item.item_id]) == 0
    # Durable: consumed stays consumed after a restart.
    async with open_test_memory(data_dir) as memory:
        assert await memory.attention("a") == []


async def test_repeated_blocked_notices_of_one_task_merge(memory) -> None:
    await memory.ingest(
        "a",
        [
            _event("b1", "task_blocked", "Waiting for CI on the deploy."),
            turn("m1", "Any news?"),
            _event("b2", "task_blocked", "Still waiting for CI (attempt 2)."),
            _event("f1", "task_failed", "The build failed."),
            _event("n1", "needs_input", "Which region should I deploy to?"),
            _event("b3", "task_blocked", "Waiting on review.", task="review"),
            _event("b4", "task_blocked", "Blocked in another session.", session="s2"),
            _event("s1", "task_started", "Started the deploy."),
        ],
    )
    items = await memory.attention("a")
    by_event = {item.event_id: item for item in items}
    assert set(by_event) == {"b2", "f1", "n1", "b3", "b4"}
    merged = by_event["b2"]
    assert merged.kind is AttentionKind.TASK_BLOCKED
    assert merged.count == 2
    assert merged.text == "Still waiting for CI (attempt 2)."
    assert merged.session_id == "s1"
    assert by_event["f1"].kind is AttentionKind.TASK_FAILED
    assert by_event["n1"].kind is AttentionKind.NEEDS_INPUT
    assert all(by_event[e].count == 1 for e in ("f1", "n1", "b3", "b4"))
    assert {i.event_id for i in await memory.attention("a", session_id="s2")} == {"b4"}
    # The same event replayed (an idempotent retry) adds nothing.
    await memory.ingest(
        "a", [_event("b2", "task_blocked", "Still waiting for CI (attempt 2).")]
    )
    assert {i.event_id: i.count for i in await memory.attention("a")}["b2"] == 2


async def test_after_consume_a_new_notice_opens_a_new_item(memory) -> None:
    await memory.ingest("a", [_event("b1", "task_blocked", "Waiting for CI.")])
    (first,) = await memory.attention("a")
    assert await memory.consume_attention("a", [first.item_id]) == 1
    await memory.ingest("a", [_event("b2", "task_blocked", "Waiting for CI again.")])
    (second,) = await memory.attention("a")
    assert second.item_id != first.item_id
    assert (second.event_id, second.count) == ("b2", 1)
    with pytest.raises(InvalidInputError):
        await memory.consume_attention("a", ["b2"])  # type: ignore[list-item]


async def test_a_forgotten_or_cleared_events_notice_disappears(memory) -> None:
    await memory.ingest(
        "a",
        [
            _event("f1", "task_failed", "The nightly export failed."),
            _event("n1", "needs_input", "Which account should I bill?"),
        ],
    )
    assert {i.event_id for i in await memory.attention("a")} == {"f1", "n1"}
    await memory.forget("a", "f1")
    assert [i.event_id for i in await memory.attention("a")] == ["n1"]
    await memory.wait_idle("a")
    await memory.clear("a")
    assert await memory.attention("a") == []


async def test_agents_are_isolated(memory) -> None:
    await memory.ingest("a", [_event("f1", "task_failed", "The build failed.")])
    (item,) = await memory.attention("a")
    assert await memory.attention("b") == []
    assert await memory.consume_attention("b", [item.item_id]) == 0
    assert [i.item_id for i in await memory.attention("a")] == [item.item_id]


async def test_the_inbox_and_the_records_hold_no_text(memory) -> None:
    secret_words = "Waiting for the quarterly numbers from Ingrid."
    await memory.ingest(
        "a",
        [
            turn("m1", "Ingrid sends the quarterly numbers on Fridays."),
            _event("b1", "task_blocked", secret_words),
        ],
    )
    await memory.wait_idle("a")
    answer = await memory.recall("a", "quarterly numbers Ingrid")
    assert "Ingrid" in answer.memory_block
    assert (await memory.attention("a"))[0].text == secret_words

    def rows(reader) -> list[tuple[object, ...]]:
        connection = reader.connection
        return [
            *connection.execute("SELECT * FROM attention_items"),
            *connection.execute("SELECT * FROM recall_records"),
        ]

    stored = await runtime_core(memory).database.read(rows)
    assert len(stored) == 2
    assert not any("Ingrid" in str(value) for row in stored for value in row)


async def test_a_retire_removes_the_inbox_and_the_records(memory) -> None:
    await memory.ingest("a", [_event("f1", "task_failed", "The build failed.")])
    await memory.wait_idle("a")
    await memory.recall("a", "build")
    assert await memory.attention("a")
    assert await memory.recalls("a")
    await memory.retire("a")
    assert await memory.attention("a") == []
    assert await memory.recalls("a") == []
