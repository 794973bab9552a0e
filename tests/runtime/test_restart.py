"""Durability: closing and reopening the runtime keeps evidence, claims and vectors, and
the vector projection comes back from disk without calling the embedder."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn.runtime.core import runtime_core
from cairn.testing import FixedDomainClock, HashingEmbedder


async def test_restart_keeps_everything(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.ingest(
            "agent-a",
            [
                turn("e1", "I love oolong tea."),
                turn("e2", "My brother Tomas lives in Porto."),
            ],
        )
        await memory.wait_idle("agent-a")
        before = await memory.recall("agent-a", "oolong tea Tomas Porto", k=10)
        status_before = (await memory.status()).agent("agent-a")

    embedder = HashingEmbedder()
    async with open_test_memory(data_dir, clock=clock, embedder=embedder) as memory:
        after = await memory.recall("agent-a", "oolong tea Tomas Porto", k=10)
        status_after = (await memory.status()).agent("agent-a")
        supervisor = await runtime_core(memory).registry.get("agent-a")
        assert supervisor.projection.index is not None
        assert len(supervisor.projection.index) == status_before.embeddings
    assert [i.id for i in after.items] == [i.id for i in before.items]
    for key in ("events", "claims", "embeddings"):
        assert getattr(status_after, key) == getattr(status_before, key)
    # Only the warm-up text and the query were embedded after the restart: vectors were
    # loaded, not recomputed.
    assert embedder.calls == 2


async def test_lost_vector_file_is_rebuilt_from_blobs(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.ingest("agent-a", [turn("e1", "I collect vintage postcards.")])
        await memory.wait_idle("agent-a")
    for vector_file in (data_dir / "vectors").rglob("*.vec"):
        vector_file.unlink()
    embedder = HashingEmbedder()
    async with open_test_memory(data_dir, clock=clock, embedder=embedder) as memory:
        recall = await memory.recall("agent-a", "postcards", k=5)
        supervisor = await runtime_core(memory).registry.get("agent-a")
        assert supervisor.projection.index is not None
        assert len(supervisor.projection.index) >= 1
    assert any("postcards" in item.text for item in recall.items)
    assert embedder.calls == 2  # the warm-up text and the query
