"""The merge pass through the real runtime: near-duplicates from two turns become one
recalled item citing both; scopes, trust and different facts keep claims apart; and the
merged-away claim stays merged (or forgotten) through replays, forgets and imports."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn import Memory
from cairn.domain.scope import Scope
from cairn.runtime.core import runtime_core
from cairn.runtime.transfer import export_memory, import_memory
from cairn.runtime.upkeep import check
from cairn.store.connection import open_connection
from cairn.vectors.keys import EmbedTarget, vector_key

TEA_1 = "I really love oolong tea."
TEA_2 = "I love drinking oolong tea."


async def _maintain(memory: Memory, agent: str = "a") -> None:
    await memory.wait_idle(agent)
    supervisor = await runtime_core(memory).registry.get(agent)
    await supervisor.run_maintenance_pass()


async def _tea_claims(
    memory: Memory, agent: str = "a"
) -> list[tuple[str, tuple[str, ...]]]:
    recall = await memory.recall(agent, "oolong tea", k=20)
    return [
        (item.text, tuple(item.source_refs))
        for item in recall.items
        if item.kind != "evidence" and "oolong" in item.text
    ]


def _rows(path: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    connection = open_connection(path / "cairn.db")
    try:
        return [tuple(row) for row in connection.execute(sql, params)]
    finally:
        connection.close()


async def _merged_tea(memory: Memory) -> None:
    await memory.ingest("a", [turn("e1", TEA_1), turn("e2", TEA_2, session="s2")])
    await _maintain(memory)


async def test_duplicates_merge_into_one_item_citing_all_sources(
    memory: Memory, data_dir: Path
) -> None:
    await memory.ingest("a", [turn("e1", TEA_1), turn("e2", TEA_2, session="s2")])
    await memory.wait_idle("a")
    assert len(await _tea_claims(memory)) == 2
    await _maintain(memory)
    ((text, refs),) = await _tea_claims(memory)
    assert text == "Ana really loves oolong tea"
    assert set(refs) == {"e1", "e2"}
    # The merge left lineage in the same transaction.
    assert _rows(data_dir, "SELECT relation FROM derivations WHERE agent_id = 'a'") == [
        ("merge",)
    ]


async def test_chinese_duplicates_merge_too(memory: Memory) -> None:
    await memory.ingest(
        "a",
        [
            turn("z1", "我非常喜欢乌龙茶。"),
            turn("z2", "我很喜欢喝乌龙茶。", session="s2"),
        ],
    )
    await _maintain(memory)
    recall = await memory.recall("a", "乌龙茶", k=20)
    claims = [item for item in recall.items if item.kind != "evidence"]
    assert len(claims) == 1
    assert set(claims[0].source_refs) == {"z1", "z2"}


async def test_different_facts_never_merge(memory: Memory, data_dir: Path) -> None:
    await memory.ingest(
        "a",
        [
            turn("k1", "I really love Kyoto."),
            turn("k2", "I love Osaka.", session="s2"),
            turn("n1", "I love green tea.", session="s3"),
            turn("n2", "I don't love green tea.", session="s4"),
        ],
    )
    await memory.wait_idle("a")
    before = _rows(data_dir, "SELECT rowid, text FROM claims ORDER BY rowid")
    await _maintain(memory)
    assert _rows(data_dir, "SELECT rowid, text FROM claims ORDER BY rowid") == before
    assert _rows(data_dir, "SELECT count(*) FROM claim_merges") == [(0,)]


async def test_near_duplicates_in_two_scopes_never_merge(
    memory: Memory, data_dir: Path
) -> None:
    for session, text in (
        ("s1", "Ana really loves oolong tea"),
        ("s2", "Ana loves drinking oolong tea"),
    ):
        await memory.remember(
            "a", text, kind="preference", scope=Scope.session(session), by="user"
        )
    await _maintain(memory)
    assert _rows(data_dir, "SELECT count(*) FROM claims WHERE agent_id = 'a'") == [(2,)]


async def test_a_user_statement_is_never_merged_into_a_model_guess(
    memory: Memory, data_dir: Path
) -> None:
    guess = await memory.remember(
        "a", "Ana really loves oolong tea", kind="preference", by="model"
    )
    said = await memory.remember(
        "a", "Ana loves drinking oolong tea", kind="preference", by="user"
    )
    # The model's guess came first and is older: the user's statement still survives.
    await _maintain(memory)
    assert _rows(
        data_dir, "SELECT claim_id, origin FROM claims WHERE agent_id = 'a'"
    ) == [(said.claim_id, "user")]
    assert _rows(data_dir, "SELECT absorbed_id FROM claim_merges") == [
        (guess.claim_id,)
    ]


async def test_a_replay_of_the_absorbed_claims_turn_does_not_recreate_it(
    memory: Memory, data_dir: Path
) -> None:
    await _merged_tea(memory)
    # The turns are extracted again (a crashed batch re-run, an edit rewinding them).
    await runtime_core(memory).database.write(
        lambda c: c.execute("UPDATE events SET extracted = 0 WHERE agent_id = 'a'")
    )
    await memory.wait_idle("a")
    ((_, refs),) = await _tea_claims(memory)
    assert set(refs) == {"e1", "e2"}
    # The same words from a new turn add evidence to the survivor, not a claim.
    await memory.ingest("a", [turn("e3", TEA_2 + " Always.", session="s3")])
    await memory.wait_idle("a")
    ((_, refs),) = await _tea_claims(memory)
    assert set(refs) == {"e1", "e2", "e3"}


async def test_forgetting_the_survivor_keeps_the_absorbed_text_out(
    memory: Memory,
) -> None:
    await _merged_tea(memory)
    recall = await memory.recall("a", "oolong tea", k=20)
    (item,) = [i for i in recall.items if i.kind != "evidence"]
    await memory.forget("a", item.id)
    assert await _tea_claims(memory) == []
    # Neither a re-extraction of the absorbed claim's turn nor its words from a new
    # turn bring it back.
    await runtime_core(memory).database.write(
        lambda c: c.execute("UPDATE events SET extracted = 0 WHERE agent_id = 'a'")
    )
    await memory.ingest("a", [turn("e3", TEA_2 + " Always.", session="s3")])
    await memory.wait_idle("a")
    await _maintain(memory)
    assert await _tea_claims(memory) == []


async def test_forgetting_the_absorbed_claim_by_its_old_id_forgets_what_holds_it(
    memory: Memory,
) -> None:
    await memory.ingest("a", [turn("e1", TEA_1), turn("e2", TEA_2, session="s2")])
    await memory.wait_idle("a")
    recall = await memory.recall("a", "drinking oolong tea", k=20)
    (old,) = [i for i in recall.items if i.kind != "evidence" and "drinking" in i.text]
    await _maintain(memory)
    result = await memory.forget("a", old.id)
    assert old.id in result.claims_removed
    assert await _tea_claims(memory) == []


async def test_forgetting_the_absorbed_claims_only_turn_tombstones_it(
    memory: Memory, data_dir: Path
) -> None:
    await _merged_tea(memory)
    (absorbed_hash,) = _rows(data_dir, "SELECT content_hash FROM claim_merges")
    await memory.forget("a", "e2")
    # The survivor keeps its own evidence; the claim e2 alone taught is tombstoned, as
    # it would have been unmerged.
    ((_, refs),) = await _tea_claims(memory)
    assert set(refs) == {"e1"}
    assert _rows(data_dir, "SELECT count(*) FROM claim_merges") == [(0,)]
    assert absorbed_hash in _rows(data_dir, "SELECT content_hash FROM tombstones")
    await memory.ingest("a", [turn("e3", TEA_2 + " Always.", session="s3")])
    await memory.wait_idle("a")
    ((_, refs),) = await _tea_claims(memory)
    assert set(refs) == {"e1"}


async def test_forgetting_the_survivors_own_turn_brings_the_absorbed_claim_back(
    memory: Memory, data_dir: Path
) -> None:
    await _merged_tea(memory)
    ((survivor, _),) = await _tea_claims(memory)
    assert "really" in survivor
    (own_hash,) = _rows(
        data_dir, "SELECT content_hash FROM claims WHERE agent_id = 'a'"
    )
    await memory.forget("a", "e1")
    await memory.wait_idle("a")
    # The survivor's wording was e1's alone: it goes (tombstoned), and what e2 said is
    # learned again in e2's words, not kept in the forgotten turn's.
    ((text, refs),) = await _tea_claims(memory)
    assert "really" not in text
    assert set(refs) == {"e2"}
    assert own_hash in _rows(data_dir, "SELECT content_hash FROM tombstones")
    assert _rows(data_dir, "SELECT count(*) FROM claim_merges") == [(0,)]
    await _maintain(memory)
    assert (await check(memory)).problems == ()


async def test_the_absorbed_words_said_again_stay_with_the_absorbed_claim(
    memory: Memory,
) -> None:
    await _merged_tea(memory)
    await memory.ingest("a", [turn("e3", TEA_2 + " Always.", session="s3")])
    await memory.wait_idle("a")
    await memory.forget("a", "e1")
    await memory.forget("a", "e2")
    await memory.wait_idle("a")
    # e3 said the absorbed claim's words: it is their evidence, not the survivor's.
    ((text, refs),) = await _tea_claims(memory)
    assert "really" not in text
    assert set(refs) == {"e3"}


async def test_a_remembered_claim_outlives_a_turn_that_said_it_too(
    memory: Memory,
) -> None:
    remembered = await memory.remember(
        "a", "Ana really loves oolong tea", kind="preference", by="user"
    )
    await memory.ingest("a", [turn("e2", TEA_1, session="s2")])
    await _maintain(memory)
    ((_, refs),) = await _tea_claims(memory)
    assert set(refs) == {"e2"}
    await memory.forget("a", "e2")
    # It stands on the user's word, not on the turn: it only loses what it absorbed.
    recall = await memory.recall("a", "oolong tea", k=20)
    assert [i.id for i in recall.items if i.kind != "evidence"] == [remembered.claim_id]


async def test_a_models_remember_goes_with_the_only_turn_it_rests_on(
    memory: Memory,
) -> None:
    await memory.remember(
        "a", "Ana really loves oolong tea", kind="preference", by="model"
    )
    await memory.ingest("a", [turn("e2", TEA_1, session="s2")])
    await memory.wait_idle("a")
    ((_, refs),) = await _tea_claims(memory)
    assert set(refs) == {"e2"}
    await memory.forget("a", "e2")
    # A model's guess said again by a turn rests on it: the user's word keeps nothing.
    assert await _tea_claims(memory) == []


async def test_export_and_import_keep_the_merged_state(
    memory: Memory, tmp_path: Path
) -> None:
    await _merged_tea(memory)
    first = tmp_path / "first.jsonl"
    with first.open("w", encoding="utf-8") as sink:
        await export_memory(memory, sink, "a")
    target = tmp_path / "target"
    async with open_test_memory(target) as copy:
        summary = await import_memory(copy, first)
        assert summary.records["merge"].imported == 1
        await copy.wait_idle("a")
        ((_, refs),) = await _tea_claims(copy)
        assert set(refs) == {"e1", "e2"}
        again = io.StringIO()
        await export_memory(copy, again, "a")
        # A replay where it was imported does not bring the absorbed claim back.
        await runtime_core(copy).database.write(
            lambda c: c.execute("UPDATE events SET extracted = 0 WHERE agent_id = 'a'")
        )
        await copy.wait_idle("a")
        assert len(await _tea_claims(copy)) == 1
    # The same records again. (Not the survivor's provenance key: an import recomputes
    # it over all of a claim's sources, as for any claim that gained sources after its
    # first extraction.)
    assert _without_provenance(again.getvalue()) == _without_provenance(
        first.read_text(encoding="utf-8")
    )


def _without_provenance(export: str) -> list[dict[str, object]]:
    records = [json.loads(line) for line in export.splitlines()]
    return [{k: v for k, v in r.items() if k != "provenance_key"} for r in records]


async def test_an_export_from_before_the_merge_does_not_bring_the_absorbed_claim_back(
    memory: Memory, tmp_path: Path
) -> None:
    await memory.ingest("a", [turn("e1", TEA_1), turn("e2", TEA_2, session="s2")])
    await memory.wait_idle("a")
    older = tmp_path / "older.jsonl"
    with older.open("w", encoding="utf-8") as sink:
        await export_memory(memory, sink, "a")
    await _maintain(memory)
    summary = await import_memory(memory, older)
    assert summary.records["claim"].imported == 0
    await memory.wait_idle("a")
    assert len(await _tea_claims(memory)) == 1


async def test_a_pass_planned_under_an_old_epoch_commits_nothing(
    memory: Memory, data_dir: Path
) -> None:
    for text in ("Ana really loves oolong tea", "Ana loves drinking oolong tea"):
        await memory.remember("a", text, kind="preference", by="user")
    await memory.wait_idle("a")
    # The stored epoch moves on without the live fence knowing: the pass's result is
    # refused at commit, and maintenance goes on with the seeds still dirty.
    await runtime_core(memory).database.write(
        lambda c: c.execute("UPDATE agents SET config_epoch = config_epoch + 1")
    )
    supervisor = await runtime_core(memory).registry.get("a")
    await supervisor.run_maintenance_pass()
    assert _rows(data_dir, "SELECT count(*) FROM claims") == [(2,)]
    assert _rows(data_dir, "SELECT count(*) FROM dirty_work") == [(2,)]


async def test_the_absorbed_claims_vector_leaves_the_projection(memory: Memory) -> None:
    kept = await memory.remember(
        "a", "Ana really loves oolong tea", kind="preference", by="user"
    )
    gone = await memory.remember(
        "a", "Ana loves drinking oolong tea", kind="preference", by="user"
    )
    await _maintain(memory)
    supervisor = await runtime_core(memory).registry.get("a")
    index = supervisor.projection.index
    assert index is not None
    stored = index.keys()
    keys = {int(key) for key in stored}
    assert vector_key(EmbedTarget.CLAIM, kept.rowid or 0) in keys
    assert vector_key(EmbedTarget.CLAIM, gone.rowid or 0) not in keys
    # The published projection agrees with the stored vectors: the doctor finds nothing.
    await supervisor.run_maintenance_pass()
    report = await check(memory)
    assert report.problems == ()


async def test_a_value_said_again_after_itself_becomes_one_current_claim(
    memory: Memory, data_dir: Path
) -> None:
    start = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
    await memory.ingest(
        "a",
        [
            turn("e1", "I love oolong tea.", at=start),
            turn("e2", TEA_1, session="s2", at=start + dt.timedelta(days=1)),
        ],
    )
    await memory.wait_idle("a")
    # A restatement does not make the value it restates history; both hold.
    assert sorted(_rows(data_dir, "SELECT lifecycle FROM claims")) == [
        ("active",),
        ("active",),
    ]
    await _maintain(memory)
    assert _rows(data_dir, "SELECT lifecycle FROM claims") == [("active",)]
    ((_, refs),) = await _tea_claims(memory)
    assert set(refs) == {"e1", "e2"}


async def test_a_value_said_again_after_another_keeps_its_history(
    memory: Memory, data_dir: Path
) -> None:
    start = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
    await memory.ingest(
        "a",
        [
            turn("e1", "I love oolong tea.", at=start),
            turn("e2", "I hate oolong tea.", session="s2", at=start + dt.timedelta(1)),
            turn("e3", TEA_1, session="s3", at=start + dt.timedelta(2)),
        ],
    )
    await memory.wait_idle("a")
    before = _rows(data_dir, "SELECT rowid, text, lifecycle FROM claims ORDER BY rowid")
    assert len(before) == 3
    await _maintain(memory)
    after = _rows(data_dir, "SELECT rowid, text, lifecycle FROM claims ORDER BY rowid")
    assert after == before
