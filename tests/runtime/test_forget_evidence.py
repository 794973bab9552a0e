"""Forgetting whatever recall shows: a stored turn (or segment) by the ID its item carries,
with every copy of its words (its index entries and vectors, the next turn's context, the
claims only it taught, exports and imports, late results); forgetting one claim removes
that claim only; scopes are never merged; a clear removes the turns too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
import trio.testing
from tests.conftest import open_test_memory
from tests.helpers import BASE_TIME, turn

from cairn import Memory, MemoryConfig, RecallStatus
from cairn.domain.ids import AgentId
from cairn.domain.outcomes import ForgottenKind, IntakeOutcome
from cairn.domain.scope import RecallContext, Scope
from cairn.errors import UnknownMemoryError, UnknownRequestError
from cairn.runtime.core import runtime_core
from cairn.runtime.transfer import export_memory, import_memory
from cairn.store.agents import ensure_agent
from cairn.store.connection import open_connection
from cairn.store.forget import RememberOutcome
from cairn.store.requests import (
    drop_late_results,
    forget_epoch,
    load_recall_result,
    save_recall_result,
)
from cairn.testing import FixedDomainClock, HashingEmbedder
from cairn.vectors.keys import EmbedTarget, vector_key

FROG = "I keep my spare house key under the ceramic frog."
FROG_WORDS = ("spare", "house", "ceramic", "frog")


async def _texts(memory: Memory, agent: str, query: str, **kwargs: object) -> str:
    recall = await memory.recall(agent, query, k=20, **kwargs)  # type: ignore[arg-type]
    return " ".join(item.text for item in recall.items) + recall.memory_block


async def _nothing_matches(memory: Memory, agent: str, words: tuple[str, ...]) -> None:
    for word in (*words, " ".join(words)):
        found = (await _texts(memory, agent, word)).casefold()
        for forgotten in words:
            assert forgotten not in found, (word, found)


def _scalar(path: Path, sql: str, *params: object) -> int:
    connection = open_connection(path)
    try:
        return int(connection.execute(sql, params).fetchone()[0])
    finally:
        connection.close()


async def test_a_recalled_turn_is_forgotten_by_its_item_id(
    memory: Memory, data_dir: Path
) -> None:
    await memory.ingest(
        "a",
        [
            turn("t1", "We talked about the weekend hike."),
            turn("t2", FROG),
            # The reply is indexed and embedded with the turn it answers.
            turn("t3", "Good idea, nobody would look there.", role="assistant"),
        ],
    )
    await memory.wait_idle("a")
    shown = await memory.recall("a", "where is the spare house key?", k=5)
    (item,) = [i for i in shown.items if "frog" in i.text]
    assert item.kind == "evidence"

    result = await memory.forget("a", item.id)

    assert (result.id, result.kind, result.turns_removed) == (
        "t2",
        ForgottenKind.EVIDENCE,
        ("t2",),
    )
    assert "its words from the next turn's index entry" in result.removed
    await memory.wait_idle("a")
    await _nothing_matches(memory, "a", FROG_WORDS)
    # The reply is still memory, found by its own words, without the forgotten context.
    reply = await memory.recall("a", "nobody would look there", k=5)
    assert any(i.id == "t3" for i in reply.items)
    db = data_dir / "cairn.db"
    assert _scalar(db, "SELECT count(*) FROM events WHERE event_id = 't2'") == 0
    assert (
        _scalar(
            db,
            "SELECT count(*) FROM events WHERE event_id = 't3'"
            " AND context_rowid IS NULL",
        )
        == 1
    )
    # Its vector is gone from the live projection; the reply's was embedded again.
    supervisor = await runtime_core(memory).registry.get("a")
    index = supervisor.projection.index
    assert index is not None
    keys = set(index.keys().tolist())
    assert len(keys) == 2
    assert vector_key(EmbedTarget.EVENT, 2) not in keys


async def test_forgetting_a_turn_removes_the_claims_only_it_taught(
    memory: Memory,
) -> None:
    await memory.ingest(
        "a",
        [
            turn("u1", "I live in Lisbon."),
            turn("u2", "I love ramen."),
            turn("u3", "I love ramen.", session="s2"),
        ],
    )
    await memory.wait_idle("a")
    before = await memory.recall("a", "Lisbon ramen", k=20)
    claims = {i.text: i.id for i in before.items if i.kind != "evidence"}
    assert any("Lisbon" in text for text in claims)

    lisbon = await memory.forget("a", "u1")
    ramen = await memory.forget("a", "u2")

    assert len(lisbon.claims_removed) == 1
    assert lisbon.claims_kept == ()
    # The ramen claim has other evidence (u3): it stays, citing only that.
    assert ramen.claims_removed == ()
    assert len(ramen.claims_kept) == 1
    after = await memory.recall("a", "Lisbon ramen", k=20)
    texts = [i.text for i in after.items]
    assert not any("Lisbon" in text for text in texts)
    (kept,) = [i for i in after.items if i.id == ramen.claims_kept[0]]
    assert kept.source_refs == ("u3",)
    # A replay of the forgotten turns teaches nothing again.
    again = await memory.ingest("a", [turn("u1", "I live in Lisbon.")])
    assert again.count(IntakeOutcome.SUPPRESSED) == 1
    await memory.wait_idle("a")
    assert "Lisbon" not in await _texts(memory, "a", "Lisbon")


async def test_the_same_words_under_a_new_id_stay_forgotten(memory: Memory) -> None:
    await memory.ingest("a", [turn("f1", FROG)])
    await memory.wait_idle("a")
    await memory.forget("a", "f1")
    # A host re-sending its transcript with fresh IDs, or a one-character change.
    report = await memory.ingest(
        "a",
        [
            turn("f1-resent", FROG),
            turn("f1-edited", "i keep my spare house key under the ceramic frog"),
            turn("other", "I keep my bike in the shed."),
        ],
    )
    assert [r.outcome for r in report.results] == [
        IntakeOutcome.SUPPRESSED,
        IntakeOutcome.SUPPRESSED,
        IntakeOutcome.INGESTED,
    ]
    await memory.wait_idle("a")
    await _nothing_matches(memory, "a", FROG_WORDS)


async def test_one_segment_of_a_long_message_can_be_forgotten(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    config = MemoryConfig(event_max_bytes=64)
    long_text = (
        "The first part is about gardening and roses in spring. "
        "The second part names the vault combination zebra marigold. "
        "The third part is about cooking pasta on Sundays."
    )
    async with open_test_memory(data_dir, config, clock=clock) as memory:
        await memory.ingest("a", [turn("long", long_text)])
        await memory.wait_idle("a")
        shown = await memory.recall("a", "vault combination zebra marigold", k=5)
        (segment,) = [i for i in shown.items if "zebra" in i.text]
        assert segment.id.startswith("long#seg")
        result = await memory.forget("a", segment.id)
        assert result.turns_removed == (segment.id,)
        await memory.wait_idle("a")
        await _nothing_matches(memory, "a", ("zebra", "marigold", "combination"))
        assert "roses" in await _texts(memory, "a", "gardening roses")


async def test_an_unknown_id_is_a_readable_typed_error(memory: Memory) -> None:
    await memory.ingest("a", [turn("e1", "I like tea.")])
    with pytest.raises(UnknownMemoryError) as raised:
        await memory.forget("a", "f1")
    assert str(raised.value).startswith("no memory 'f1' in agent 'a'")
    # Another agent's turn is not this agent's memory.
    with pytest.raises(UnknownMemoryError):
        await memory.forget("b", "e1")


async def test_forgetting_one_claim_leaves_the_other_claims_of_its_turn(
    memory: Memory,
) -> None:
    await memory.ingest("a", [turn("m1", "I live in Lisbon. I love ramen.")])
    await memory.wait_idle("a")
    recall = await memory.recall("a", "Lisbon ramen", k=20)
    claims = {i.text: i.id for i in recall.items if i.kind != "evidence"}
    (lisbon,) = [claim_id for text, claim_id in claims.items() if "Lisbon" in text]
    (ramen,) = [claim_id for text, claim_id in claims.items() if "ramen" in text]
    result = await memory.forget("a", lisbon)
    assert result.claims_removed == (lisbon,)
    # The turn is hidden (it says the forgotten thing), the sibling claim is not, and it
    # is still found through the words of its turn.
    for query in ("Lisbon ramen", "what food does she love"):
        after = await memory.recall("a", query, k=20)
        assert ramen in [i.id for i in after.items], query
        assert "m1" not in [i.id for i in after.items]
        assert "Lisbon" not in after.memory_block


async def test_export_before_a_forget_does_not_bring_it_back(
    memory: Memory, tmp_path: Path
) -> None:
    await memory.ingest("a", [turn("k1", FROG), turn("k2", "I like green tea.")])
    await memory.wait_idle("a")
    before = tmp_path / "before.jsonl"
    with before.open("w", encoding="utf-8") as out:
        await export_memory(memory, out, "a")
    await memory.forget("a", "k1")

    summary = await import_memory(memory, before)

    assert summary.records["event"].suppressed == 1
    await _nothing_matches(memory, "a", FROG_WORDS)
    after = tmp_path / "after.jsonl"
    with after.open("w", encoding="utf-8") as out:
        await export_memory(memory, out, "a")
    exported = after.read_text(encoding="utf-8").casefold()
    assert "frog" not in exported
    assert "green tea" in exported
    # The export carries the tombstone: a fresh directory importing it with the old
    # export afterwards keeps the turn out too.
    records = [json.loads(line) for line in exported.splitlines()]
    assert any(r.get("type") == "evidence_tombstone" for r in records)


async def test_clear_then_recall_anything_of_the_agent(memory: Memory) -> None:
    await memory.ingest(
        "a",
        [
            turn("c1", FROG),
            turn("c2", "I live in Lisbon."),
            turn("c3", "我在上海工作。"),
        ],
    )
    await memory.remember("a", "The wifi is called Orchard.", by="user")
    await memory.directives.create("a", "Answer briefly.")
    await memory.wait_idle("a")
    report = await memory.clear("a")
    assert (report.claims_deleted >= 2, report.turns_deleted) == (True, 3)
    for query in ("spare key frog", "Lisbon", "上海", "wifi Orchard", "live work"):
        recall = await memory.recall("a", query, k=20)
        assert recall.items == (), query
        assert "Answer briefly." in recall.directive_block


class _GatedEmbedder(HashingEmbedder):
    """Query embedding waits for the test to open the gate (a trio-native block)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = trio.Event()

    async def embed_query(self, text: str):  # type: ignore[no-untyped-def]
        await self.gate.wait()
        return await super().embed_query(text)


_LATE = MemoryConfig(
    recall_wait_s=0.05, query_deadline_floor_s=30.0, query_deadline_ceiling_s=30.0
)


async def _until_stored(memory: Memory, agent: str, request_id: str) -> None:
    while True:
        if (await memory.fetch_recall(agent, request_id)).status is RecallStatus.OK:
            return
        await trio.sleep(0.5)  # virtual time under MockClock


async def test_a_cached_late_recall_is_dropped_by_a_clear(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    embedder = _GatedEmbedder()
    async with open_test_memory(tmp_path, _LATE, embedder=embedder) as memory:
        await memory.ingest("a", [turn("e1", "I adopted a grey cat called Miso.")])
        await memory.wait_idle("a")
        stored = await memory.recall("a", "cat Miso")
        assert stored.status is RecallStatus.PARTIAL
        embedder.gate.set()
        await _until_stored(memory, "a", stored.request_id)
        assert (
            "Miso" in (await memory.fetch_recall("a", stored.request_id)).memory_block
        )
        await memory.clear("a")
        with pytest.raises(UnknownRequestError):
            await memory.fetch_recall("a", stored.request_id)


def test_a_late_result_computed_before_a_forget_is_never_stored(
    tmp_path: Path,
) -> None:
    connection = open_connection(tmp_path / "cairn.db")
    try:
        with connection:
            ensure_agent(connection, AgentId("a"), BASE_TIME)
        snapshot = forget_epoch(connection, AgentId("a"))
        with connection:  # a forget, clear or suppression commits meanwhile
            drop_late_results(connection, AgentId("a"))
        with connection:
            assert not save_recall_result(
                connection, AgentId("a"), "r1", "ok", b"{}", BASE_TIME, snapshot
            )
            fresh = forget_epoch(connection, AgentId("a"))
            assert save_recall_result(
                connection, AgentId("a"), "r2", "ok", b"{}", BASE_TIME, fresh
            )
        assert load_recall_result(connection, AgentId("a"), "r1") is None
        assert load_recall_result(connection, AgentId("a"), "r2") == ("ok", b"{}")
    finally:
        connection.close()


async def test_a_suppressed_topic_drops_cached_late_results(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    embedder = _GatedEmbedder()
    async with open_test_memory(tmp_path, _LATE, embedder=embedder) as memory:
        await memory.ingest("a", [turn("e1", "My ex-partner Tomas moved to Porto.")])
        await memory.wait_idle("a")
        late = await memory.recall("a", "Tomas Porto")
        assert late.status is RecallStatus.PARTIAL
        embedder.gate.set()
        await _until_stored(memory, "a", late.request_id)
        await memory.directives.create("a", "Tomas", kind="suppress_topic")
        with pytest.raises(UnknownRequestError):
            await memory.fetch_recall("a", late.request_id)


async def test_a_models_near_copy_of_a_forgotten_text_stays_out(
    memory: Memory,
) -> None:
    stored = await memory.remember(
        "a", "The spare key is under the ceramic frog.", by="user"
    )
    assert stored.claim_id is not None
    await memory.forget("a", stored.claim_id)
    for variant in (
        "The spare key is under the ceramic frog",
        "The spare key is under the ceramic frog!",
        "The spare\u200b key is under the ceramic frog.",
        "Note: the spare key is under the ceramic frog.",
        "THE SPARE KEY IS UNDER THE CERAMIC FROG.",
        "The spare key is under the ceramic frog。",
        "Ｔｈｅ spare key is under the ceramic frog.",
    ):
        again = await memory.remember("a", variant, by="model")
        assert again.outcome is RememberOutcome.SUPPRESSED, variant
    different = await memory.remember(
        "a", "The spare key is under the ceramic cat.", by="model"
    )
    assert different.outcome is RememberOutcome.STORED


async def test_scopes_are_never_merged_or_widened(memory: Memory) -> None:
    text = "The review meeting moved to Thursday."
    session = await memory.remember("a", text, scope=Scope.session("s1"), by="user")
    agent = await memory.remember("a", text, by="user")
    assert session.outcome is agent.outcome is RememberOutcome.STORED
    assert session.claim_id != agent.claim_id
    outside = await memory.recall("a", "review meeting Thursday", k=5)
    assert [i.id for i in outside.items] == [agent.claim_id]
    assert session.claim_id is not None
    await memory.forget("a", session.claim_id)
    # Forgetting in the session scope leaves the agent-scope memory, and vice versa the
    # session tombstone does not stop the same words in another session.
    outside = await memory.recall("a", "review meeting Thursday", k=5)
    assert [i.id for i in outside.items] == [agent.claim_id]
    other = await memory.remember("a", text, scope=Scope.session("s2"), by="model")
    assert other.outcome is RememberOutcome.STORED
    inside = await memory.recall(
        "a", "review meeting Thursday", k=5, context=RecallContext(session_id="s1")
    )
    assert session.claim_id not in [i.id for i in inside.items]


async def test_a_restart_keeps_the_forgotten_turn_out(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.ingest("a", [turn("r1", FROG), turn("r2", "Thanks for that.")])
        await memory.wait_idle("a")
        await memory.forget("a", "r1")
    async with open_test_memory(data_dir, clock=clock) as memory:
        assert (await memory.ingest("a", [turn("r1", FROG)])).count(
            IntakeOutcome.SUPPRESSED
        ) == 1
        await memory.wait_idle("a")
        await _nothing_matches(memory, "a", FROG_WORDS)
        # A turn after the forget gets a rowid above the forgotten one's.
        await memory.ingest("a", [turn("r3", "A brand new turn.")])
    db = data_dir / "cairn.db"
    assert _scalar(db, "SELECT rowid FROM events WHERE event_id = 'r3'") == 3


async def test_a_forgotten_claims_turn_stays_hidden_where_an_export_is_imported(
    memory: Memory, tmp_path: Path, clock: FixedDomainClock
) -> None:
    await memory.ingest("a", [turn("h1", "I live in Lisbon. I love ramen.")])
    await memory.wait_idle("a")
    recall = await memory.recall("a", "Lisbon ramen", k=20)
    (lisbon,) = [
        i.id for i in recall.items if "Lisbon" in i.text and i.kind != "evidence"
    ]
    await memory.forget("a", lisbon)
    path = tmp_path / "export.jsonl"
    with path.open("w", encoding="utf-8") as out:
        await export_memory(memory, out, "a")
    async with open_test_memory(tmp_path / "elsewhere", clock=clock) as other:
        await import_memory(other, path)
        for query in ("Lisbon", "where does she live", "ramen"):
            found = await other.recall("a", query, k=20)
            assert "Lisbon" not in found.memory_block, query
        assert "ramen" in (await other.recall("a", "ramen", k=20)).memory_block
