"""Forgotten plaintext leaves the disk while the runtime runs: right after a forget or a
clear commits, the FTS purge and a TRUNCATE checkpoint follow (not at a timed pass: the
test config's is an hour away), so neither the database file nor its WAL holds a copy. A
reader in the way makes the checkpoint busy: it stays owed and is retried with backoff."""

from __future__ import annotations

import threading
from pathlib import Path

import apsw
import trio
import trio.testing
from tests.conftest import open_test_memory
from tests.helpers import files_holding, turn

from cairn import Memory
from cairn.runtime.core import runtime_core
from cairn.runtime.scrubbing import QUIESCE_AFTER
from cairn.store.connection import open_connection
from cairn.testing import FixedDomainClock

SECRET = "Zanzibarquokka ledgers hide the vexillumtrombone password"
# Tails of the stems as FTS5 stores them (see tests.helpers.files_holding), and the words.
FRAGMENTS = ("zanzibarquokka", "ibarquokk", "vexillumtrombon", "llumtrombon")
CONTROL = "gardening"


def _owed(db: Path) -> tuple[int, int]:
    connection = open_connection(db)
    try:
        purges = connection.execute("SELECT count(*) FROM fts_purges").fetchone()[0]
        owed = connection.execute(
            "SELECT count(*) FROM wal_checkpoint_owed"
        ).fetchone()[0]
        return int(purges), int(owed)
    finally:
        connection.close()


async def _remember_and_serve(memory: Memory) -> str:
    stored = await memory.remember("a", SECRET, by="user")
    await memory.remember("a", "An unrelated memory about gardening.", by="user")
    assert stored.claim_id is not None
    recall = await memory.recall("a", "Zanzibarquokka vexillumtrombone", k=5)
    assert "Zanzibarquokka" in recall.memory_block  # indexed and served
    await memory.wait_idle("a")
    return stored.claim_id


async def test_a_forget_leaves_no_copy_in_the_file_or_wal_while_running(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        claim_id = await _remember_and_serve(memory)
        assert files_holding(data_dir, FRAGMENTS)  # the scan sees the text
        scrubber = runtime_core(memory).scrubber
        before = scrubber.attempts
        await memory.forget("a", claim_id)
        # Woken by the forget's commit, not by a timed pass or by this wait.
        await scrubber.wait_attempts(before + 1)
        assert _owed(data_dir / "cairn.db") == (0, 0)
        assert (data_dir / "cairn.db-wal").stat().st_size < 64 * 1024
        assert files_holding(data_dir, FRAGMENTS) == {}
        assert files_holding(data_dir, [CONTROL])  # still stored text is still seen
        # The agent's timed maintenance never ran meanwhile.
        supervisor = await runtime_core(memory).registry.get("a")
        assert supervisor.statistics().maintenance_passes == 0


async def test_a_forgotten_turn_leaves_no_copy_in_the_file_or_wal_while_running(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.ingest(
            "a",
            [
                turn("t1", "We talked about the gardening club."),
                turn("t2", SECRET),
                turn("t3", "Good idea, nobody would look there.", role="assistant"),
            ],
        )
        await memory.wait_idle("a")
        shown = await memory.recall("a", "Zanzibarquokka vexillumtrombone", k=5)
        (item,) = [i for i in shown.items if "Zanzibarquokka" in i.text]
        assert item.kind == "evidence"
        assert files_holding(data_dir, FRAGMENTS)
        scrubber = runtime_core(memory).scrubber
        before = scrubber.attempts
        await memory.forget("a", item.id)
        await scrubber.wait_attempts(before + 1)
        await memory.wait_idle("a")  # the reply is embedded again without the context
        await scrubber.wait_settled()
        assert _owed(data_dir / "cairn.db") == (0, 0)
        assert files_holding(data_dir, FRAGMENTS) == {}
        assert files_holding(data_dir, [CONTROL])


async def test_a_clear_leaves_no_copy_in_the_file_or_wal_while_running(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        await _remember_and_serve(memory)
        for n in range(30):
            await memory.remember(
                "a", f"Quillonberry harvest number {n} was large.", by="user"
            )
        await memory.wait_idle("a")
        scrubber = runtime_core(memory).scrubber
        before = scrubber.attempts
        report = await memory.clear("a")
        assert report.claims_deleted == 32
        await scrubber.wait_attempts(before + 1)
        await scrubber.wait_settled()
        assert _owed(data_dir / "cairn.db") == (0, 0)
        assert files_holding(data_dir, (*FRAGMENTS, "quillonberr", "llonberr")) == {}


async def test_a_retire_leaves_no_copy_in_the_file_or_wal_while_running(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        await _remember_and_serve(memory)
        await memory.remember("b", "Agent b keeps a memory about gardening.", by="user")
        scrubber = runtime_core(memory).scrubber
        before = scrubber.attempts
        await memory.retire("a")
        await scrubber.wait_attempts(before + 1)
        await scrubber.wait_settled()
        assert _owed(data_dir / "cairn.db") == (0, 0)
        assert files_holding(data_dir, FRAGMENTS) == {}
        assert files_holding(data_dir, [CONTROL])


async def test_a_busy_checkpoint_stays_owed_and_is_retried(
    data_dir: Path, clock: FixedDomainClock, thread_safe_clock: trio.testing.MockClock
) -> None:
    db = data_dir / "cairn.db"
    async with open_test_memory(data_dir, clock=clock) as memory:
        claim_id = await _remember_and_serve(memory)
        scrubber = runtime_core(memory).scrubber
        # Another process's read transaction, begun before the forget: no checkpoint
        # may truncate the frames its snapshot still needs.
        outsider = apsw.Connection(str(db))
        try:
            outsider.execute("BEGIN")
            outsider.execute("SELECT count(*) FROM claims").fetchall()
            before = scrubber.attempts
            await memory.forget("a", claim_id)
            await scrubber.wait_attempts(before + QUIESCE_AFTER + 1)
            # Busy every time (quiescing this runtime's readers cannot help here), and
            # still owed: purged, not yet checkpointed.
            assert scrubber.busy >= QUIESCE_AFTER + 1
            assert _owed(db) == (0, 1)
            assert files_holding(data_dir, FRAGMENTS)
            outsider.execute("COMMIT")
        finally:
            outsider.close()
        # The next retry (virtual backoff) succeeds; nothing else woke the scrubber.
        await scrubber.wait_attempts(scrubber.attempts + 1)
        assert scrubber.busy == 0
        assert _owed(db) == (0, 0)
        assert files_holding(data_dir, FRAGMENTS) == {}


async def test_truncating_waits_for_pool_readers_only_when_quiescing(
    memory: Memory, data_dir: Path
) -> None:
    await memory.remember("a", "Something to put frames in the log.", by="user")
    database = runtime_core(memory).database
    release, reading = threading.Event(), trio.Event()

    def long_read(reader: object) -> None:
        reader.connection.execute("SELECT count(*) FROM claims").fetchall()  # type: ignore[attr-defined]
        trio.from_thread.run_sync(reading.set)
        release.wait(30)

    result: list[bool] = []

    async def quiesced() -> None:
        result.append(await database.truncate_wal(quiesce=True))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(database.read, long_read)
        await reading.wait()
        await memory.remember("a", "A commit after the reader's snapshot.", by="user")
        # A pooled reader mid-transaction keeps the log: busy at once, no waiting.
        assert not await database.truncate_wal()
        nursery.start_soon(quiesced)
        # Quiescing takes the free reader and waits for the busy one to come back (the
        # PASSIVE step before it found a free reader at once).
        pool = database._pool_receive
        while not pool.statistics().tasks_waiting_receive:
            await trio.testing.wait_all_tasks_blocked()
        assert pool.statistics().current_buffer_used == 0
        assert result == []
        release.set()
    assert result == [True]
    assert (data_dir / "cairn.db-wal").stat().st_size == 0
