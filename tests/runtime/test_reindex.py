"""Embedding identity: a new model never serves or mixes with the old one's vectors; the
projection of the new identity is rebuilt in the background while recall says
`reindexing` and carries on lexically."""

from __future__ import annotations

from pathlib import Path

import trio
from tests.conftest import open_test_memory
from tests.fakes import GatedDocuments
from tests.helpers import turn

from cairn import Degradation
from cairn.runtime.core import runtime_core
from cairn.testing import FixedDomainClock

TURNS = [
    turn("e1", "I adopted a grey cat called Miso."),
    turn("e2", "My sister lives in Lisbon."),
    turn("e3", "I play the cello on Sundays."),
]


async def test_model_switch_reindexes_without_mixing(data_dir: Path) -> None:
    clock = FixedDomainClock()
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.ingest("a", TURNS)
        await memory.wait_idle("a")
    new_model = GatedDocuments(dimension=128)
    async with open_test_memory(data_dir, clock=clock, embedder=new_model) as memory:
        during = await memory.recall("a", "cat Miso")
        assert during.manifest is not None
        assert Degradation.REINDEXING in during.manifest.degradations
        assert any("Miso" in item.text for item in during.items)  # lexical still serves
        supervisor = await runtime_core(memory).registry.get("a")
        assert supervisor.projection.index is not None
        assert (
            len(supervisor.projection.index) == 0
        )  # the old model's vectors are not served
        new_model.gate.set()
        with trio.fail_after(30):
            await supervisor.projection.caught_up.wait()
        after = await memory.recall("a", "cat Miso")
        assert after.manifest is not None
        assert after.manifest.degradations == ()
        assert len(supervisor.projection.index) == len(TURNS)
        assert supervisor.projection.index.dimension == 128
        status = await memory.status()
    # Both identities' blobs are kept (switching back needs no re-embedding).
    assert status.agent("a").embeddings == 2 * len(TURNS)
