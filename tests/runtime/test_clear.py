"""Clear jobs: durable, fenced, resumable. Cleared claims never come back (not on recall
while the job runs, not through a raw SQL write, not by re-extraction of the same
evidence), and directives and evidence are kept."""

from __future__ import annotations

from pathlib import Path

import apsw
import numpy as np
import pytest
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.domain.ids import AgentId
from cairn.domain.outcomes import IntakeOutcome
from cairn.ingestion.intake import prepare_turns
from cairn.runtime.core import runtime_core
from cairn.store.agents import ensure_agent
from cairn.store.claims import insert_claims
from cairn.store.clear_jobs import start_clear
from cairn.store.connection import open_connection
from cairn.store.embeddings import missing_targets, store_embeddings
from cairn.store.evidence import insert_events, load_events, mark_extracted
from cairn.testing import FixedDomainClock, HashingEmbedder
from cairn.vectors.codec import encode_vector
from cairn.vectors.identity import EmbeddingIdentity
from cairn.vectors.keys import EmbedTarget

TURNS = [
    turn("e1", "I love hiking with my dog Rex."),
    turn("e2", "My favourite food is ramen."),
    turn("e3", "I live in Lisbon."),
]


def _count(path: Path, sql: str) -> int:
    connection = open_connection(path)
    try:
        return int(connection.execute(sql).fetchone()[0])
    finally:
        connection.close()


async def test_clear_removes_claims_and_their_turns_and_keeps_directives(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.ingest("a", TURNS)
        await memory.ingest("b", [turn("x1", "I love hiking too.")])
        await memory.add_directive("a", "Answer briefly.")
        await memory.wait_idle("a")
        await memory.wait_idle("b")
        before = await memory.recall("a", "hiking ramen Lisbon", k=20)
        claims_before = [item for item in before.items if item.kind != "evidence"]
        assert claims_before
        report = await memory.clear("a")
        assert report.claims_deleted == len(claims_before)
        assert report.turns_deleted == len(TURNS)
        assert "directives" in report.kept
        assert "evidence" in report.removed
        assert report.kept_counts.directives == 1
        assert report.kept_counts.events == 0
        assert "directives" in report.summary
        # Nothing of the agent is recalled any more: neither claims nor their turns.
        after = await memory.recall("a", "hiking ramen Lisbon dog Rex", k=20)
        assert after.items == ()
        assert "Answer briefly." in after.directive_block
        supervisor = await runtime_core(memory).registry.get("a")
        assert supervisor.projection.index is not None
        assert len(supervisor.projection.index) == 0
        # A replay of the same turns stores nothing: tombstones of their IDs hold.
        report_again = await memory.ingest("a", TURNS)
        assert report_again.count(IntakeOutcome.SUPPRESSED) == len(TURNS)
        await memory.wait_idle("a")
        assert (await memory.recall("a", "hiking ramen Lisbon", k=20)).items == ()
        # New words after the clear are memory again.
        await memory.ingest("a", [turn("n1", "I started learning the cello.")])
        await memory.wait_idle("a")
        assert (await memory.recall("a", "cello", k=5)).items
        other = await memory.recall("b", "hiking", k=5)
        assert any(item.kind != "evidence" for item in other.items)
    db = data_dir / "cairn.db"
    assert (
        _count(
            db,
            "SELECT count(*) FROM claims WHERE agent_id = 'a' AND text LIKE '%hiking%'",
        )
        == 0
    )
    assert _count(db, "SELECT count(*) FROM tombstones WHERE agent_id = 'a'") == len(
        claims_before
    )
    assert _count(db, "SELECT count(*) FROM claim_fts") == _count(
        db, "SELECT count(*) FROM claims"
    )
    assert _count(db, "SELECT count(*) FROM event_fts") == _count(
        db, "SELECT count(*) FROM events"
    )
    assert (
        _count(
            db,
            "SELECT count(*) FROM embeddings WHERE agent_id = 'a' AND target_rowid IN"
            " (SELECT rowid FROM events WHERE event_id IN ('e1', 'e2', 'e3'))",
        )
        == 0
    )
    assert _count(db, "SELECT count(*) FROM clear_jobs") == 0
    assert _count(db, "SELECT count(*) FROM events WHERE agent_id = 'a'") == 1


async def test_pending_clear_fences_raw_writes_and_resumes_after_a_crash(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.ingest("a", TURNS)
        await memory.wait_idle("a")
    db = data_dir / "cairn.db"
    claims = _count(db, "SELECT count(*) FROM claims WHERE agent_id = 'a'")
    assert claims >= 2
    # The process "crashed" right after persisting the job: only the job row exists.
    connection = open_connection(db)
    try:
        with connection:
            start_clear(connection, AgentId("a"), clock.now())
        with pytest.raises(apsw.ConstraintError, match="clear job pending"):
            connection.execute(
                "UPDATE claims SET text = 'resurrected' WHERE agent_id = 'a'"
            )
        with pytest.raises(apsw.ConstraintError, match="clear job pending"):
            connection.execute(
                "INSERT INTO claims (claim_id, agent_id, kind, lifecycle, origin, text,"
                " confidence, scope, provenance_key, content_hash, created_at, updated_at)"
                " VALUES ('x', 'a', 'fact', 'active', 'user', 't', 1, 'agent', 'p', 'c', 'n', 'n')"
            )
    finally:
        connection.close()
    async with open_test_memory(data_dir, clock=clock) as memory:
        # Whether or not the resumed job has finished yet, no cleared claim is recalled.
        recall = await memory.recall("a", "hiking ramen Lisbon", k=20)
        assert all(item.kind == "evidence" for item in recall.items)
        supervisor = await runtime_core(memory).registry.get("a")
        await supervisor.clearing.wait_finished()
    assert _count(db, "SELECT count(*) FROM claims WHERE agent_id = 'a'") == 0
    assert _count(db, "SELECT count(*) FROM clear_jobs") == 0
    assert _count(db, "SELECT count(*) FROM tombstones WHERE agent_id = 'a'") == claims


def test_pending_clear_fences_the_embedding_paths(
    tmp_path: Path, clock: FixedDomainClock
) -> None:
    identity = EmbeddingIdentity("testing", "t", 4)
    blob = encode_vector(np.ones(4, dtype=np.float32) / 2)
    connection = open_connection(tmp_path / "c.db")
    try:
        with connection:
            ensure_agent(connection, AgentId("a"), clock.now())
            committed = insert_claims(
                connection,
                AgentId("a"),
                [ClaimDraft(ClaimKind.FACT, "A remembered fact.", ())],
                {},
                clock.now(),
            )
            (rowid, _text) = committed.inserted[0]
            assert missing_targets(connection, AgentId("a"), identity, 10)
            start_clear(connection, AgentId("a"), clock.now())
            # Neither read for embedding nor given a vector while the clear is pending.
            assert missing_targets(connection, AgentId("a"), identity, 10) == []
            stored = store_embeddings(
                connection, AgentId("a"), identity, [("claim", rowid, blob)]
            )
            assert stored == []
    finally:
        connection.close()


async def test_turns_ingested_during_a_clear_are_extracted_after_it(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.ingest("a", TURNS)
        await memory.wait_idle("a")
    # A job persisted (as by a clear cut off by a crash): it resumes when the agent
    # starts, and a turn taken in meanwhile is above its cutoff.
    connection = open_connection(data_dir / "cairn.db")
    try:
        with connection:
            start_clear(connection, AgentId("a"), clock.now())
    finally:
        connection.close()
    async with open_test_memory(data_dir, clock=clock) as memory:
        report = await memory.ingest(
            "a", [turn("n1", "I love playing the cello with my friends.")]
        )
        assert report.ingested == 1
        await memory.wait_cleared("a")
        await memory.wait_idle("a")
        recall = await memory.recall("a", "cello hiking ramen", k=20)
    claims = [item.text for item in recall.items if item.kind != "evidence"]
    assert claims
    assert all("cello" in text for text in claims)


async def test_a_resumed_clear_reembeds_the_reply_to_a_cleared_turn(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    embedder = HashingEmbedder()
    async with open_test_memory(data_dir, clock=clock, embedder=embedder) as memory:
        await memory.ingest("a", [turn("q1", "My ferret is called Quillonberry.")])
        await memory.wait_idle("a")
    db = data_dir / "cairn.db"
    connection = open_connection(db)
    try:
        # A crash right after the job started; a reply had arrived after its cutoff,
        # indexed and embedded with the turn the job clears as its context.
        with connection:
            start_clear(connection, AgentId("a"), clock.now())
        with connection:
            (reply,) = insert_events(
                connection,
                AgentId("a"),
                prepare_turns([turn("q2", "Lovely name for a pet.")], 2400),
                clock.now(),
            )
            assert reply.rowid is not None
            mark_extracted(connection, AgentId("a"), [reply.rowid])
            (event,) = load_events(connection, AgentId("a"), [reply.rowid]).values()
            assert event.context is not None
            vector = (await embedder.embed_documents([event.embedding_text()]))[0]
            store_embeddings(
                connection,
                AgentId("a"),
                embedder.identity,
                [(EmbedTarget.EVENT, reply.rowid, encode_vector(vector))],
            )
    finally:
        connection.close()
    async with open_test_memory(data_dir, clock=clock, embedder=embedder) as memory:
        await memory.resume_interrupted_clears()
        await memory.wait_idle("a")
        found = await memory.recall("a", "Quillonberry ferret", k=5)
        assert "Quillonberry" not in found.memory_block
        supervisor = await runtime_core(memory).registry.get("a")
        assert supervisor.projection.index is not None
        # The reply lost its vector with the cleared context and was embedded again.
        assert len(supervisor.projection.index) == 1
    assert _count(db, "SELECT count(*) FROM embeddings WHERE agent_id = 'a'") == 1
