"""Fair share between agents: background capacity is granted to owners in turn, a user's
own writes before bulk work, so one agent's large intake delays another's step by at most
one bounded slice; a cancelled waiter never loses a token."""

from __future__ import annotations

from pathlib import Path

import attrs
import trio
import trio.lowlevel
import trio.testing
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import turn

from cairn.providers.embedding import Vectors
from cairn.runtime.core import runtime_core
from cairn.runtime.fairness import FairLimiter, Priority, Share
from cairn.testing import HashingEmbedder


async def _grant_order(limiter: FairLimiter, shares: list[Share]) -> list[str]:
    order: list[str] = []
    hold = trio.Event()

    async def holder(task_status: trio.TaskStatus[None]) -> None:
        async with limiter.slot(Share("holder")):
            task_status.started()
            await hold.wait()

    async def waiter(share: Share, name: str) -> None:
        async with limiter.slot(share):
            order.append(name)
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        await nursery.start(holder)
        for number, share in enumerate(shares):
            nursery.start_soon(waiter, share, f"{share.owner}{number}")
            await trio.testing.wait_all_tasks_blocked()
        hold.set()
    return order


async def test_owners_take_turns_and_interactive_work_goes_first() -> None:
    with trio.fail_after(5):
        limiter = FairLimiter(1)
        bulk_x = [Share("x")] * 4
        order = await _grant_order(
            limiter, [*bulk_x, Share("y"), Share("z", Priority.INTERACTIVE)]
        )
    # x queued four steps before y asked once: y still waits for one step of x only.
    assert order == ["z5", "x0", "y4", "x1", "x2", "x3"]


async def test_a_cancelled_waiter_gives_its_turn_away() -> None:
    with trio.fail_after(5):
        limiter = FairLimiter(1)
        order: list[str] = []
        async with trio.open_nursery() as nursery:
            hold = trio.Event()

            async def holder(task_status: trio.TaskStatus[None]) -> None:
                async with limiter.slot(Share("holder")):
                    task_status.started()
                    await hold.wait()

            async def waiter(name: str, scope: trio.CancelScope) -> None:
                with scope:
                    async with limiter.slot(Share(name)):
                        order.append(name)

            await nursery.start(holder)
            cancelled = trio.CancelScope()
            nursery.start_soon(waiter, "gone", cancelled)
            nursery.start_soon(waiter, "next", trio.CancelScope())
            await trio.testing.wait_all_tasks_blocked()
            cancelled.cancel()
            await trio.testing.wait_all_tasks_blocked()
            hold.set()
        assert order == ["next"]
        async with limiter.slot(Share("after")):
            assert limiter.waiting == 0


async def test_a_cancel_on_the_uncontended_path_keeps_the_token() -> None:
    with trio.fail_after(5):
        limiter = FairLimiter(1)
        with trio.CancelScope() as scope:
            scope.cancel()
            async with limiter.slot(Share("x")):
                pass  # pragma: no cover - cancelled before it is entered
        async with limiter.slot(Share("y")):
            assert limiter.waiting == 0


@attrs.define(eq=False)
class SlowModel(HashingEmbedder):
    """Document batches hold a background token for 1 s of virtual time per text, as
    the embedded model holds a thread; queries are free."""

    limiter: FairLimiter | None = None
    per_text_s: float = 1.0

    async def embed_documents(self, texts: list[str]) -> Vectors:  # type: ignore[override]
        assert self.limiter is not None
        async with self.limiter.slot():
            await trio.sleep(self.per_text_s * len(texts))
        return await super().embed_documents(texts)


async def test_a_large_intake_delays_another_agent_by_one_slice_at_most(
    data_dir: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    model = SlowModel()
    with trio.fail_after(3600):
        async with open_test_memory(data_dir, embedder=model) as memory:
            model.limiter = runtime_core(memory).limiters.background
            await memory.ingest("y", [turn("y0", "I love oolong tea.")])
            await memory.wait_idle("y")
            # About 45 segments for x: at 1 s a text, most of a minute of embedding.
            await memory.ingest("x", [turn("x1", "lorem ipsum dolor " * 6_000)])
            started = trio.current_time()
            await memory.ingest("y", [turn("y1", "My sister lives in Lisbon.")])
            await memory.wait_idle("y")
            waited = trio.current_time() - started
            slice_texts = -(
                -TEST_CONFIG.embed_slice_bytes // TEST_CONFIG.event_max_bytes
            )
            # y's own text, plus at most one slice of x's in front of each of y's two
            # background steps (extraction, embedding); x's batches are 32 texts.
            assert waited <= (2 * slice_texts + 1) * model.per_text_s + 1.0
            recall = await memory.recall("y", "sister")
            assert "Lisbon" in recall.memory_block
