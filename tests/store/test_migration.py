"""Schema 5 migrates forward: claims get scoped identity hashes, and tombstones written
before it (unscoped, no text to recompute them from) keep suppressing, agent-wide."""

from __future__ import annotations

import datetime as dt
from importlib import resources
from pathlib import Path

import apsw

from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.domain.ids import AgentId
from cairn.domain.scope import Scope
from cairn.store.claims import insert_claims
from cairn.store.connection import SCHEMA_VERSION, open_connection
from cairn.store.tombstones import (
    claim_hashes,
    content_hash_v1,
    provenance_key_v1,
)

NOW = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
A = AgentId("a")


def _schema_3_database(path: Path) -> None:
    """A file as cairn wrote it before schema 5: the first three migrations only."""
    connection = apsw.Connection(str(path))
    package = resources.files("cairn.store") / "migrations"
    for index, name in enumerate(
        ("0001_initial.sql", "0002_ingestion.sql", "0003_forgetting.sql"), start=1
    ):
        with connection:
            connection.execute((package / name).read_text(encoding="utf-8"))
            connection.pragma("user_version", index)
    stamp = NOW.isoformat()
    kept = ClaimDraft(
        ClaimKind.FACT, "Ana lives in Lisbon.", (), 0.9, scope=Scope.session("s1")
    )
    forgotten = ClaimDraft(ClaimKind.FACT, "Ana's locker is behind the blue door.", ())
    with connection:
        connection.execute(
            "INSERT INTO agents (agent_id, created_at) VALUES ('a', ?)", (stamp,)
        )
        connection.execute(
            "INSERT INTO claims (claim_id, agent_id, kind, lifecycle, origin, text,"
            " confidence, scope, scope_key, provenance_key, content_hash, created_at,"
            " updated_at) VALUES ('c1', 'a', 'fact', 'active', 'user', ?, 0.9,"
            " 'session', 's1', ?, ?, ?, ?)",
            (
                kept.text,
                provenance_key_v1("a", kept),
                content_hash_v1("a", kept.text),
                stamp,
                stamp,
            ),
        )
        connection.execute(
            "INSERT INTO tombstones (agent_id, provenance_hash, content_hash,"
            " created_at) VALUES ('a', ?, ?, ?)",
            (
                provenance_key_v1("a", forgotten),
                content_hash_v1("a", forgotten.text),
                stamp,
            ),
        )
    connection.close()


def test_schema_3_files_migrate_forward(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    _schema_3_database(path)
    connection = open_connection(path)
    try:
        assert int(connection.pragma("user_version")) == SCHEMA_VERSION
        provenance, content = connection.execute(
            "SELECT provenance_key, content_hash FROM claims WHERE claim_id = 'c1'"
        ).fetchone()
        scoped = ClaimDraft(
            ClaimKind.FACT, "Ana lives in Lisbon.", (), 0.9, scope=Scope.session("s1")
        )
        assert (provenance, content) == claim_hashes("a", scoped)
        with connection:
            # The old tombstone suppresses in every scope (it cannot know its own).
            for scope in (Scope.agent(), Scope.session("s9")):
                committed = insert_claims(
                    connection,
                    A,
                    [
                        ClaimDraft(
                            ClaimKind.FACT,
                            "Ana's locker is behind the blue door.",
                            (),
                            scope=scope,
                        )
                    ],
                    {},
                    NOW,
                )
                assert committed.suppressed == 1
            # The migrated claim is recognised: the same claim in its scope merges.
            again = insert_claims(connection, A, [scoped], {}, NOW)
            assert (again.inserted, again.merged) == ((), 1)
            # The same words in another scope are another memory.
            other = insert_claims(
                connection, A, [ClaimDraft(ClaimKind.FACT, scoped.text, ())], {}, NOW
            )
            assert len(other.inserted) == 1
        for table in ("evidence_tombstones", "rowid_floors"):
            assert connection.execute(f"SELECT count(*) FROM {table}").fetchone() == (
                0,
            )
    finally:
        connection.close()
