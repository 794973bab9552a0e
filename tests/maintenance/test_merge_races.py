"""The merge pass racing forgets, clears and new evidence: ``apply`` decides again on
the rows as they are in its transaction, so a plan made on an older snapshot merges
nothing that changed and brings nothing forgotten back."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import apsw
import pytest
import trio
from tests.helpers import turn

from cairn import Memory
from cairn.domain.claim import ClaimDraft, ClaimKind, Origin
from cairn.domain.ids import AgentId
from cairn.maintenance.merge import MergePass, MergePlan
from cairn.maintenance.passes import Work
from cairn.runtime.core import runtime_core
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


async def test_maintenance_racing_forget_and_clear_resurrects_nothing(
    memory: Memory,
) -> None:
    """Each forget and clear runs beside a maintenance pass, whichever commits first: the
    forgotten claim's words are never recalled again, not even after its turns are
    extracted again and said once more."""
    texts = ("I really love oolong tea.", "I love drinking oolong tea.")
    for round_ in range(6):
        agent = f"r{round_}"
        await memory.ingest(
            agent, [turn("e1", texts[0]), turn("e2", texts[1], session="s2")]
        )
        await memory.wait_idle(agent)
        recall = await memory.recall(agent, "oolong tea", k=20)
        claims = {i.text: i.id for i in recall.items if i.kind != "evidence"}
        target = sorted(claims)[round_ % 2]
        supervisor = await runtime_core(memory).registry.get(agent)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supervisor.run_maintenance_pass)
            if round_ < 4:
                nursery.start_soon(memory.forget, agent, claims[target])
            else:
                nursery.start_soon(memory.clear, agent)
        await runtime_core(memory).database.write(
            lambda c, agent=agent: c.execute(
                "UPDATE events SET extracted = 0 WHERE agent_id = ?", (agent,)
            )
        )
        await memory.ingest(agent, [turn("e3", texts[round_ % 2] + " Yes.", session="s3")])
        await memory.wait_idle(agent)
        await supervisor.run_maintenance_pass()
        shown = [
            i.text
            for i in (await memory.recall(agent, "oolong tea", k=20)).items
            if i.kind != "evidence"
        ]
        # A clear tombstoned both claims (the merged-away one with its survivor).
        assert target not in shown if round_ < 4 else shown == []
