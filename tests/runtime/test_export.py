"""An export of a memory in use: it writes what is stored now and returns, whatever
work is still in flight (a host that keeps writing never lets the agent be idle)."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

import trio
from tests.conftest import TEST_CONFIG
from tests.helpers import turn

from cairn import open_memory
from cairn.providers.embedding import Vectors
from cairn.runtime.transfer import export_memory, import_memory
from cairn.testing import FixedDomainClock, HashingEmbedder


class StuckEmbedder(HashingEmbedder):
    """Documents never finish embedding: the agent always has work outstanding."""

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        await trio.sleep_forever()
        raise AssertionError("unreachable")


async def test_an_export_returns_while_work_is_still_in_flight(data_dir: Path) -> None:
    async with open_memory(
        data_dir, TEST_CONFIG, clock=FixedDomainClock(), embedder=StuckEmbedder()
    ) as memory:
        await memory.ingest("a", [turn("e1", "My locker code word is Quillfeather.")])
        sink = io.StringIO()
        with trio.fail_after(30):
            summary = await export_memory(memory, sink, "a")
    assert summary.records["event"] == 1
    (event,) = [
        json.loads(line)
        for line in sink.getvalue().splitlines()[1:]
        if json.loads(line)["type"] == "event"
    ]
    assert "Quillfeather" in event["text"]


async def test_an_import_returns_while_what_it_brought_is_still_embedded(
    data_dir: Path, tmp_path: Path
) -> None:
    export = tmp_path / "export.jsonl"
    async with open_memory(
        data_dir, TEST_CONFIG, clock=FixedDomainClock(), embedder=HashingEmbedder()
    ) as memory:
        await memory.ingest("a", [turn("e1", "My locker code word is Quillfeather.")])
        await memory.wait_idle("a")
        with export.open("w", encoding="utf-8") as sink:
            await export_memory(memory, sink, "a")
    async with open_memory(
        tmp_path / "target",
        TEST_CONFIG,
        clock=FixedDomainClock(),
        embedder=StuckEmbedder(),
    ) as target:
        with trio.fail_after(30):
            summary = await import_memory(target, export)
        assert summary.records["event"].imported == 1
        recall = await target.recall("a", "Quillfeather", wait_s=5)
        assert "Quillfeather" in recall.memory_block
