"""Late recall results and audit rows are kept for a bounded time and count per agent: a
flood of ``wait_s=0`` recalls never grows ``recall_requests`` past its cap, and
maintenance passes delete expired and over-cap rows, a bounded number per pass. Time is
the injected domain clock."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import trio
import trio.testing
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import turn

from cairn import Memory, MemoryConfig, RecallStatus
from cairn.errors import UnknownRequestError
from cairn.runtime.core import runtime_core
from cairn.runtime.writes import StoreRecallResult
from cairn.store.connection import open_connection
from cairn.testing import FixedDomainClock


def _count(db: Path, table: str, agent: str = "a") -> int:
    connection = open_connection(db)
    try:
        return int(
            connection.execute(
                f"SELECT count(*) FROM {table} WHERE agent_id = ?",
                (agent,),
            ).fetchone()[0]
        )
    finally:
        connection.close()


async def _settled_late_results(memory: Memory, agent: str) -> None:
    """Until every pending recall of the agent has stored its result."""
    while True:
        statistics = (await memory.status()).agent(agent).statistics
        assert statistics is not None
        if not statistics.pending_late_recalls:
            return
        await trio.sleep(1)  # virtual time under MockClock


async def test_a_wait_s_zero_flood_stays_under_the_cap(
    data_dir: Path, clock: FixedDomainClock, thread_safe_clock: trio.testing.MockClock
) -> None:
    cap, waves, per_wave = 100, 4, 500
    config = MemoryConfig(
        recall_wait_s=60.0,
        embed_linger_s=0.001,
        maintenance_interval_s=3600,
        extraction_linger_s=0.001,
        recall_results_per_agent=cap,
        audit_rows_per_agent=300,
    )
    db = data_dir / "cairn.db"
    async with open_test_memory(data_dir, config, clock=clock) as memory:
        await memory.ingest("a", [turn("e1", "I adopted a grey cat called Miso.")])
        await memory.wait_idle("a")
        requests: list[str] = []
        for _ in range(waves):
            for _ in range(per_wave):
                answer = await memory.recall("a", "cat Miso", wait_s=0)
                assert answer.status is RecallStatus.PENDING
                requests.append(answer.request_id)
            await _settled_late_results(memory, "a")
            # Every insert trims the excess in its own transaction.
            assert _count(db, "recall_requests") <= cap
        assert len(requests) == waves * per_wave
        assert _count(db, "recall_requests") == cap
        # The newest results are the ones kept; older ones are gone, not pending.
        assert (await memory.fetch_recall("a", requests[-1])).status is RecallStatus.OK
        with pytest.raises(UnknownRequestError):
            await memory.fetch_recall("a", requests[0])
        # The audit rows of the flood are capped by the passes (2000 rows, batch 2000).
        supervisor = await runtime_core(memory).registry.get("a")
        await supervisor.run_maintenance_pass()
        assert _count(db, "audit") == 300
        assert _count(db, "recall_requests") == cap


def _populate(db: Path, now: dt.datetime) -> None:
    """Results and audit rows for agents "a" and "b", one per minute, oldest first."""
    db.parent.mkdir(parents=True)
    connection = open_connection(db)
    try:
        with connection:
            for agent in ("a", "b"):
                for minute in range(120, 0, -1):
                    at = (now - dt.timedelta(minutes=minute)).isoformat()
                    connection.execute(
                        "INSERT INTO recall_requests (agent_id, request_id, created_at,"
                        " status, result) VALUES (?, ?, ?, 'ok', x'00')",
                        (agent, f"r{minute}", at),
                    )
                    connection.execute(
                        "INSERT INTO audit (agent_id, at, action, detail)"
                        " VALUES (?, ?, 'recall', '{}')",
                        (agent, at),
                    )
    finally:
        connection.close()


def _oldest(db: Path, table: str, column: str) -> str:
    connection = open_connection(db)
    try:
        return str(
            connection.execute(
                f"SELECT min({column}) FROM {table} WHERE agent_id = 'a'"
            ).fetchone()[0]
        )
    finally:
        connection.close()


async def test_maintenance_prunes_expired_rows_a_bounded_number_per_pass(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    db = data_dir / "cairn.db"
    _populate(db, clock.now())
    config = MemoryConfig(
        recall_wait_s=60.0,
        maintenance_interval_s=3600,
        recall_result_retention_s=3600,  # an hour: 60 of the 120 results expired
        audit_retention_s=90 * 60,  # 90 minutes: 30 of the 120 audit rows expired
        audit_rows_per_agent=80,  # and 10 more over the cap
        retention_batch=25,
    )
    async with open_test_memory(data_dir, config, clock=clock) as memory:
        supervisor = await runtime_core(memory).registry.get("a")
        await supervisor.run_maintenance_pass()
        assert _count(db, "recall_requests") == 120 - 25
        assert _count(db, "audit") == 120 - 25
        await supervisor.run_maintenance_pass()
        assert _count(db, "recall_requests") == 120 - 50
        assert _count(db, "audit") == 80  # 30 expired, then 10 over the cap
        for _ in range(3):
            await supervisor.run_maintenance_pass()
        assert _count(db, "recall_requests") == 60  # exactly the last hour
        assert _count(db, "audit") == 80
        cutoff = clock.now() - dt.timedelta(hours=1)
        assert _oldest(db, "recall_requests", "created_at") >= cutoff.isoformat()
        # The domain clock moves on: what was fresh expires in turn.
        clock.advance(dt.timedelta(hours=2))
        for _ in range(4):  # 80 audit rows, 25 a pass
            await supervisor.run_maintenance_pass()
        assert _count(db, "recall_requests") == 0
        assert _count(db, "audit") == 0
    # Another agent's rows are its own maintenance's business.
    assert _count(db, "recall_requests", "b") == 120
    assert _count(db, "audit", "b") == 120


async def test_recall_results_keep_the_newest_per_agent_at_insert(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    config = MemoryConfig(
        recall_wait_s=60.0, maintenance_interval_s=3600, recall_results_per_agent=3
    )
    async with open_test_memory(data_dir, config, clock=clock) as memory:
        supervisor = await runtime_core(memory).registry.get("a")
        # All at one instant (a fixed clock): insertion order decides, not the time.
        for n in range(10):
            await supervisor.commit(
                StoreRecallResult(
                    f"r{n}", "ok", b"x", keep=config.recall_results_per_agent
                )
            )
        connection = open_connection(data_dir / "cairn.db")
        try:
            kept = [
                str(row[0])
                for row in connection.execute(
                    "SELECT request_id FROM recall_requests ORDER BY seq"
                )
            ]
        finally:
            connection.close()
        assert kept == ["r7", "r8", "r9"]


async def test_the_test_config_keeps_defaults(memory: Memory) -> None:
    # The retention defaults: an hour and 1000 late results, 30 days and 100k audit rows.
    config = runtime_core(memory).config
    assert config is TEST_CONFIG
    assert config.recall_result_retention_s == 3600
    assert config.recall_results_per_agent == 1000
    assert config.audit_retention_s == 30 * 86400
    assert config.audit_rows_per_agent == 100_000
