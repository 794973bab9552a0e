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


@pytest.mark.parametrize("order", ["together", "maintenance_first", "action_first"])
@pytest.mark.parametrize("action", ["forget_first_said", "forget_second_said", "clear"])
async def test_maintenance_racing_forget_and_clear_resurrects_nothing(
    memory: Memory, action: str, order: str
) -> None:
    """A forget or clear beside a maintenance pass, in either order or together: what
    it removed is never recalled again, not after its turns are extracted again, and not
    when the same words are said once more; what it left keeps its claim ID."""
    texts = ("I really love oolong tea.", "I love drinking oolong tea.")
    await memory.ingest("a", [turn("e1", texts[0]), turn("e2", texts[1], session="s2")])
    await memory.wait_idle("a")
    recall = await memory.recall("a", "oolong tea", k=20)
    claims = [i for i in recall.items if i.kind != "evidence"]
    assert len(claims) == 2
    target = claims[0] if action == "forget_first_said" else claims[-1]
    supervisor = await runtime_core(memory).registry.get("a")

    async def act() -> None:
        if action == "clear":
            await memory.clear("a")
        else:
            await memory.forget("a", target.id)

    if order == "together":
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supervisor.run_maintenance_pass)
            nursery.start_soon(act)
    else:
        steps = [supervisor.run_maintenance_pass, act]
        for step in steps if order == "maintenance_first" else steps[::-1]:
            await step()
    await runtime_core(memory).database.write(
        lambda c: c.execute("UPDATE events SET extracted = 0 WHERE agent_id = 'a'")
    )
    await memory.ingest(
        "a",
        [
            turn("e3", texts[0] + " Yes.", session="s3"),
            turn("e4", texts[1] + " Yes.", session="s4"),
        ],
    )
    await memory.wait_idle("a")
    await supervisor.run_maintenance_pass()
    shown = [
        i
        for i in (await memory.recall("a", "oolong tea", k=20)).items
        if i.kind != "evidence"
    ]
    if action == "clear":
        assert shown == []  # both claims tombstoned, the merged-away one with the other
    else:
        assert target.text not in [i.text for i in shown]
        assert {i.id for i in shown} <= {c.id for c in claims} - {target.id}


def test_lineage_of_the_absorbed_claim_moves_to_the_survivor(
    connection: apsw.Connection,
) -> None:
    """A claim drawn from the absorbed one (a reflection) is drawn from the survivor
    after the merge; a claim merged into the absorbed one is the survivor's too."""
    work, plan = _plan(connection)
    ((survivor, absorbed),) = plan.pairs
    with connection:
        connection.execute(
            "INSERT INTO derivations (agent_id, parent_rowid, child_rowid, relation,"
            " created_at) VALUES ('a', ?, 999, 'reflection', '2026-01-01')",
            (absorbed,),
        )
        MergePass().apply(connection, work, plan)
    edges = sorted(
        tuple(row)
        for row in connection.execute(
            "SELECT parent_rowid, child_rowid, relation FROM derivations"
        )
    )
    assert edges == sorted(
        [(absorbed, survivor, "merge"), (survivor, 999, "reflection")]
    )
