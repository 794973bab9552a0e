"""``memories``, ``memory`` and ``edit`` through the asyncio adapter: the edit's lineage
and the typed errors arrive as embedded."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from tests.conftest import TEST_CONFIG
from tests.helpers import BASE_TIME, run_on_asyncio, turn

from cairn.errors import InvalidInputError, UnknownClaimError
from cairn.hosts.asyncio_host import open_asyncio_memory
from cairn.testing import FixedDomainClock, HashingEmbedder


def test_inspection_on_an_asyncio_loop(tmp_path: Path) -> None:
    async def program() -> None:
        async with open_asyncio_memory(
            tmp_path / "data",
            TEST_CONFIG,
            clock=FixedDomainClock(BASE_TIME + dt.timedelta(days=1)),
            embedder=HashingEmbedder(),
        ) as memory:
            await memory.ingest("host", [turn("t1", "I live in Berlin.")])
            await memory.wait_idle("host")
            (berlin,) = await memory.memories("host", text="berlin")
            report = await memory.edit("host", berlin.id, "I live in Munich.")
            assert report.memory.text == "I live in Munich."
            detail = await memory.memory("host", report.memory.id)
            assert [(e.relation, e.other_role) for e in detail.lineage] == [
                ("edit", "parent")
            ]
            assert [
                i.id for i in await memory.memories("host", lifecycle="active")
            ] == [report.memory.id]
            with pytest.raises(UnknownClaimError):
                await memory.memory("host", "nope")
            with pytest.raises(InvalidInputError):
                await memory.memories("host", lifecycle="gone")

    run_on_asyncio(program(), 60)
