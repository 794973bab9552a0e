"""An edited or deleted message in an export: the export is written (a deletion marker
does not break it), and an import keeps the replaced words out of recall, as the memory
they came from did."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

from tests.conftest import TEST_CONFIG
from tests.helpers import BASE_TIME, turn

from cairn import Memory, open_memory
from cairn.runtime.transfer import export_memory, import_memory
from cairn.testing import FixedDomainClock, HashingEmbedder

LATER = BASE_TIME + dt.timedelta(minutes=5)


async def _edit_and_delete(memory: Memory) -> None:
    await memory.ingest(
        "a",
        [
            turn("e1", "I enjoy reading Zxbababa novels."),
            turn("e2", "I enjoy reading Zxcababa novels."),
        ],
    )
    await memory.ingest_event(
        "a", turn("e3", "I enjoy reading Zxdababa novels.", at=LATER, replaces="e1")
    )
    await memory.ingest_event(
        "a", turn("e4", "", at=LATER, kind="message_deleted", replaces="e2")
    )
    await memory.wait_idle("a")


async def _shown(memory: Memory, word: str) -> bool:
    recall = await memory.recall("a", word)
    return any(word in item.text for item in recall.items)


async def test_an_agent_with_a_deleted_message_is_exported(memory: Memory) -> None:
    await _edit_and_delete(memory)
    sink = io.StringIO()
    await export_memory(memory, sink, "a")
    events = {
        record["id"]: record
        for record in map(json.loads, sink.getvalue().splitlines())
        if record["type"] == "event"
    }
    assert sorted(events) == ["e1", "e2", "e3"]  # the deletion marker is its effect
    assert events["e1"]["withdrawn"] is True
    assert events["e2"]["withdrawn"] is True
    assert "withdrawn" not in events["e3"]


async def test_replaced_words_stay_out_of_recall_after_export_and_import(
    memory: Memory, tmp_path: Path
) -> None:
    await _edit_and_delete(memory)
    assert not await _shown(memory, "Zxbababa")
    assert not await _shown(memory, "Zxcababa")
    path = tmp_path / "export.jsonl"
    with path.open("w", encoding="utf-8") as sink:
        await export_memory(memory, sink, "a")
    async with open_memory(
        tmp_path / "copy",
        TEST_CONFIG,
        clock=FixedDomainClock(),
        embedder=HashingEmbedder(),
    ) as copy:
        summary = await import_memory(copy, path)
        assert not summary.rejected
        assert await _shown(copy, "Zxdababa")
        assert not await _shown(copy, "Zxbababa")
        assert not await _shown(copy, "Zxcababa")
        again = io.StringIO()
        await export_memory(copy, again, "a")
    assert again.getvalue() == path.read_text(encoding="utf-8")
