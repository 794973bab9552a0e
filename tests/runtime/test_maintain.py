"""``maintain``: maintenance now instead of at the timer. Two restatements become one
claim citing both; a drained runtime refuses it, since drain pauses maintenance
(tests/ipc/test_maintain.py: the same over a socket)."""

from __future__ import annotations

import pytest
import trio
from tests.helpers import turn

from cairn import Memory
from cairn.api.protocol import MemoryApi
from cairn.api.reports import MaintenanceReport
from cairn.errors import DrainingError

TEA_1 = "I really love oolong tea."
TEA_2 = "I love drinking oolong tea."


async def tea_sources(memory: MemoryApi, agent: str) -> list[tuple[str, ...]]:
    recall = await memory.recall(agent, "oolong tea", k=20)
    return [
        tuple(item.source_refs)
        for item in recall.items
        if item.kind != "evidence" and "oolong" in item.text
    ]


async def test_maintain_merges_restatements_now(memory: Memory) -> None:
    with trio.fail_after(30):
        await memory.ingest("a", [turn("e1", TEA_1), turn("e2", TEA_2, session="s2")])
        await memory.wait_idle("a")
        assert len(await tea_sources(memory, "a")) == 2  # the timer has not run
        report = await memory.maintain("a")
        assert report.agent_id == "a"
        assert report.batches >= 1
        assert report.settled >= 1
        assert report.remaining == 0
        (refs,) = await tea_sources(memory, "a")
        assert set(refs) == {"e1", "e2"}
        # Nothing left to do: a second call settles nothing.
        again = await memory.maintain("a")
        assert again == MaintenanceReport("a", 0, 0, 0)


async def test_maintain_is_refused_while_drained(memory: Memory) -> None:
    with trio.fail_after(30):
        await memory.ingest("a", [turn("e1", TEA_1), turn("e2", TEA_2, session="s2")])
        await memory.drain(10)
        with pytest.raises(DrainingError):
            await memory.maintain("a")
        assert len(await tea_sources(memory, "a")) == 2  # drain paused maintenance
        await memory.resume()
        assert (await memory.maintain("a")).settled >= 1
        assert len(await tea_sources(memory, "a")) == 1
