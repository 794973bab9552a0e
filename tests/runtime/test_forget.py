"""Forgetting one claim: a hash-only tombstone suppresses exact replays (same source, or
the same claim from anywhere) but not an independent, different fact; a model's remember
never brings it back, a user's explicit re-add does; no forgotten plaintext stays in the
file. Archive is recoverable and says so; persona/working rows are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from tests.conftest import open_test_memory
from tests.fakes import GatedDocuments
from tests.helpers import turn

from cairn import Memory
from cairn.domain.ids import AgentId
from cairn.errors import (
    ClearPendingError,
    InvalidTransitionError,
    ProtectedClaimError,
    UnknownClaimError,
)
from cairn.runtime.core import runtime_core
from cairn.store.clear_jobs import start_clear
from cairn.store.connection import open_connection
from cairn.store.forget import RememberOutcome
from cairn.vectors.keys import is_claim_key


def _claims(memory_items: object) -> list[str]:
    return [item.text for item in memory_items if item.kind != "evidence"]  # type: ignore[attr-defined]


async def _claim_id(memory: Memory, agent: str, query: str, needle: str) -> str:
    recall = await memory.recall(agent, query, k=20)
    (item,) = [i for i in recall.items if i.kind != "evidence" and needle in i.text]
    return item.id


def _scalar(path: Path, sql: str, *params: object) -> int:
    connection = open_connection(path)
    try:
        return int(connection.execute(sql, params).fetchone()[0])
    finally:
        connection.close()


async def test_forget_then_replay_of_the_same_source_stays_forgotten(
    memory: Memory, data_dir: Path
) -> None:
    await memory.ingest(
        "a", [turn("e1", "I live in Lisbon."), turn("e2", "I like tea.")]
    )
    await memory.wait_idle("a")
    claim_id = await _claim_id(memory, "a", "where do I live Lisbon", "Lisbon")
    result = await memory.forget("a", claim_id)
    assert result.hidden_evidence == 1
    db = data_dir / "cairn.db"
    assert _scalar(db, "SELECT count(*) FROM claims WHERE claim_id = ?", claim_id) == 0
    assert _scalar(db, "SELECT count(*) FROM tombstones WHERE agent_id = 'a'") == 1
    # Neither the claim nor the turn it came from is recalled any more.
    recall = await memory.recall("a", "where do I live Lisbon", k=20)
    assert not [item for item in recall.items if "Lisbon" in item.text]
    # Replay 1: the same evidence is extracted again (a crashed batch re-run, say).
    await runtime_core(memory).database.write(
        lambda c: c.execute("UPDATE events SET extracted = 0 WHERE agent_id = 'a'")
    )
    await memory.wait_idle("a")
    recall = await memory.recall("a", "where do I live Lisbon", k=20)
    assert not [item for item in recall.items if "Lisbon" in item.text]
    # Replay 2: the same claim arrives again from a new turn (the turn itself is new
    # evidence; the claim is not learned again).
    await memory.ingest("a", [turn("e3", "I live in Lisbon.", session="s2")])
    await memory.wait_idle("a")
    recall = await memory.recall("a", "where do I live Lisbon", k=20)
    assert not [t for t in _claims(recall.items) if "Lisbon" in t]
    assert any("tea" in t for t in _claims((await memory.recall("a", "tea")).items))
    # An independent, different fact about the same thing is new memory.
    await memory.ingest("a", [turn("e4", "I live in Porto now, near the river.")])
    await memory.wait_idle("a")
    recall = await memory.recall("a", "where do I live Porto", k=20)
    assert [t for t in _claims(recall.items) if "Porto" in t]


async def test_model_remember_never_releases_a_tombstone_user_readd_does(
    memory: Memory, data_dir: Path
) -> None:
    stored = await memory.remember(
        "a", "My locker code is behind the blue door.", by="user"
    )
    assert stored.outcome is RememberOutcome.STORED
    assert stored.claim_id is not None
    await memory.forget("a", stored.claim_id)
    again = await memory.remember(
        "a", "My locker code is behind the blue door.", by="model"
    )
    assert again.outcome is RememberOutcome.SUPPRESSED
    # Case and spacing do not make it a different claim.
    again = await memory.remember(
        "a", "my LOCKER code is  behind the blue door.", by="model"
    )
    assert again.outcome is RememberOutcome.SUPPRESSED
    recall = await memory.recall("a", "locker blue door", k=20)
    assert not _claims(recall.items)
    db = data_dir / "cairn.db"
    assert _scalar(db, "SELECT count(*) FROM tombstones WHERE agent_id = 'a'") == 1
    back = await memory.remember(
        "a", "My locker code is behind the blue door.", by="user"
    )
    assert back.outcome is RememberOutcome.STORED
    assert back.released_tombstones == 1
    recall = await memory.recall("a", "locker blue door", k=20)
    assert _claims(recall.items) == ["My locker code is behind the blue door."]
    assert _scalar(db, "SELECT count(*) FROM tombstones WHERE agent_id = 'a'") == 0


async def test_no_forgotten_plaintext_in_the_database_file(
    memory: Memory, data_dir: Path
) -> None:
    secret = "Quillonberry marmaladeworks paid Zyxomancer handsomely"
    stored = await memory.remember("a", secret, by="user")
    await memory.remember("a", "An unrelated memory about gardening.", by="user")
    assert stored.claim_id is not None
    recall = await memory.recall("a", "Quillonberry Zyxomancer", k=5, wait_s=60)
    assert recall.memory_block  # the text was in the index and served
    await memory.wait_idle("a")
    await memory.forget("a", stored.claim_id)
    await memory.aclose()
    db = data_dir / "cairn.db"
    connection = open_connection(db)
    try:
        assert connection.pragma("secure_delete") == 1
        tombstones = connection.execute("SELECT * FROM tombstones").fetchall()
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        connection.close()
    for row in tombstones:
        assert not any("quillonberry" in str(value).casefold() for value in row)
    files = [db, *db.parent.glob("cairn.db-*")]
    blob = b"".join(path.read_bytes() for path in files).lower()
    for word in ("quillonberry", "marmaladework", "zyxomanc"):
        assert word.encode() not in blob, word
    assert b"gardening" in blob  # the check can see text that is still stored


async def test_archive_is_recoverable_and_says_so(
    memory: Memory, data_dir: Path
) -> None:
    stored = await memory.remember(
        "a", "The spare key is under the flowerpot.", by="user"
    )
    assert stored.claim_id is not None
    result = await memory.archive("a", stored.claim_id)
    assert result.lifecycle == "archived"
    assert "stored locally" in result.note
    assert "no longer takes part in recall" in result.note
    assert not _claims((await memory.recall("a", "spare key flowerpot")).items)
    db = data_dir / "cairn.db"
    assert _scalar(db, "SELECT count(*) FROM claims WHERE lifecycle = 'archived'") == 1
    with pytest.raises(InvalidTransitionError):
        await memory.archive("a", stored.claim_id)
    restored = await memory.unarchive("a", stored.claim_id)
    assert restored.lifecycle == "active"
    assert _claims((await memory.recall("a", "spare key flowerpot")).items)


async def test_generic_lifecycle_calls_refuse_persona_and_working_rows(
    memory: Memory,
) -> None:
    await memory.remember("a", "placeholder so the agent exists", by="user")

    def insert(connection: object, kind: str) -> None:
        connection.execute(  # type: ignore[attr-defined]
            "INSERT INTO claims (claim_id, agent_id, kind, lifecycle, origin, text,"
            " confidence, scope, provenance_key, content_hash, created_at, updated_at)"
            " VALUES (?, 'a', ?, 'active', 'extracted', 'summary', 1, 'agent', ?, 'c',"
            " 'n', 'n')",
            (kind, kind, kind),
        )

    for kind in ("persona", "working"):
        await runtime_core(memory).database.write(lambda c, kind=kind: insert(c, kind))
        with pytest.raises(ProtectedClaimError):
            await memory.forget("a", kind)
        with pytest.raises(ProtectedClaimError):
            await memory.archive("a", kind)
    with pytest.raises(ProtectedClaimError):
        await memory.remember("a", "I am a persona", kind="persona", by="user")


async def test_claims_are_addressed_within_their_agent(memory: Memory) -> None:
    stored = await memory.remember("a", "Agent a's own fact about kites.", by="user")
    assert stored.claim_id is not None
    with pytest.raises(UnknownClaimError):
        await memory.forget("b", stored.claim_id)
    with pytest.raises(UnknownClaimError):
        await memory.archive("b", stored.claim_id)
    assert _claims((await memory.recall("a", "kites")).items)


async def test_lifecycle_calls_are_refused_while_a_clear_is_pending(
    memory: Memory,
) -> None:
    stored = await memory.remember("a", "The boat is moored at pier nine.", by="user")
    assert stored.claim_id is not None
    claim_id = stored.claim_id
    # The job is persisted but its actor is not woken: it stays pending for this test.
    await runtime_core(memory).database.write(
        lambda c: start_clear(c, AgentId("a"), runtime_core(memory).clock.now())
    )
    with pytest.raises(ClearPendingError):
        await memory.remember("a", "A new fact during the clear.", by="user")
    with pytest.raises(ClearPendingError):
        await memory.forget("a", claim_id)
    with pytest.raises(ClearPendingError):
        await memory.archive("a", claim_id)
    assert not _claims((await memory.recall("a", "boat pier")).items)
    # Directives stay manageable during a clear.
    await memory.directives.create("a", "Be concise.")
    assert "Be concise." in (await memory.recall("a", "boat")).directive_block


async def test_a_forgotten_claims_key_is_never_reused(memory: Memory) -> None:
    first = await memory.remember("a", "The first claim about otters.", by="user")
    assert first.claim_id is not None
    assert first.rowid is not None
    await memory.forget("a", first.claim_id)
    second = await memory.remember("a", "A second claim about beavers.", by="user")
    assert second.rowid is not None
    assert second.rowid > first.rowid


async def test_a_vector_in_flight_for_a_forgotten_claim_never_reaches_the_projection(
    data_dir: Path,
) -> None:
    embedder = GatedDocuments()
    async with open_test_memory(data_dir, embedder=embedder) as memory:
        supervisor = await runtime_core(memory).registry.get("a")
        await supervisor.projection.caught_up.wait()
        stored = await memory.remember("a", "My bike lock code is 4321.", by="user")
        assert stored.claim_id is not None
        with trio.fail_after(30):
            await embedder.waiting.wait()  # its vector is being made right now
        await memory.forget("a", stored.claim_id)
        embedder.gate.set()
        await memory.wait_idle("a")
        index = supervisor.projection.index
        assert index is not None
        keys = index.keys()
        claim_keys = [int(key) for key in keys[is_claim_key(keys)]]
        rows = await runtime_core(memory).database.read(
            lambda reader: reader.connection.execute(
                "SELECT count(*) FROM embeddings WHERE target = 'claim'"
            ).fetchone()
        )
    assert claim_keys == []
    assert rows is not None
    assert rows[0] == 0
