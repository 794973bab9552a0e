"""Intake invariants: idempotent by event ID, conflicting reuse rejected, nothing stored lost."""

from __future__ import annotations

import pytest
import trio
from tests.helpers import turn

from cairn import IntakeOutcome, IntakeRejection, Memory, Turn
from cairn.errors import ConflictingEventError, InvalidInputError
from cairn.runtime.core import runtime_core


async def test_same_id_same_content_is_a_no_op(memory: Memory) -> None:
    first = await memory.ingest("agent-a", [turn("e1", "I love hiking in the Alps.")])
    again = await memory.ingest("agent-a", [turn("e1", "I love hiking in the Alps.")])
    assert first.ingested == 1
    assert again.ingested == 0
    assert again.duplicates == 1
    status = await memory.status()
    assert status.agent("agent-a").events == 1


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


async def test_runtime_events_are_evidence_with_their_kind(memory: Memory) -> None:
    kinds = [
        "task_started",
        "task_finished",
        "task_failed",
        "task_blocked",
        "needs_input",
        "tool_result",
    ]
    for index, kind in enumerate(kinds):
        result = await memory.ingest_event(
            "agent-a",
            turn(f"r{index}", f"Build {index} {kind}", role="event", kind=kind),
        )
        assert result.outcome is IntakeOutcome.INGESTED
    stored = await runtime_core(memory).database.read(
        lambda reader: [
            str(row[0])
            for row in reader.connection.execute(
                "SELECT kind FROM events ORDER BY rowid"
            )
        ]
    )
    assert stored == kinds
    with pytest.raises(ConflictingEventError):
        await memory.ingest_event(
            "agent-a", turn("r0", "Build 0 changed", role="event", kind="task_started")
        )


async def test_unchanged_repeats_merge_and_keep_every_id(memory: Memory) -> None:
    def started(event_id: str, text: str = "Nightly backup started") -> Turn:
        return turn(event_id, text, role="event", kind="task_started")

    report = await memory.ingest(
        "agent-a", [started("b1"), started("b2"), started("b3"), started("b4", "Other")]
    )
    assert [r.outcome for r in report.results] == [
        IntakeOutcome.INGESTED,
        IntakeOutcome.MERGED,
        IntakeOutcome.MERGED,
        IntakeOutcome.INGESTED,
    ]
    assert report.results[1].rowid == report.results[0].rowid
    # Every original ID stays idempotent: same content a no-op, other content rejected.
    again = await memory.ingest("agent-a", [started("b2"), started("b3", "changed")])
    assert [r.outcome for r in again.results] == [
        IntakeOutcome.DUPLICATE,
        IntakeOutcome.REJECTED,
    ]
    counts = await runtime_core(memory).database.read(
        lambda reader: [
            (str(row[0]), int(row[1]))
            for row in reader.connection.execute(
                "SELECT event_id, repeat_count FROM events ORDER BY rowid"
            )
        ]
    )
    assert counts == [("b1", 3), ("b4", 1)]
    # User messages are turns of a conversation: repeating one is not merged.
    report = await memory.ingest("agent-a", [turn("u1", "yes"), turn("u2", "yes")])
    assert report.ingested == 2


async def test_long_messages_become_indexed_segments(memory: Memory) -> None:
    filler = "We talked about the weather and nothing much. " * 120
    text = f"{filler}I have a grey cat named Miso."
    result = await memory.ingest_turn("agent-a", turn("long", text))
    assert result.segments > 1
    rows = await runtime_core(memory).database.read(
        lambda reader: [
            (str(row[0]), str(row[1]))
            for row in reader.connection.execute(
                "SELECT event_id, text FROM events ORDER BY rowid"
            )
        ]
    )
    assert "".join(text for _, text in rows) == text
    assert all(len(text.encode()) <= 2400 for _, text in rows)
    assert rows[0][0] == "long"
    await memory.wait_idle("agent-a")
    recall = await memory.recall("agent-a", "grey cat Miso")
    assert any("Miso" in item.text for item in recall.items)
    # The tail segment is extracted like any turn.
    claims = await runtime_core(memory).database.read(
        lambda reader: [
            str(row[0]) for row in reader.connection.execute("SELECT text FROM claims")
        ]
    )
    assert any("Miso" in claim for claim in claims)
    again = await memory.ingest_turn("agent-a", turn("long", text))
    assert again.outcome is IntakeOutcome.DUPLICATE


async def test_edit_of_an_unknown_message_is_refused(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match="replaced message"):
        await memory.ingest_event(
            "agent-a", turn("e2", "I meant Berlin.", replaces="nope")
        )


async def test_a_rejection_says_why_as_a_value(memory: Memory) -> None:
    """Callers branch on ``IntakeResult.rejection``, never on the reason's wording."""
    with trio.fail_after(30):
        await memory.ingest("agent-a", [turn("e1", "I live in Lisbon.")])
        report = await memory.ingest(
            "agent-a",
            [
                turn("e1", "I live in Porto."),
                turn("e2", "I meant Berlin.", replaces="nope"),
                turn("e3", "I live in Faro."),
            ],
        )
    assert [r.rejection for r in report.results] == [
        IntakeRejection.CONFLICTING_CONTENT,
        IntakeRejection.UNKNOWN_REPLACED_EVENT,
        None,
    ]
    assert all(r.reason for r in report.rejected)
