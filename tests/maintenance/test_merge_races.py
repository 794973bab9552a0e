"""The merge pass racing forgets, clears and new evidence: ``apply`` decides again on
the rows as they are in its transaction, so a plan made on an older snapshot merges
nothing that changed and brings nothing forgotten back."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import apsw
import pytest

from cairn.domain.claim import ClaimDraft, ClaimKind, Origin
from cairn.domain.ids import AgentId
from cairn.maintenance.merge import MergePass, MergePlan
from cairn.maintenance.passes import Work
from cairn.store.agents import ensure_agent
from cairn.store.claims import insert_claims
from cairn.store.clear_jobs import start_clear
from cairn.store.connection import open_connection
from cairn.store.dirty import load_seeds
from cairn.store.forget import forget_memory, remember_claim

AGENT = AgentId("a")
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.fixture
def connection(tmp_path: Path) -> apsw.Connection:
    connection = open_connection(tmp_path / "cairn.db")
    with connection:
        ensure_agent(connection, AGENT, NOW)
        for text, origin in (
            ("Ana really loves oolong tea", Origin.USER),
            ("Ana loves drinking oolong tea", Origin.MODEL),
        ):
            draft = ClaimDraft(ClaimKind.PREFERENCE, text, ())
            remember_claim(connection, AGENT, draft, origin, NOW)
    return connection


def _plan(connection: apsw.Connection) -> tuple[Work, MergePlan]:
    work = Work(AGENT, NOW, tuple(load_seeds(connection, AGENT, 64)))
    plan = MergePass().plan(connection, work)
    assert plan is not None
    assert len(plan.pairs) == 1
    return work, plan


def _texts(connection: apsw.Connection) -> list[str]:
    return [str(row[0]) for row in connection.execute("SELECT text FROM claims")]


def test_a_plan_applies_when_nothing_changed(connection: apsw.Connection) -> None:
    work, plan = _plan(connection)
    with connection:
        result = MergePass().apply(connection, work, plan)
    assert result.counts["merged"] == 1
    assert _texts(connection) == ["Ana really loves oolong tea"]


def test_a_claim_forgotten_after_the_plan_is_not_merged_back(
    connection: apsw.Connection,
) -> None:
    work, plan = _plan(connection)
    (absorbed,) = [b for _, b in plan.pairs]
    (claim_id,) = connection.execute(
        "SELECT claim_id FROM claims WHERE rowid = ?", (absorbed,)
    ).fetchone()
    with connection:
        forget_memory(connection, AGENT, str(claim_id), NOW)
    with connection:
        result = MergePass().apply(connection, work, plan)
    assert result.counts["merged"] == 0
    assert _texts(connection) == ["Ana really loves oolong tea"]
    assert connection.execute("SELECT count(*) FROM claim_merges").fetchone() == (0,)
    # Still forgotten: the model's remember of it is suppressed.
    again = ClaimDraft(ClaimKind.PREFERENCE, "Ana loves drinking oolong tea", ())
    with connection:
        committed = insert_claims(connection, AGENT, [again], {}, NOW, Origin.MODEL)
    assert committed.suppressed == 1


def test_a_survivor_forgotten_after_the_plan_leaves_the_other_claim_alone(
    connection: apsw.Connection,
) -> None:
    work, plan = _plan(connection)
    ((survivor, _),) = plan.pairs
    (claim_id,) = connection.execute(
        "SELECT claim_id FROM claims WHERE rowid = ?", (survivor,)
    ).fetchone()
    with connection:
        forget_memory(connection, AGENT, str(claim_id), NOW)
        result = MergePass().apply(connection, work, plan)
    assert result.counts["merged"] == 0
    assert _texts(connection) == ["Ana loves drinking oolong tea"]


def test_a_clear_started_after_the_plan_merges_nothing(
    connection: apsw.Connection,
) -> None:
    work, plan = _plan(connection)
    with connection:
        start_clear(connection, AGENT, NOW)
        result = MergePass().apply(connection, work, plan)
    assert result.counts == {}
    assert len(_texts(connection)) == 2


def test_a_merged_survivor_cleared_takes_the_absorbed_identity_with_it(
    connection: apsw.Connection,
) -> None:
    from cairn.store.clear_jobs import clear_batch, pending_clear

    work, plan = _plan(connection)
    with connection:
        MergePass().apply(connection, work, plan)
        start_clear(connection, AGENT, NOW)
        job = pending_clear(connection, AGENT)
        assert job is not None
        clear_batch(connection, job, NOW)
    tombstoned = connection.execute("SELECT count(*) FROM tombstones").fetchone()
    assert tombstoned == (2,)
