"""SQLite's integrity check through a long-lived reader connection: no false alarm after
another connection rewrote a lexical index (the scrubber's ``optimize``)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.domain.ids import AgentId
from cairn.store.agents import ensure_agent
from cairn.store.claims import insert_claims
from cairn.store.connection import open_connection
from cairn.store.fts_purge import request_fts_purge, run_fts_purges
from cairn.store.integrity import sqlite_integrity

NOW = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)


def test_a_reader_sees_no_corruption_after_another_connection_optimizes(
    tmp_path: Path,
) -> None:
    db = tmp_path / "cairn.db"
    writer = open_connection(db)
    agent = AgentId("a")
    with writer:
        ensure_agent(writer, agent, NOW)
        drafts = [
            ClaimDraft(ClaimKind.FACT, f"Fact number {n} about topic{n % 97}.", ())
            for n in range(2000)
        ]
        insert_claims(writer, agent, drafts, {}, NOW)
    reader = open_connection(db)
    with reader:
        assert sqlite_integrity(reader) == []  # the reader caches the index structure
    with writer:
        writer.execute("DELETE FROM claims WHERE rowid % 7 = 0")
        request_fts_purge(writer, "claim_fts", NOW)
        assert run_fts_purges(writer, NOW) == 1
    with reader:
        assert sqlite_integrity(reader) == []
    reader.close()
    writer.close()
