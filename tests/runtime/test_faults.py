"""Contained faults: an I/O error in a background step (a projection save with no file
descriptors left or a full disk, a full database) fails that step only. It is logged
once, retried with backoff, shown in status, and the agent and the runtime keep serving:
reads always, writes again once the fault is gone. A stale commit is never retried hot."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import turn

from cairn.errors import DrainTimeoutError, MessageTooLargeError, StoreError
from cairn.runtime.actors.write_coordinator import SharedWrite
from cairn.runtime.core import runtime_core
from cairn.store.agents import advance_epoch
from cairn.vectors.manager import VectorStoreManager


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENOSPC])
async def test_a_failing_projection_save_leaves_the_agent_serving(
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    code: int,
    thread_safe_clock: trio.testing.MockClock,
) -> None:
    failing = {"on": True}
    original = VectorStoreManager.publish

    def publish(manager: VectorStoreManager, *args: Any) -> bool:
        if failing["on"]:
            raise OSError(code, "injected")
        return original(manager, *args)

    monkeypatch.setattr(VectorStoreManager, "publish", publish)
    with trio.fail_after(60):
        async with open_test_memory(data_dir) as memory:
            await memory.ingest("a", [turn("a1", "I love oolong tea.")])
            await memory.wait_idle("a")
            supervisor = await runtime_core(memory).registry.get("a")
            await supervisor.run_maintenance_pass()
            entry = (await memory.status()).agent("a")
            assert entry.state.value == "running"
            assert entry.projection_save_error is not None
            assert entry.projection_save_error.startswith("OSError")
            assert entry.statistics is not None
            assert entry.statistics.maintenance_failed_steps == 1
            # Writes and reads go on, vectors included (the projection in memory serves).
            await memory.ingest("a", [turn("a2", "My sister lives in Lisbon.")])
            await memory.wait_idle("a")
            recall = await memory.recall("a", "where does my sister live?")
            assert "Lisbon" in recall.memory_block
            assert recall.manifest is not None
            assert recall.manifest.degradations == ()
            # Recovered: the next attempt after the backoff saves and clears the error.
            failing["on"] = False
            await trio.sleep(1)  # virtual time: the step's backoff (0.5 s) passes
            await supervisor.run_maintenance_pass()
            assert (await memory.status()).agent("a").projection_save_error is None


async def test_a_full_database_refuses_writes_and_keeps_reads_serving(
    data_dir: Path,
) -> None:
    with trio.fail_after(60):
        async with open_test_memory(data_dir) as memory:
            await memory.ingest("a", [turn("a1", "I love oolong tea.")])
            await memory.wait_idle("a")
            writer = runtime_core(memory).database.writer
            pages = writer.execute("PRAGMA page_count").fetchone()[0]
            writer.execute(f"PRAGMA max_page_count = {pages}")
            with pytest.raises(StoreError):
                await memory.ingest("a", [turn("a2", "x " * 20_000)])
            supervisor = await runtime_core(memory).registry.get("a")
            await supervisor.run_maintenance_pass()  # its steps fail alone
            recall = await memory.recall("a", "what do I drink?")
            assert "oolong" in recall.memory_block
            assert (await memory.status()).agent("a").state.value == "running"
            writer.execute("PRAGMA max_page_count = 1073741823")
            await memory.ingest("a", [turn("a3", "My sister lives in Lisbon.")])
            await memory.wait_idle("a")
            assert "Lisbon" in (await memory.recall("a", "sister")).memory_block


async def test_a_stale_commit_backs_off_instead_of_spinning(
    data_dir: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    # Another writer moved the stored epoch past the live fence (what a second runtime
    # on the same directory used to do): every commit of this agent is stale from now on.
    config = attrs.evolve(TEST_CONFIG, extraction_backoff_s=2.0, drain_timeout_s=5.0)
    with trio.fail_after(3600), pytest.raises(DrainTimeoutError):  # noqa: PT012 - raised on close
        async with open_test_memory(data_dir, config) as memory:
            supervisor = await runtime_core(memory).registry.get("a")
            await runtime_core(memory).shared.commit(
                SharedWrite(
                    lambda connection, _now: advance_epoch(
                        connection, supervisor.agent_id
                    ),
                    "a second writer",
                )
            )
            await memory.ingest("a", [turn("a1", "I love oolong tea.")])
            await trio.sleep(120)
            statistics = (await memory.status()).agent("a").statistics
            assert statistics is not None
            stale = statistics.writes_stale
            # A hot retry made hundreds of attempts a second; backoff makes a handful.
            assert 0 < stale < 40
        # The turn can never be extracted under that fence: closing says so, in time.


async def test_a_message_over_the_segment_cap_is_refused_whole(data_dir: Path) -> None:
    config = attrs.evolve(TEST_CONFIG, max_segments_per_message=3)
    with trio.fail_after(60):
        async with open_test_memory(data_dir, config) as memory:
            with pytest.raises(MessageTooLargeError, match="split it into several"):
                await memory.ingest(
                    "a",
                    [turn("ok", "short"), turn("big", "word " * 3000)],
                )
            assert (await memory.status()).agent("a").events == 0  # nothing stored
            await memory.ingest("a", [turn("fits", "word " * 1000)])
            assert (await memory.status()).agent("a").events == 3
