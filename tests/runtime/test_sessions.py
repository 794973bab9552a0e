"""Session semantics of extraction: subagent sessions are recalled into but never
extracted; editing, retrying or deleting a message rewinds extraction of its session from
that point; a forked session does not re-extract the prefix it shares with its parent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn import Memory
from cairn.errors import InvalidInputError
from cairn.runtime.core import runtime_core
from cairn.runtime.transfer import export_memory, import_memory

AGENT = "a"


async def _claims(memory: Memory) -> list[str]:
    return await runtime_core(memory).database.read(
        lambda reader: sorted(
            str(row[0])
            for row in reader.connection.execute(
                "SELECT text FROM claims WHERE lifecycle = 'active'"
            )
        )
    )


async def _states(memory: Memory) -> dict[str, int]:
    return await runtime_core(memory).database.read(
        lambda reader: {
            str(row[0]): int(row[1])
            for row in reader.connection.execute(
                "SELECT event_id, extracted FROM events"
            )
        }
    )


async def _scalar(memory: Memory, sql: str, *params: Any) -> Any:
    return await runtime_core(memory).database.read(
        lambda reader: reader.connection.execute(sql, params).fetchone()[0]
    )


async def test_subagent_sessions_are_recalled_into_but_never_extracted(
    memory: Memory,
) -> None:
    await memory.ingest(AGENT, [turn("m1", "I love green tea.")])
    await memory.declare_session(AGENT, "sub", subagent=True)
    await memory.ingest(
        AGENT, [turn("x1", "I love black coffee.", session="sub", speaker="planner")]
    )
    await memory.wait_idle(AGENT)
    assert await _claims(memory) == ["Ana loves green tea"]
    assert (await _states(memory))["x1"] == 2
    recall = await memory.recall(AGENT, "green tea", session_id="sub")
    assert any("green tea" in item.text for item in recall.items)


async def test_editing_a_message_rewinds_its_session(memory: Memory) -> None:
    await memory.ingest(
        AGENT,
        [
            turn("e1", "I live in Paris."),
            turn("e2", "I love green tea."),
            turn("o1", "I love jazz.", session="other"),
        ],
    )
    await memory.wait_idle(AGENT)
    before = await _claims(memory)
    assert any("Paris" in claim for claim in before)
    assert await memory.session_cursor(AGENT, "s1") == "e2"

    await memory.ingest_event(AGENT, turn("e1b", "I live in Berlin.", replaces="e1"))
    states = await _states(memory)
    assert states["e1"] == 3  # withdrawn
    assert states["e2"] == 0  # re-opened: after the edit point
    assert states["o1"] == 1  # another session is untouched
    # The cursor falls back to the first re-opened event (the withdrawn message itself
    # is settled: it will never be extracted).
    assert await memory.session_cursor(AGENT, "s1") == "e1"
    assert await memory.session_cursor(AGENT, "other") == "o1"
    await memory.wait_idle(AGENT)
    after = await _claims(memory)
    assert not any("Paris" in claim for claim in after)
    assert any("Berlin" in claim for claim in after)
    assert any("green tea" in claim for claim in after)
    assert any("jazz" in claim for claim in after)
    assert len(after) == len(before)
    states = await _states(memory)
    assert states["e2"] == states["e1b"] == 1
    assert await memory.session_cursor(AGENT, "s1") == "e1b"
    # The edited-away text is no longer served as evidence either.
    recall = await memory.recall(AGENT, "where does Ana live Paris")
    assert not any("Paris" in item.text for item in recall.items)

    await memory.ingest_event(
        AGENT, turn("d1", "", kind="message_deleted", replaces="e2")
    )
    await memory.wait_idle(AGENT)
    assert not any("green tea" in claim for claim in await _claims(memory))
    recall = await memory.recall(AGENT, "green tea")
    assert not any("green tea" in item.text for item in recall.items)
    # A replayed edit is a duplicate, a deletion of something absent an error.
    again = await memory.ingest_event(
        AGENT, turn("e1b", "I live in Berlin.", replaces="e1")
    )
    assert again.outcome.value == "duplicate"
    with pytest.raises(InvalidInputError):
        await memory.ingest_event(
            AGENT, turn("d2", "", kind="message_deleted", replaces="o1")
        )


async def test_a_fork_does_not_replay_the_extracted_prefix(memory: Memory) -> None:
    await memory.ingest(
        AGENT, [turn("p1", "I love green tea."), turn("p2", "I live in Paris.")]
    )
    await memory.wait_idle(AGENT)
    batches = await _scalar(memory, "SELECT count(*) FROM event_batches")
    await memory.declare_session(AGENT, "fork", forked_from=("s1", "p2"))
    await memory.ingest(
        AGENT,
        [
            turn("f1", "I love green tea.", session="fork"),
            turn("f2", "I live in Paris.", session="fork"),
            turn("f3", "I have a grey cat named Miso.", session="fork"),
        ],
    )
    await memory.wait_idle(AGENT)
    states = await _states(memory)
    assert (states["f1"], states["f2"], states["f3"]) == (2, 2, 1)
    event_ids = await runtime_core(memory).database.read(
        lambda reader: [
            str(row[0])
            for row in reader.connection.execute(
                "SELECT receipt FROM event_batches WHERE batch_id > ?", (batches,)
            )
        ]
    )
    assert len(event_ids) == 1
    assert '"event_ids":["f3"]' in event_ids[0]
    assert any("Miso" in claim for claim in await _claims(memory))


async def test_a_fork_point_must_exist(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match="fork point"):
        await memory.declare_session(AGENT, "fork", forked_from=("s1", "nope"))


async def test_edited_and_deleted_messages_stay_withdrawn_through_export_and_import(
    memory: Memory, tmp_path: Path
) -> None:
    """An export of a session with an edit and a deletion: the deletion marker (no text)
    does not break the export, and the replaced messages arrive withdrawn on import,
    never recalled there."""
    await memory.ingest(
        AGENT,
        [
            turn("m1", "My locker code word is Quillfeather."),
            turn("m2", "My bicycle is called Thornbramble."),
            turn("m3", "My locker code word is Moonwhistle.", replaces="m1"),
            turn("m4", "", kind="message_deleted", replaces="m2"),
        ],
    )
    await memory.wait_idle(AGENT)
    export = tmp_path / "export.jsonl"
    with export.open("w", encoding="utf-8") as sink:
        await export_memory(memory, sink, AGENT)
    records = [json.loads(line) for line in export.read_text().splitlines()[1:]]
    events = {r["id"]: r for r in records if r["type"] == "event"}
    assert set(events) == {"m1", "m2", "m3"}
    assert events["m1"].get("withdrawn")
    assert events["m2"].get("withdrawn")
    assert not events["m3"].get("withdrawn")
    async with open_test_memory(tmp_path / "imported") as imported:
        await import_memory(imported, export)
        await imported.wait_idle(AGENT)
        for withdrawn in ("Quillfeather", "Thornbramble"):
            recall = await imported.recall(AGENT, withdrawn)
            assert withdrawn not in recall.memory_block
        assert (
            "Moonwhistle" in (await imported.recall(AGENT, "Moonwhistle")).memory_block
        )
        again = tmp_path / "again.jsonl"
        with again.open("w", encoding="utf-8") as sink:
            await export_memory(imported, sink, AGENT)
    assert again.read_text().splitlines()[1:] == export.read_text().splitlines()[1:]
