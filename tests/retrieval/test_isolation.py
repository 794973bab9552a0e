"""Isolation: agent A never sees agent B's rows on any path (lexical, vector, evidence),
and a narrow-scope claim applies only under its own context."""

from __future__ import annotations

import numpy as np
from tests.helpers import turn

from cairn import Memory, RecallContext
from cairn.domain.claim import ClaimDraft, ClaimKind, SourceSpan
from cairn.domain.ids import AgentId, EventId
from cairn.domain.scope import Scope
from cairn.runtime.core import runtime_core
from cairn.store.claims import insert_claims
from cairn.vectors.keys import EmbedTarget, vector_key

# A canary, not a secret (a real code would be redacted at intake and prove nothing).
SECRET = "My locker is painted zanzibar teal and I keep it near the ferry terminal."


async def _seed(memory: Memory) -> None:
    await memory.ingest(
        "agent-b", [turn("b1", SECRET), turn("b2", "I love ferry rides.")]
    )
    await memory.ingest("agent-a", [turn("a1", "I enjoy reading about trains.")])
    await memory.wait_idle("agent-b")
    await memory.wait_idle("agent-a")


async def test_lexical_and_vector_paths_stay_inside_the_agent(memory: Memory) -> None:
    await _seed(memory)
    recall = await memory.recall("agent-a", "ferry terminal locker zanzibar", k=20)
    assert recall.status == "ok"
    for item in recall.items:
        assert item.source_refs == ("a1",) or set(item.source_refs) <= {"a1"}
    assert "zanzibar" not in recall.memory_block
    own = await memory.recall("agent-b", "ferry terminal locker zanzibar", k=20)
    assert any("zanzibar" in item.text for item in own.items)


async def test_vector_candidates_are_revalidated_against_sqlite(memory: Memory) -> None:
    """Even a poisoned vector projection cannot leak rows: keys of agent B planted in agent
    A's index are discarded by the owner-checked reload."""
    await _seed(memory)
    supervisor_a = await runtime_core(memory).registry.get("agent-a")
    index = supervisor_a.projection.index
    assert index is not None

    def rowids(connection) -> list[int]:
        return [
            int(r[0])
            for r in connection.execute(
                "SELECT rowid FROM events WHERE agent_id = 'agent-b'"
            )
        ]

    foreign = await runtime_core(memory).database.read(
        lambda reader: rowids(reader.connection)
    )
    claims_b = await runtime_core(memory).database.read(
        lambda reader: [
            int(r[0])
            for r in reader.connection.execute(
                "SELECT rowid FROM claims WHERE agent_id = 'agent-b'"
            )
        ]
    )
    query = await memory.embedder.embed_query("ferry terminal locker zanzibar")
    keys = np.array(
        [vector_key(EmbedTarget.EVENT, r) for r in foreign]
        + [vector_key(EmbedTarget.CLAIM, r) for r in claims_b],
        dtype=np.int64,
    )
    index.upsert(keys, np.stack([query] * len(keys)))
    recall = await memory.recall("agent-a", "ferry terminal locker zanzibar", k=20)
    assert all(set(item.source_refs) <= {"a1"} for item in recall.items)
    assert "zanzibar" not in recall.memory_block


async def test_session_scoped_claim_needs_its_session(memory: Memory, clock) -> None:
    await memory.ingest(
        "agent-a", [turn("a1", "Today we only speak about the quarterly budget.")]
    )
    await memory.wait_idle("agent-a")
    draft = ClaimDraft(
        kind=ClaimKind.FACT,
        text="The quarterly budget review uses the blue spreadsheet",
        spans=(SourceSpan(EventId("a1"), 0, 10),),
        scope=Scope.session("s1"),
    )

    def commit(connection) -> None:
        rowid = connection.execute(
            "SELECT rowid FROM events WHERE agent_id = 'agent-a' AND event_id = 'a1'"
        ).fetchone()[0]
        insert_claims(
            connection, AgentId("agent-a"), [draft], {EventId("a1"): rowid}, clock.now()
        )

    await runtime_core(memory).database.write(commit)
    query = "blue spreadsheet quarterly budget review"

    def claim_texts(recall) -> list[str]:
        return [item.text for item in recall.items if item.kind != "evidence"]

    assert draft.text in claim_texts(
        await memory.recall("agent-a", query, context=RecallContext(session_id="s1"))
    )
    assert draft.text not in claim_texts(await memory.recall("agent-a", query))
    assert draft.text not in claim_texts(
        await memory.recall("agent-a", query, context=RecallContext(session_id="s2"))
    )
    # Another agent with the same session id sees nothing either.
    assert draft.text not in claim_texts(
        await memory.recall("agent-b", query, context=RecallContext(session_id="s1"))
    )
