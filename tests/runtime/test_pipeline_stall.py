"""A wait for idle never waits forever on a background pipeline the store keeps refusing.

Real runtime, real SQLite through the fault VFS (cairn.stress.vfs): turns are stored,
then every write fails (a full disk) while extraction or embedding commits. ``wait_idle``
raises ``PipelineStalledError`` within a few backoffs instead of hanging; the turns stay
stored and pending; once the fault clears the same wait finishes them. A one-off fault is
waited through.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import apsw
import attrs
import pytest
import trio
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import turn

from cairn.api.status import AgentStatistics
from cairn.errors import ClearPendingError, PipelineStalledError, StoreError
from cairn.runtime.core import runtime_core
from cairn.runtime.memory import Memory
from cairn.runtime.stall_watch import STALL_FAILURES, StallWatch
from cairn.store.batches import count_pending
from cairn.stress.vfs import Call, FaultPlan, FaultVFS

MARKERS = ("qzxbvkdrtm", "plmoknijbu", "wsxedcrfvt")
# Real time: a stall is 3 failures 0.5 s and 1 s apart; a hang is cut off here.
STALL_BOUND_S = 20.0


@pytest.fixture
def vfs() -> Iterator[FaultVFS]:
    shim = FaultVFS("cairn-pipeline-stall-test")
    yield shim
    shim.close()


def _full_disk(nth: int = 1, *, persistent: bool = True) -> FaultPlan:
    return FaultPlan.on(
        Call.WRITE, None, nth=nth, persistent=persistent, error=apsw.SQLITE_FULL
    )


def _open(data: Path, vfs: FaultVFS) -> AbstractAsyncContextManager[Memory]:
    # Extraction waits for the flush of the wait (no linger start): the fault is armed
    # between the stored turns and the first background commit.
    config = attrs.evolve(
        TEST_CONFIG, vfs=vfs.name, extraction_linger_s=3600.0, rules_linger_s=3600.0
    )
    return open_test_memory(data, config)


@contextlib.asynccontextmanager
async def _stored(data: Path, vfs: FaultVFS) -> AsyncIterator[Memory]:
    """The memory on ``data`` with a turn for each marker stored, none extracted yet."""
    async with _open(data, vfs) as memory:
        await memory.ingest(
            "a",
            [
                turn(f"t{number}", f"My locker word number {number} is {marker}.")
                for number, marker in enumerate(MARKERS)
            ],
        )
        yield memory


async def _pending(memory: Memory) -> int:
    agent = (await runtime_core(memory).registry.get("a")).agent_id
    return await runtime_core(memory).database.read(
        lambda reader: count_pending(reader.connection, agent)
    )


async def _all_recalled(memory: Memory) -> bool:
    for marker in MARKERS:
        if marker not in (await memory.recall("a", marker)).memory_block:
            return False
    return True


async def _statistics(memory: Memory) -> AgentStatistics:
    statistics = (await memory.status()).agent("a").statistics
    assert statistics is not None
    return statistics


async def _stalled_wait(
    memory: Memory, vfs: FaultVFS, plan: FaultPlan, match: str | None = None
) -> PipelineStalledError:
    """With ``plan`` armed, the wait for idle ends in a stall within a few backoffs:
    never a hang."""
    vfs.arm(plan)
    with (
        trio.fail_after(STALL_BOUND_S),
        pytest.raises(PipelineStalledError, match=match) as raised,
    ):
        await memory.wait_idle("a")
    return raised.value


async def _settles_once_cleared(memory: Memory, vfs: FaultVFS) -> None:
    """With the fault cleared, the same wait settles every stored turn, each recalled."""
    vfs.clear()
    with trio.fail_after(60):
        await memory.wait_idle("a")
    assert await _pending(memory) == 0
    assert await _all_recalled(memory)


async def test_wait_idle_raises_a_stall_when_extraction_cannot_commit(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    with trio.fail_after(90):
        async with _stored(tmp_path, vfs) as memory:
            stall = await _stalled_wait(memory, vfs, _full_disk(), match="extraction")
            assert isinstance(stall, StoreError)
            assert "StorageFullError" in str(stall)
            assert vfs.fired >= STALL_FAILURES
            # Nothing stored is lost: the turns are there, still pending, and served.
            assert await _pending(memory) == len(MARKERS)
            assert await _all_recalled(memory)
            # The pipeline recovers by itself: the same wait now finishes the turns.
            await _settles_once_cleared(memory, vfs)
            statistics = await _statistics(memory)
            assert statistics.extraction_batches >= 1
            assert statistics.vectors_embedded >= len(MARKERS)


async def test_wait_idle_waits_through_a_one_off_write_failure(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    with trio.fail_after(90):
        async with _stored(tmp_path, vfs) as memory:
            vfs.arm(_full_disk(persistent=False))
            with trio.fail_after(60):
                await memory.wait_idle("a")
            assert vfs.fired == 1
            assert await _pending(memory) == 0
            assert await _all_recalled(memory)


async def _writes_of_the_wait(tmp_path: Path, vfs: FaultVFS) -> int:
    """How many writes settling the stored turns makes (a dry run)."""
    async with _stored(tmp_path / "dry", vfs) as memory:
        vfs.arm(_full_disk(2**62))
        await memory.wait_idle("a")
        seen = vfs.seen
        vfs.clear()
    return seen


async def test_wait_idle_raises_a_stall_when_embedding_cannot_commit(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    with trio.fail_after(90):
        total = await _writes_of_the_wait(tmp_path, vfs)
        assert total > 2
        async with _stored(tmp_path / "data", vfs) as memory:
            # The last writes are the vectors' commit: extraction has committed before.
            await _stalled_wait(memory, vfs, _full_disk(total), match="embedding")
            assert await _pending(memory) == 0  # extracted: only the vectors are owed
            await _settles_once_cleared(memory, vfs)
            assert (await _statistics(memory)).vectors_embedded >= len(MARKERS)


async def test_a_stall_from_before_a_wait_does_not_end_it_if_the_fault_cleared(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    with trio.fail_after(90):
        async with _stored(tmp_path, vfs) as memory:
            await _stalled_wait(memory, vfs, _full_disk())
            # The streak is still there until the next retry commits: a new wait waits
            # for that retry instead of giving up on the old failures.
            await _settles_once_cleared(memory, vfs)


def test_a_step_is_stalled_only_by_failures_in_a_row_the_latest_after_the_mark() -> (
    None
):
    watch = StallWatch()
    full = StoreError("FullError: database or disk is full")
    watch.failed("extraction", full)
    watch.failed("extraction", full)
    watch.committed("extraction")  # a retry got through: the streak ends
    watch.failed("extraction", full)
    watch.failed("extraction", full)
    assert watch.stalled() is None
    mark = watch.mark()
    watch.failed("extraction", full)
    stall = watch.stalled(mark)
    assert stall is not None
    assert (stall.step, stall.failures) == ("extraction", 3)
    assert watch.stalled(watch.mark()) is None  # nothing failed since that mark
    watch.failed("embedding", ValueError("not the store"))  # not counted
    watch.failed("embedding", ClearPendingError("a clear job is pending"))
    again = watch.stalled(0)
    assert again is not None
    assert again.step == "extraction"


async def test_closing_with_a_stalled_pipeline_keeps_its_turns_for_the_next_start(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    with trio.fail_after(90):
        async with _stored(tmp_path, vfs) as memory:
            await _stalled_wait(memory, vfs, _full_disk())
            closing = trio.current_time()
        # The disk is still full: the close did not wait out the drain timeout for work
        # that cannot commit, and raised nothing.
        assert trio.current_time() - closing < TEST_CONFIG.drain_timeout_s / 2
        vfs.clear()
        async with _open(tmp_path, vfs) as reopened:
            assert await _pending(reopened) == len(MARKERS)
            await _settles_once_cleared(reopened, vfs)


async def _leased_batches(memory: Memory) -> int:
    def read(reader: Any) -> int:
        row = reader.connection.execute(
            "SELECT count(*) FROM event_batches WHERE lease_token IS NOT NULL"
        ).fetchone()
        return int(row[0])

    return int(await runtime_core(memory).database.read(read))


async def test_a_fence_move_while_a_leased_batch_cannot_be_recorded_keeps_the_agent(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    with trio.fail_after(100):
        total = await _writes_of_the_wait(tmp_path, vfs)
        # The first position whose stall leaves a batch leased: the lease committed,
        # the batch commit and the record of its failure are refused.
        for nth in range(2, total):
            async with _stored(tmp_path / f"data-{nth}", vfs) as memory:
                await _stalled_wait(memory, vfs, _full_disk(nth))
                if not await _leased_batches(memory):
                    vfs.clear()
                    continue
                supervisor = await runtime_core(memory).registry.get("a")
                # A switch or clear moves the fence: the pass is cancelled and gives its
                # lease back, which the store refuses too.
                supervisor.fence.advance(supervisor.fence.epoch + 1, "a switch")
                await trio.sleep(1.0)
                assert (await memory.status()).agent("a").state.value == "running"
                await _settles_once_cleared(memory, vfs)
                return
        pytest.fail("no position left a batch leased")
