"""The bar of ``ingest``'s and ``import``'s second phase follows the agents' work: it
starts below 100% while extraction and embedding are outstanding and reaches its total
only once they have settled (never a bar that jumps to the end and goes silent).

A real runtime on a real data directory; its embedder holds document batches until the
test lets them through, so the work is outstanding when the bar first reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs
import trio
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn.cli.progress import Bar, PipelineFollower
from cairn.providers.embedding import Vectors
from cairn.testing import HashingEmbedder


@attrs.define(eq=False)
class HeldEmbedder(HashingEmbedder):
    """The hashing embedder, whose document batches wait for ``release``."""

    release: trio.Event = attrs.Factory(trio.Event)

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        await self.release.wait()
        return await super().embed_documents(texts)


class RecordingBar(Bar):
    """Records each reading; ``changed`` is set at every one."""

    def __init__(self) -> None:
        super().__init__(None, None)
        self.readings: list[tuple[float, float | None]] = []
        self.labels: list[str] = []
        self.changed = trio.Event()

    def describe(self, description: str) -> None:
        self.labels.append(description)

    def update_to(self, completed: float, total: float | None) -> None:
        self.readings.append((completed, total))
        self.changed.set()
        self.changed = trio.Event()


async def _reading(bar: RecordingBar, done: bool) -> tuple[float, float | None]:
    """The first reading (``done``: the first at its total)."""
    while not bar.readings or (done and bar.readings[-1][0] != bar.readings[-1][1]):
        await bar.changed.wait()
    return bar.readings[-1]


async def test_pipeline_bar_advances_as_the_work_settles(tmp_path: Path) -> None:
    embedder = HeldEmbedder()
    async with open_test_memory(tmp_path / "data", embedder=embedder) as memory:
        await memory.ingest(
            "ana",
            [turn(f"e{i}", f"I keep {i} bees on the roof.") for i in range(30)],
        )
        bar = RecordingBar()
        follower = PipelineFollower(
            memory, frozenset({"ana"}), bar, "extract and embed"
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: follower.follow(poll_s=0))
            first_done, first_total = await _reading(bar, done=False)
            assert first_total is not None
            assert first_total > 0
            assert first_done < first_total  # work outstanding: not at the end
            embedder.release.set()
            await memory.wait_idle("ana")
            nursery.cancel_scope.cancel()
        # Settled: one more reading finds nothing left, with no help from finish().
        await follower.read()
        last_done, last_total = bar.readings[-1]
    assert last_done == last_total
    assert last_total is not None
    assert last_total >= first_total
    completed = [reading[0] for reading in bar.readings]
    assert completed == sorted(completed)  # never moves back
    assert bar.labels[0] == "extract and embed (0 vectors embedded)"
    assert bar.labels[-1] != bar.labels[0]  # the embedding phase is seen moving
