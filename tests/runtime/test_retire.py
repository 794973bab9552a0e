"""Retire: the whole namespace goes (claims, evidence, directives, tombstones, lineage,
dirty work, audit, late results, vector files) and a re-created agent with the same ID
starts empty; other agents are untouched; a crash midway finishes at the next open."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import trio
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn import Memory
from cairn.domain.ids import AgentId
from cairn.errors import ClearPendingError, RuntimeClosedError
from cairn.runtime.core import runtime_core
from cairn.store.connection import open_connection
from cairn.store.forget import RememberOutcome
from cairn.store.retire import namespace_tables
from cairn.testing import FixedDomainClock
from cairn.vectors.manager import agent_directory_name

DRIVER = Path(__file__).with_name("clear_driver.py")
TURNS = [
    turn("e1", "I love hiking with my dog Rex."),
    turn("e2", "My favourite food is ramen."),
    turn("e3", "I live in Lisbon."),
]


def _namespace_counts(db: Path, agent: str) -> dict[str, int]:
    connection = open_connection(db)
    try:
        counts = {
            table: int(
                connection.execute(
                    f"SELECT count(*) FROM {table} WHERE agent_id = ?",
                    (agent,),
                ).fetchone()[0]
            )
            for table in namespace_tables(connection)
        }
        for index, table in (("claim_fts", "claims"), ("event_fts", "events")):
            indexed = connection.execute(f"SELECT count(*) FROM {index}").fetchone()[0]
            stored = connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            assert indexed == stored, index
        return counts
    finally:
        connection.close()


async def _fill(memory: Memory, agent: str) -> None:
    await memory.ingest(agent, TURNS)
    await memory.wait_idle(agent)
    await memory.directives.create(agent, "Answer briefly.")
    await memory.directives.propose(agent, "Always agree.")
    forgotten = await memory.remember(agent, "The vault code is 4417.", by="user")
    assert forgotten.claim_id is not None
    await memory.forget(agent, forgotten.claim_id)
    await memory.recall(agent, "hiking ramen", k=10)
    supervisor = await runtime_core(memory).registry.get(agent)
    await supervisor.run_maintenance_pass()  # audit rows and a published vector file


async def test_retire_then_recreate_starts_empty(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    db = data_dir / "cairn.db"
    async with open_test_memory(data_dir, clock=clock) as memory:
        await _fill(memory, "a")
        await _fill(memory, "b")
        before_b = _namespace_counts(db, "b")
        before_a = _namespace_counts(db, "a")
        for table in ("claims", "events", "directives", "tombstones", "audit"):
            assert before_a[table] > 0, table
        assert (data_dir / "vectors" / agent_directory_name("a")).exists()

        report = await memory.retire("a")
        assert report.deleted("events") == len(TURNS)
        assert report.deleted("directives") == 2
        assert not (data_dir / "vectors" / agent_directory_name("a")).exists()
        assert set(_namespace_counts(db, "a").values()) == {0}
        assert _namespace_counts(db, "b") == before_b

        # The same ID again: nothing of the old namespace, not even its tombstones.
        recall = await memory.recall("a", "hiking ramen Lisbon vault", k=20)
        assert not recall.items
        assert recall.directive_block == ""
        assert await memory.directives.list("a") == []
        again = await memory.remember("a", "The vault code is 4417.", by="model")
        assert again.outcome is RememberOutcome.STORED
        other = await memory.recall("b", "hiking ramen", k=20)
        assert other.items
        assert "Answer briefly." in other.directive_block


async def test_retire_cancels_owned_work(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    many = [
        turn(f"m{n}", f"Fact number {n}: I own a kite called K{n}.") for n in range(60)
    ]
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.ingest("a", many)
        # Extraction, embedding and the projection's warm-up are still in flight.
        report = await memory.retire("a")
        assert report.deleted("events") == len(many)
    assert set(_namespace_counts(data_dir / "cairn.db", "a").values()) == {0}
    # Nothing the cancelled actors held was published after the retire.
    assert not (data_dir / "vectors" / agent_directory_name("a")).exists()


def _crash_retire(data_dir: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(DRIVER), str(data_dir), "finish", "-", "retire"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == -signal.SIGKILL, result.stdout + result.stderr


async def test_retire_killed_midway_finishes_at_next_open(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        await _fill(memory, "a")
        await _fill(memory, "b")
    db = data_dir / "cairn.db"
    before_b = _namespace_counts(db, "b")
    _crash_retire(data_dir)
    crashed = _namespace_counts(db, "a")
    assert crashed["claims"] == 0  # the claim phase ran
    assert crashed["events"] == 0  # the claims phase deletes the turns too
    assert crashed["clear_jobs"] == 1
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.resume_interrupted_clears()
        assert set(_namespace_counts(db, "a").values()) == {0}
        assert runtime_core(memory).registry.running_supervisor(AgentId("a")) is None
        assert _namespace_counts(db, "b") == before_b
        assert (await memory.recall("b", "hiking", k=5)).items


async def test_writes_queued_when_the_agent_retires_get_an_answer(
    memory: Memory,
) -> None:
    outcomes: list[str] = []

    async def ingest(n: int) -> None:
        try:
            await memory.ingest("a", [turn(f"q{n}", f"Queued fact {n} about ferns.")])
            outcomes.append("stored")
        except (RuntimeClosedError, ClearPendingError):
            outcomes.append("refused")

    await memory.ingest("a", TURNS)
    with trio.fail_after(30):  # a caller left waiting forever would trip this
        async with trio.open_nursery() as nursery:
            for n in range(20):
                nursery.start_soon(ingest, n)
            await trio.lowlevel.checkpoint()
            await memory.retire("a")
    assert len(outcomes) == 20
