"""A commit of embeddings stores a vector only if its target would still be embedded
from the text the vector was computed from."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from cairn.domain.evidence import Turn
from cairn.domain.ids import AgentId, EventId, SessionId
from cairn.store.agents import ensure_agent
from cairn.store.connection import open_connection
from cairn.store.embeddings import embedding_digest, store_embeddings
from cairn.store.evidence import insert_events, load_events, stored_turn
from cairn.vectors.identity import EmbeddingIdentity
from cairn.vectors.keys import EmbedTarget

NOW = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)
A = AgentId("a")
IDENTITY = EmbeddingIdentity("testing", "hashing-v1", 4)
BLOB = b"\x00" * 8


def test_a_vector_of_text_that_changed_since_is_not_stored(tmp_path: Path) -> None:
    connection = open_connection(tmp_path / "cairn.db")
    try:
        with connection:
            ensure_agent(connection, A, NOW)
            for event_id, text in (
                ("e1", "My parrot is Kiwi."),
                ("e2", "What a name."),
            ):
                turn = Turn(EventId(event_id), SessionId("s1"), "user", text, NOW)
                insert_events(connection, A, [stored_turn(turn)], NOW)
        reply = 2
        # The reply was embedded with the turn it answers as context ...
        before = load_events(connection, A, [reply])[reply].embedding_text()
        assert "Kiwi" in before
        with connection:
            # ... and that turn's words left the reply's context before the commit.
            connection.execute("UPDATE events SET context_rowid = NULL WHERE rowid = 2")
            stale = store_embeddings(
                connection,
                A,
                IDENTITY,
                [(EmbedTarget.EVENT, reply, BLOB)],
                [embedding_digest(before)],
            )
            now = load_events(connection, A, [reply])[reply].embedding_text()
            fresh = store_embeddings(
                connection,
                A,
                IDENTITY,
                [(EmbedTarget.EVENT, reply, BLOB)],
                [embedding_digest(now)],
            )
        assert stale == []
        assert fresh == [(EmbedTarget.EVENT, reply)]
    finally:
        connection.close()
