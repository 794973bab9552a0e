"""The learning layer end to end: signals derived from the record move each claim's belief
and stage, recall scores with it and says the stage, and removal takes it all along."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from tests.helpers import turn

from cairn import Memory
from cairn.retrieval.types import Recall, RecallItem
from cairn.runtime.core import runtime_core
from cairn.store.connection import open_connection
from cairn.testing import FixedDomainClock


async def _maintain(memory: Memory, agent: str = "a") -> None:
    supervisor = await runtime_core(memory).registry.get(agent)
    await supervisor.run_maintenance_pass()


def _rows(memory: Memory, sql: str, *parameters: object) -> list[tuple[object, ...]]:
    connection = open_connection(memory.path / "cairn.db", readonly=True)
    try:
        return [tuple(row) for row in connection.execute(sql, parameters)]
    finally:
        connection.close()


def _belief(memory: Memory, claim_id: str) -> dict[str, object]:
    rows = _rows(
        memory,
        "SELECT b.stage, b.confidence, b.usefulness, b.stability,"
        " b.contradiction_risk, b.use_count FROM beliefs b"
        " JOIN claims c ON c.rowid = b.claim_rowid WHERE c.claim_id = ?",
        claim_id,
    )
    assert len(rows) == 1, rows
    names = ("stage", "confidence", "usefulness", "stability", "risk", "use_count")
    return dict(zip(names, rows[0], strict=True))


def _signals(memory: Memory, claim_id: str) -> list[tuple[object, ...]]:
    return _rows(
        memory,
        "SELECT s.kind, s.source_key, s.weight FROM signals s"
        " JOIN claims c ON c.rowid = s.claim_rowid WHERE c.claim_id = ?"
        " ORDER BY s.rowid",
        claim_id,
    )


def _claim(recall: Recall, fragment: str) -> RecallItem:
    (item,) = [i for i in recall.items if i.kind != "evidence" and fragment in i.text]
    return item


async def _porto(memory: Memory) -> str:
    await memory.ingest("a", [turn("t1", "I live in Porto.")])
    await memory.wait_idle("a")
    return _claim(await memory.recall("a", "Where does Ana live?"), "Porto").id


async def test_a_claim_from_the_users_turn_is_probationary_until_said_again(
    memory: Memory,
) -> None:
    claim_id = await _porto(memory)
    await _maintain(memory)
    assert _belief(memory, claim_id)["stage"] == "probationary"
    await memory.ingest("a", [turn("t2", "I live in Porto.", session="s2")])
    await memory.wait_idle("a")
    await _maintain(memory)
    belief = _belief(memory, claim_id)
    assert belief["stage"] == "active"
    assert float(str(belief["confidence"])) > 0.85  # the prior: one more source
    assert ("repeated_evidence", "event:2", 1.0) in _signals(memory, claim_id)
    recall = await memory.recall("a", "Where does Ana live?")
    assert _claim(recall, "Porto").stage == "active"


async def test_repeated_evidence_promotes_a_candidate_to_active(memory: Memory) -> None:
    noted = await memory.remember("a", "Ana works at a bakery", by="model")
    assert noted.claim_id is not None
    await _maintain(memory)
    assert _belief(memory, noted.claim_id)["stage"] == "candidate"
    stages = []
    for number in (1, 2):
        await memory.ingest(
            "a", [turn(f"t{number}", "I work at a bakery.", session=f"s{number}")]
        )
        await memory.wait_idle("a")
        await _maintain(memory)
        stages.append(_belief(memory, noted.claim_id)["stage"])
    assert stages == ["probationary", "active"]
    kinds = [kind for kind, _, _ in _signals(memory, noted.claim_id)]
    assert kinds.count("repeated_evidence") == 2
    assert kinds.count("promotion") == 2


async def test_wrong_feedback_twice_quarantines_the_claim_and_it_leaves_recall(
    memory: Memory,
) -> None:
    claim_id = await _porto(memory)
    for expected in ("probationary", "quarantined"):
        recall = await memory.recall("a", "Where does Ana live?")
        assert _claim(recall, "Porto").id == claim_id
        report = await memory.feedback("a", recall.request_id, wrong=[claim_id])
        assert (report.wrong, report.new_signals) == (1, 1)
        await _maintain(memory)
        assert _belief(memory, claim_id)["stage"] == expected
    recall = await memory.recall("a", "Where does Ana live?")
    assert claim_id not in {item.id for item in recall.items}
    # Kept for audit: the row is there, out of recall.
    assert _rows(
        memory, "SELECT lifecycle FROM claims WHERE claim_id = ?", claim_id
    ) == [("quarantined",)]
    assert _rows(memory, "SELECT detail FROM audit WHERE action = 'quarantine'") == [
        (claim_id,)
    ]


async def test_one_wrong_report_demotes_an_active_claim_without_quarantining_it(
    memory: Memory,
) -> None:
    claim_id = await _porto(memory)
    await memory.ingest("a", [turn("t2", "I live in Porto.", session="s2")])
    await memory.wait_idle("a")
    await _maintain(memory)
    assert _belief(memory, claim_id)["stage"] == "active"
    recall = await memory.recall("a", "Where does Ana live?")
    await memory.feedback("a", recall.request_id, wrong=[claim_id])
    await _maintain(memory)
    belief = _belief(memory, claim_id)
    assert belief["stage"] == "probationary"
    assert float(str(belief["risk"])) > 0
    recall = await memory.recall("a", "Where does Ana live?")
    assert _claim(recall, "Porto").stage == "probationary"


async def test_retrieval_support_raises_usefulness_with_no_dirty_work(
    memory: Memory,
) -> None:
    claim_id = await _porto(memory)
    await _maintain(memory)
    first = _belief(memory, claim_id)
    assert _rows(memory, "SELECT count(*) FROM dirty_work") == [(0,)]
    for _ in range(3):
        await memory.recall("a", "Where does Ana live?")
    await _maintain(memory)
    after = _belief(memory, claim_id)
    # The first recall (in _porto) was read by the first pass: four recalls in all.
    assert first["use_count"] == 1
    assert after["use_count"] == 4
    assert float(str(after["usefulness"])) > float(str(first["usefulness"]))
    kinds = [kind for kind, _, _ in _signals(memory, claim_id)]
    assert kinds.count("retrieval_support") == 4
    # Read once: another pass finds nothing new.
    await _maintain(memory)
    assert _belief(memory, claim_id) == after


async def test_being_recalled_often_changes_neither_score_nor_stage(
    memory: Memory,
) -> None:
    claim_id = await _porto(memory)
    await _maintain(memory)
    first = _claim(await memory.recall("a", "Where does Ana live?"), "Porto")
    for _ in range(8):
        await memory.recall("a", "Where does Ana live?")
    await _maintain(memory)
    assert float(str(_belief(memory, claim_id)["usefulness"])) > 0.7
    again = _claim(await memory.recall("a", "Where does Ana live?"), "Porto")
    # Selection is not evidence: ranking by it would rank by ranking's own past choices,
    # and what recall answers would depend on how often it was asked.
    assert again.score == first.score
    assert again.stage == first.stage == "probationary"


async def test_used_feedback_ranks_a_claim_above_an_equal_one(memory: Memory) -> None:
    await memory.ingest(
        "a",
        [
            turn("t1", "I like green tea.", session="s1"),
            turn("t2", "I like black tea.", session="s2"),
        ],
    )
    await memory.wait_idle("a")
    await _maintain(memory)
    recall = await memory.recall("a", "tea")
    green = _claim(recall, "green tea")
    black = _claim(recall, "black tea")
    await memory.feedback("a", recall.request_id, used=[black.id])
    await _maintain(memory)
    after = await memory.recall("a", "tea")
    # Both gained the same retrieval support; only black tea was reported used.
    black_after, green_after = _claim(after, "black tea"), _claim(after, "green tea")
    assert black_after.score / green_after.score > black.score / green.score
    assert (
        _belief(memory, black.id)["usefulness"]
        > _belief(memory, green.id)["usefulness"]
    )  # type: ignore[operator]


async def test_a_claim_without_support_decays_and_new_support_revives_it(
    memory: Memory, clock: FixedDomainClock
) -> None:
    claim_id = await _porto(memory)
    await _maintain(memory)
    clock.advance(dt.timedelta(days=100))
    await _maintain(memory)
    belief = _belief(memory, claim_id)
    assert belief["stage"] == "decaying"
    recall = await memory.recall("a", "Where does Ana live?")
    item = _claim(recall, "Porto")
    assert item.stage == "decaying"
    assert "not confirmed lately" in recall.memory_block
    assert [k for k, _, _ in _signals(memory, claim_id)].count("stale_decay") == 1
    await memory.feedback("a", recall.request_id, used=[claim_id])
    await _maintain(memory)
    assert _belief(memory, claim_id)["stage"] == "active"


async def test_recall_items_say_their_stage(memory: Memory) -> None:
    noted = await memory.remember("a", "Ana keeps bees on the roof", by="model")
    stated = await memory.remember("a", "Ana is allergic to peanuts", by="user")
    await memory.ingest("a", [turn("t1", "I live in Porto.")])
    await memory.wait_idle("a")
    # Before the pass has looked, items say the stage they start at; after, the same.
    for _ in range(2):
        recall = await memory.recall("a", "Ana bees peanuts Porto")
        by_id = {item.id: item for item in recall.items}
        assert noted.claim_id is not None
        assert stated.claim_id is not None
        assert by_id[noted.claim_id].stage == "candidate"
        assert by_id[stated.claim_id].stage == "active"
        assert _claim(recall, "Porto").stage == "probationary"
        assert all(i.stage is None for i in recall.items if i.kind == "evidence")
        assert "noted by a model] Ana keeps bees" in recall.memory_block
        await _maintain(memory)


async def test_forget_removes_the_claims_signals_and_belief(memory: Memory) -> None:
    claim_id = await _porto(memory)
    recall = await memory.recall("a", "Where does Ana live?")
    await memory.feedback("a", recall.request_id, used=[claim_id])
    await _maintain(memory)
    assert _signals(memory, claim_id)
    await memory.forget("a", claim_id)
    assert _rows(memory, "SELECT count(*) FROM signals") == [(0,)]
    assert _rows(memory, "SELECT count(*) FROM beliefs") == [(0,)]


async def test_clear_and_retire_remove_signals_beliefs_and_cursors(
    memory: Memory,
) -> None:
    for agent in ("a", "b"):
        await memory.ingest(agent, [turn("t1", "I live in Porto.")])
        await memory.wait_idle(agent)
        recall = await memory.recall(agent, "Where does Ana live?")
        await memory.feedback(agent, recall.request_id, used=[recall.items[0].id])
        await _maintain(memory, agent)
    count = "SELECT agent_id, count(*) FROM {} GROUP BY agent_id ORDER BY agent_id"
    for table in ("signals", "beliefs", "learning_cursors"):
        assert [agent for agent, _ in _rows(memory, count.format(table))] == ["a", "b"]
    await memory.clear("a")
    for table in ("signals", "beliefs"):
        assert [agent for agent, _ in _rows(memory, count.format(table))] == ["b"]
    await memory.retire("b")
    for table in ("signals", "beliefs", "learning_cursors"):
        assert "b" not in [agent for agent, _ in _rows(memory, count.format(table))]


async def test_belief_changes_leave_stored_and_temporal_confidence_alone(
    memory: Memory,
) -> None:
    await memory.ingest("a", [turn("t1", "I visited Paris last week.")])
    await memory.wait_idle("a")
    recall = await memory.recall("a", "Paris")
    claim_id = _claim(recall, "Paris").id
    stored = "SELECT confidence, temporal_confidence FROM claims WHERE claim_id = ?"
    before = _rows(memory, stored, claim_id)
    assert before[0][1] is not None  # a claim with a temporal confidence of its own
    await memory.feedback("a", recall.request_id, wrong=[claim_id])
    await _maintain(memory)
    assert float(str(_belief(memory, claim_id)["confidence"])) < float(
        str(before[0][0])
    )
    assert _rows(memory, stored, claim_id) == before


async def test_the_ledger_stores_no_text(memory: Memory, data_dir: Path) -> None:
    claim_id = await _porto(memory)
    recall = await memory.recall("a", "Where does Ana live?")
    await memory.feedback("a", recall.request_id, used=[claim_id])
    await _maintain(memory)
    for table in ("signals", "beliefs", "learning_cursors"):
        for row in _rows(memory, f"SELECT * FROM {table}"):
            assert not any("Porto" in str(value) for value in row), (table, row)


@pytest.mark.parametrize("reruns", [1, 3])
async def test_rerunning_the_pass_records_each_signal_once(
    memory: Memory, reruns: int
) -> None:
    claim_id = await _porto(memory)
    await memory.ingest("a", [turn("t2", "I live in Porto.", session="s2")])
    await memory.wait_idle("a")
    await _maintain(memory)
    first = _signals(memory, claim_id)
    for _ in range(reruns):
        await _maintain(memory)
    assert _signals(memory, claim_id) == first


async def test_claims_stored_before_learning_get_a_belief_from_the_walk(
    memory: Memory,
) -> None:
    claim_id = await _porto(memory)
    await _maintain(memory)

    def forget_learning(connection: object) -> None:
        # As a database from before schema 0014: no belief, no cursor, nothing dirty.
        for table in ("beliefs", "signals", "learning_cursors", "dirty_work"):
            connection.execute(f"DELETE FROM {table}")  # type: ignore[attr-defined]

    await runtime_core(memory).database.write(forget_learning)
    assert _rows(memory, "SELECT count(*) FROM beliefs") == [(0,)]
    await _maintain(memory)
    assert _belief(memory, claim_id)["stage"] == "probationary"
    # The next pass finds the walk's end; a finished walk reads nothing again.
    await _maintain(memory)
    (cursor,) = _rows(memory, "SELECT claim_rowid FROM learning_cursors")
    assert cursor == (2**63 - 1,)
