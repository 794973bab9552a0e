"""A restart of the embedding actor (an import's backlog) while one of its batches waits
for the writer: the batch is seen through before the warm-up runs again, so the vectors
it commits are in the projection, never only in the table (the crash-point trial of
``import.records`` found a projection file missing this way)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import apsw
import attrs
import trio
import trio.testing
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn.providers.embedding import Vectors
from cairn.runtime.core import runtime_core
from cairn.runtime.threads import run_in_thread
from cairn.runtime.writes import Write, WriteContext
from cairn.store.embeddings import count_embeddings
from cairn.testing import HashingEmbedder

# Bounds the writer's wait for the test, so a broken test fails instead of hanging.
HOLD_S = 30.0


class HeldFirstBatch(HashingEmbedder):
    """Holds its first document batch until ``release``; counts the texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = trio.Event()
        self.release = trio.Event()
        self.texts: list[str] = []

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.texts += texts
        if not self.entered.is_set():
            self.entered.set()
            await self.release.wait()
        return await super().embed_documents(texts)


@attrs.frozen
class HoldWriter(Write[None]):
    """Keeps the agent's writer busy until ``go`` is set."""

    applying: threading.Event = attrs.field(eq=False)
    go: threading.Event = attrs.field(eq=False)

    def apply(self, connection: apsw.Connection, context: WriteContext) -> None:
        self.applying.set()
        self.go.wait(HOLD_S)


async def test_a_restart_waits_for_the_batch_the_writer_holds(tmp_path: Path) -> None:
    embedder = HeldFirstBatch()
    async with open_test_memory(tmp_path / "data", embedder=embedder) as memory:
        await memory.ingest("a", [turn("e1", "I keep bees on the roof in Porto.")])
        await embedder.entered.wait()
        supervisor = await runtime_core(memory).registry.get("a")
        hold = HoldWriter(threading.Event(), threading.Event())
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supervisor.commit, hold)
            try:
                await run_in_thread(
                    lambda: hold.applying.wait(HOLD_S), limiter=trio.CapacityLimiter(1)
                )
                # The held batch is embedded now and its commit queued behind the hold.
                embedder.release.set()
                await trio.testing.wait_all_tasks_blocked()
                supervisor.embed_backlog()
                await trio.testing.wait_all_tasks_blocked()
                # Not warmed up again while its commit is unanswered: that commit would
                # land behind the warm-up's coverage check, never in the projection.
                assert supervisor._embedding.restarts == 0
            finally:
                hold.go.set()
        await memory.wait_idle("a")
        assert supervisor._embedding.restarts == 1
        identity = embedder.identity
        stored = await runtime_core(memory).database.read(
            lambda reader: count_embeddings(reader.connection, "a", identity)
        )
        assert stored > 0
        assert len(supervisor.projection) == stored
        # And the turn was embedded once: the warm-up found its vector stored.
        assert embedder.texts.count(embedder.texts[0]) == 1
