"""A clear killed with SIGKILL at every phase boundary and between batches: after the
restart the job finishes from its stored phase, and no cleared claim is recalled or
written in between, whatever path tries."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import apsw
import pytest
from tests.conftest import open_test_memory

from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.domain.ids import AgentId
from cairn.domain.scope import Scope
from cairn.runtime.core import runtime_core
from cairn.store.agents import ensure_agent
from cairn.store.claims import insert_claims, load_claims
from cairn.store.clear_jobs import CLEAR_BATCH
from cairn.store.connection import open_connection
from cairn.testing import FixedDomainClock

pytestmark = pytest.mark.subprocess

DRIVER = Path(__file__).with_name("clear_driver.py")
CLAIMS_A = 2 * CLEAR_BATCH + 88  # three batches
CLAIMS_B = 20


def _populate(db: Path, clock: FixedDomainClock) -> None:
    connection = open_connection(db)
    try:
        with connection:
            for agent, count in (("a", CLAIMS_A), ("b", CLAIMS_B)):
                ensure_agent(connection, AgentId(agent), clock.now())
                drafts = [
                    ClaimDraft(
                        ClaimKind.FACT,
                        f"Zebra fact {n} of agent {agent}: stripes number {n}.",
                        (),
                    )
                    for n in range(count)
                ]
                insert_claims(connection, AgentId(agent), drafts, {}, clock.now())
    finally:
        connection.close()


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    connection = open_connection(db)
    try:
        return [tuple(row) for row in connection.execute(sql)]
    finally:
        connection.close()


def _visible_claims(db: Path, agent: str) -> int:
    connection = open_connection(db)
    try:
        with connection:
            rowids = [
                int(row[0])
                for row in connection.execute(
                    "SELECT rowid FROM claims WHERE agent_id = ?", (agent,)
                )
            ]
            return len(load_claims(connection, AgentId(agent), rowids, [Scope.agent()]))
    finally:
        connection.close()


KILL_POINTS = [
    ("claims", "0", "claims", 0),  # job persisted, no batch yet
    ("claims", str(CLEAR_BATCH), "claims", CLEAR_BATCH),  # between batches 1 and 2
    ("claims", str(2 * CLEAR_BATCH), "claims", 2 * CLEAR_BATCH),  # between 2 and 3
    ("lineage", "-", "lineage", CLAIMS_A),  # claims -> lineage
    ("vectors", "-", "vectors", CLAIMS_A),  # lineage -> vectors
    ("finish", "-", "vectors", CLAIMS_A),  # vectors removed, job row not yet gone
]


def _crash(data_dir: Path, clock: FixedDomainClock, step: str, deleted: str) -> None:
    """Populate, run the driver until it kills itself at ``step``."""
    data_dir.mkdir(parents=True)
    _populate(data_dir / "cairn.db", clock)
    result = subprocess.run(
        [sys.executable, str(DRIVER), str(data_dir), step, deleted],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == -signal.SIGKILL, result.stdout + result.stderr
    assert f"killing at {step}" in result.stdout


def _check_crashed_state(db: Path, phase: str, count: int) -> None:
    """The job row in its phase, every claim of "a" invisible, writes refused by the
    trigger even on a raw connection; "b" untouched."""
    (job,) = _rows(db, "SELECT agent_id, phase, deleted_claims FROM clear_jobs")
    assert job == ("a", phase, count)
    assert _visible_claims(db, "a") == 0
    assert _visible_claims(db, "b") == CLAIMS_B
    connection = open_connection(db)
    try:
        with pytest.raises(apsw.ConstraintError, match="clear job pending"):
            connection.execute(
                "INSERT INTO claims (claim_id, agent_id, kind, lifecycle, origin, text,"
                " confidence, scope, provenance_key, content_hash, created_at,"
                " updated_at) VALUES ('x', 'a', 'fact', 'active', 'user', 'Zebra',"
                " 1, 'agent', 'p', 'c', 'n', 'n')"
            )
        if CLAIMS_A - count:  # rows left to change
            with pytest.raises(apsw.ConstraintError, match="clear job pending"):
                connection.execute(
                    "UPDATE claims SET lifecycle = 'active' WHERE agent_id = 'a'"
                )
    finally:
        connection.close()


@pytest.mark.parametrize(("step", "deleted", "phase", "count"), KILL_POINTS)
async def test_clear_resumes_after_sigkill(
    data_dir: Path,
    clock: FixedDomainClock,
    step: str,
    deleted: str,
    phase: str,
    count: int,
) -> None:
    db = data_dir / "cairn.db"
    _crash(data_dir, clock, step, deleted)
    _check_crashed_state(db, phase, count)
    async with open_test_memory(data_dir, clock=clock) as memory:
        early = await memory.recall("a", "zebra stripes", k=50)
        assert not [item for item in early.items if item.kind != "evidence"]
        await memory.resume_interrupted_clears()
        late = await memory.recall("a", "zebra stripes", k=50)
        assert not late.items
        other = await memory.recall("b", "zebra stripes", k=50)
        assert len(other.items) == min(50, CLAIMS_B)
        supervisor = await runtime_core(memory).registry.get("a")
        assert supervisor.projection.index is not None
        assert not [
            k for k in supervisor.projection.index.keys().tolist() if k < 1 << 40
        ]
        written = await memory.remember(
            "a", "A fresh start after the clear.", by="user"
        )
        assert written.claim_id is not None

    assert _rows(db, "SELECT count(*) FROM clear_jobs") == [(0,)]
    assert _rows(db, "SELECT count(*) FROM claims WHERE agent_id = 'a'") == [(1,)]
    assert _rows(db, "SELECT count(*) FROM tombstones WHERE agent_id = 'a'") == [
        (CLAIMS_A,)
    ]
    assert _rows(db, "SELECT count(*) FROM claim_fts") == _rows(
        db, "SELECT count(*) FROM claims"
    )
    assert _rows(
        db,
        "SELECT count(*) FROM embeddings e JOIN claims c ON c.rowid = e.target_rowid"
        " WHERE e.target = 'claim' AND e.agent_id = 'a'",
    ) == _rows(
        db,
        "SELECT count(*) FROM embeddings WHERE target = 'claim' AND agent_id = 'a'",
    )
