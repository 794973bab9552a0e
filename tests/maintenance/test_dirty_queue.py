"""The dirty-work queue: ordered, settled and rotated only at the generation read, a
failing seed behind unprocessed work and, after its attempts, settled as terminal; a
failing seed never blocks the seeds after it (cairn.store.dirty,
cairn.runtime.actors.dirty_work)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import apsw
import attrs
import pytest
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.maintenance.fake_passes import RecordingPass

from cairn import Memory
from cairn.domain.ids import AgentId
from cairn.runtime.core import runtime_core
from cairn.runtime.supervisor import AgentSupervisor
from cairn.store.connection import open_connection
from cairn.store.dirty import (
    count_dirty,
    load_seeds,
    mark_dirty,
    retry_seeds,
    settle_seeds,
)
from cairn.testing import FixedDomainClock

A = AgentId("a")
NOW = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[apsw.Connection]:
    opened = open_connection(tmp_path / "cairn.db")
    yield opened
    opened.close()


def _order(connection: apsw.Connection, now: dt.datetime | None = None) -> list[int]:
    return [seed.claim_rowid for seed in load_seeds(connection, A, 10, now=now)]


def test_seeds_come_in_queue_order_and_a_retried_one_goes_behind(
    connection: apsw.Connection,
) -> None:
    with connection:
        mark_dirty(connection, A, [30, 10, 20])
    assert _order(connection) == [30, 10, 20]  # arrival, not rowid
    first = load_seeds(connection, A, 1)
    with connection:
        rotated, terminal = retry_seeds(
            connection,
            A,
            [(first[0], "ValueError", NOW + dt.timedelta(seconds=30))],
            max_attempts=3,
        )
    assert (rotated, terminal) == (1, [])
    assert _order(connection) == [10, 20, 30]
    # Not handed out again before its backoff has passed.
    assert _order(connection, NOW) == [10, 20]
    assert _order(connection, NOW + dt.timedelta(seconds=30)) == [10, 20, 30]
    (error,) = connection.execute(
        "SELECT last_error FROM dirty_work WHERE claim_rowid = 30"
    ).fetchone()
    assert error == "ValueError"


def test_a_change_keeps_the_seeds_place_and_starts_its_attempts_afresh(
    connection: apsw.Connection,
) -> None:
    with connection:
        mark_dirty(connection, A, [1, 2])
    (seed, _) = load_seeds(connection, A, 2)
    with connection:
        retry_seeds(
            connection,
            A,
            [(seed, "ValueError", NOW + dt.timedelta(hours=1))],
            max_attempts=5,
        )
        mark_dirty(connection, A, [3])
        mark_dirty(connection, A, [1])  # changed again: new work, tried at once
    seeds = load_seeds(connection, A, 10, now=NOW)
    assert [(s.claim_rowid, s.generation, s.attempts) for s in seeds] == [
        (2, 1, 0),
        (1, 2, 0),
        (3, 1, 0),
    ]


def test_settle_and_retry_leave_a_seed_changed_since_it_was_read(
    connection: apsw.Connection,
) -> None:
    with connection:
        mark_dirty(connection, A, [1, 2])
    read = load_seeds(connection, A, 2)
    with connection:
        mark_dirty(connection, A, [1, 2])  # both changed while they were worked
        assert settle_seeds(connection, A, read[:1]) == 0
        assert retry_seeds(
            connection, A, [(read[1], "ValueError", NOW)], max_attempts=1
        ) == (0, [])
    assert [(s.claim_rowid, s.generation) for s in load_seeds(connection, A, 5)] == [
        (1, 2),
        (2, 2),
    ]
    with connection:
        assert settle_seeds(connection, A, load_seeds(connection, A, 5)) == 2
    assert count_dirty(connection, A) == 0


def test_a_seed_out_of_attempts_is_settled_as_terminal(
    connection: apsw.Connection,
) -> None:
    with connection:
        mark_dirty(connection, A, [7])
    for attempt in range(3):
        (seed,) = load_seeds(connection, A, 1)
        assert seed.attempts == attempt
        with connection:
            rotated, terminal = retry_seeds(
                connection, A, [(seed, "ValueError", NOW)], max_attempts=3
            )
        assert (rotated, terminal) == ((1, []) if attempt < 2 else (0, [seed]))
    assert count_dirty(connection, A) == 0


def test_claims_under_a_pending_clear_are_not_handed_out(
    connection: apsw.Connection,
) -> None:
    with connection:
        mark_dirty(connection, A, [1, 2, 5])
        connection.execute(
            "INSERT INTO clear_jobs (agent_id, rowid_cutoff, created_at, phase)"
            " VALUES (?, 2, ?, 'claims')",
            (A, NOW.isoformat()),
        )
    assert _order(connection) == [5]


# -- on the real runtime -------------------------------------------------------------------
CONFIG = attrs.evolve(
    TEST_CONFIG,
    maintenance_seed_batch=2,
    maintenance_max_attempts=3,
    maintenance_retry_backoff_s=5.0,
)


@pytest.fixture
async def small_batches(
    tmp_path: Path, clock: FixedDomainClock
) -> AsyncIterator[Memory]:
    async with open_test_memory(tmp_path / "data", CONFIG, clock=clock) as opened:
        yield opened


async def _with_passes(memory: Memory, *passes: RecordingPass) -> AgentSupervisor:
    registry = runtime_core(memory).registry
    registry.services = attrs.evolve(
        registry.services, maintenance_passes=lambda: passes
    )
    return await registry.get("a")


async def _remember(memory: Memory, *texts: str) -> dict[str, int]:
    rowids = {}
    for text in texts:
        result = await memory.remember("a", text, by="user")
        assert result.rowid is not None
        rowids[text] = result.rowid
    return rowids


async def _maintained(memory: Memory) -> list[int]:
    return await runtime_core(memory).database.read(
        lambda reader: [
            int(str(row[0]))
            for row in reader.connection.execute(
                "SELECT detail FROM audit WHERE action = 'maintained' ORDER BY rowid"
            )
        ]
    )


async def _dirty_count(memory: Memory) -> int:
    return await runtime_core(memory).database.read(
        lambda reader: count_dirty(reader.connection, A)
    )


async def test_a_failing_seed_does_not_block_later_seeds(
    small_batches: Memory, clock: FixedDomainClock
) -> None:
    memory = small_batches
    step = RecordingPass()
    supervisor = await _with_passes(memory, step)
    rows = await _remember(
        memory,
        "The poison claim cannot be planned.",
        "The user keeps bees.",
        "The user plays the cello.",
        "The user grows figs.",
    )
    poison, bees, cello, figs = rows.values()

    await supervisor.run_maintenance_pass()
    # The pass failed for the batch; run seed by seed, only the poison claim failed.
    assert step.seen[:3] == [(poison, bees), (poison,), (bees,)]
    assert await _maintained(memory) == [bees]
    await supervisor.run_maintenance_pass()
    assert await _maintained(memory) == [bees, cello, figs]
    assert await _dirty_count(memory) == 1  # only the poison claim, backing off

    planned = len(step.seen)
    await supervisor.run_maintenance_pass()  # nothing ready yet: nothing tried
    assert len(step.seen) == planned
    for _ in range(2):
        clock.moment += dt.timedelta(hours=1)
        await supervisor.run_maintenance_pass()
    statistics = supervisor.statistics()
    assert statistics.maintenance_seeds_settled == 3
    assert statistics.maintenance_seeds_retried == 2
    assert statistics.maintenance_seeds_terminal == 1
    assert await _dirty_count(memory) == 0  # given up on, never tried forever
    assert await _maintained(memory) == [bees, cello, figs]


async def test_a_seed_answered_retry_rotates_behind_unprocessed_work(
    tmp_path: Path, clock: FixedDomainClock
) -> None:
    config = attrs.evolve(CONFIG, maintenance_seed_batch=1)
    async with open_test_memory(tmp_path / "data", config, clock=clock) as memory:
        step = RecordingPass(retry="retry")
        supervisor = await _with_passes(memory, step)
        rows = await _remember(
            memory, "Please retry this claim later.", "The user keeps bees."
        )
        failing, bees = rows.values()
        await supervisor.run_maintenance_pass()
        await supervisor.run_maintenance_pass()
        # The second batch is the next seed, not the failing one again.
        assert step.seen == [(failing,), (bees,)]
        assert await _maintained(memory) == [bees]
        assert await _dirty_count(memory) == 1
