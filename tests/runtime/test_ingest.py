"""Intake invariants: idempotent by event ID, conflicting reuse rejected, nothing stored lost."""

from __future__ import annotations

import pytest
from tests.helpers import turn

from cairn import IntakeOutcome, Memory
from cairn.errors import ConflictingEventError, InvalidInputError


async def test_same_id_same_content_is_a_no_op(memory: Memory) -> None:
    first = await memory.ingest("agent-a", [turn("e1", "I love hiking in the Alps.")])
    again = await memory.ingest("agent-a", [turn("e1", "I love hiking in the Alps.")])
    assert first.ingested == 1
    assert again.ingested == 0
    assert again.duplicates == 1
    status = await memory.status()
    assert status["agents"]["agent-a"]["events"] == 1


async def test_same_id_other_content_is_rejected_and_original_kept(
    memory: Memory,
) -> None:
    await memory.ingest("agent-a", [turn("e1", "I love hiking in the Alps.")])
    report = await memory.ingest(
        "agent-a",
        [turn("e1", "I hate hiking."), turn("e2", "My sister lives in Lisbon.")],
    )
    assert [r.outcome for r in report.results] == [
        IntakeOutcome.REJECTED,
        IntakeOutcome.INGESTED,
    ]
    assert report.rejected[0].reason
    with pytest.raises(ConflictingEventError) as raised:
        await memory.ingest_turn("agent-a", turn("e1", "Something else entirely."))
    assert raised.value.event_id == "e1"
    await memory.wait_idle("agent-a")
    recall = await memory.recall("agent-a", "hiking Alps")
    texts = " ".join(item.text for item in recall.items)
    assert "I love hiking in the Alps." in texts
    assert "I hate hiking." not in texts


async def test_duplicate_ids_within_one_batch(memory: Memory) -> None:
    report = await memory.ingest(
        "agent-a", [turn("e1", "one"), turn("e1", "one"), turn("e1", "two")]
    )
    assert [r.outcome for r in report.results] == [
        IntakeOutcome.INGESTED,
        IntakeOutcome.DUPLICATE,
        IntakeOutcome.REJECTED,
    ]


async def test_same_id_in_two_agents_is_two_events(memory: Memory) -> None:
    a = await memory.ingest("agent-a", [turn("e1", "I like tea.")])
    b = await memory.ingest("agent-b", [turn("e1", "I like coffee.")])
    assert a.ingested == b.ingested == 1


@pytest.mark.parametrize("agent_id", ["", "../escape", "a/b", "x" * 200])
async def test_invalid_agent_ids_are_refused(memory: Memory, agent_id: str) -> None:
    with pytest.raises(InvalidInputError):
        await memory.ingest(agent_id, [turn("e1", "hello")])


async def test_blank_query_is_refused(memory: Memory) -> None:
    with pytest.raises(InvalidInputError):
        await memory.recall("agent-a", "   ")


def test_turn_validation() -> None:
    import datetime as dt

    with pytest.raises(ValueError, match="non-blank"):
        turn("", "text")
    with pytest.raises(ValueError, match="timezone"):
        turn("e1", "text", at=dt.datetime(2026, 1, 1))  # noqa: DTZ001 - the point of the test
    with pytest.raises(ValueError):
        turn("e1", "text", role="system")
