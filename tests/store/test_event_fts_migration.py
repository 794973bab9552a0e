"""Schema 6 rebuilds event_fts from the stored events: the preceding turn moves to its own
column, every old match is still found, the turn that says the words ranks above its
reply, and forgetting a turn still takes its words out of the index."""

from __future__ import annotations

import datetime as dt
from importlib import resources
from typing import TYPE_CHECKING

import apsw

from cairn.domain.ids import AgentId
from cairn.store.connection import SCHEMA_VERSION, open_connection
from cairn.store.forget_evidence import delete_evidence
from cairn.store.fts import index_text, namespace, query_terms, quote_term
from cairn.store.fts_purge import run_fts_purges
from cairn.store.integrity import fts_integrity, fts_row_gaps
from cairn.store.rekey import rekey_claims
from cairn.store.search import LexicalSearcher

if TYPE_CHECKING:
    from pathlib import Path

NOW = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
A = AgentId("a")
B = AgentId("b")
# (agent, speaker, text); each agent's turns form one session, in order.
TURNS = (
    (
        A,
        "Bo",
        "最近工作特别忙，每天加班到很晚，周末也要去公司开会，感觉整个人都累坏了。",
    ),
    (A, "Ana", "我每天早上都喝咖啡。"),
    (A, "Bo", "真不错！"),
    (A, "Ana", "Shall we go hiking on Saturday?"),
    (B, "Cy", "I drink 咖啡 at night."),
)
QUERIES = ("咖啡", "hiking", "加班", "真不错", "Ana", "night")


def _schema_5_database(path: Path) -> None:
    """Events and their one-column FTS rows as cairn wrote them at schema 5: the body was
    the speaker, the text, the date in words and the preceding turn, all in one column."""
    connection = apsw.Connection(str(path))
    package = resources.files("cairn.store") / "migrations"
    names = [f"000{n}_" for n in range(1, 6)]
    scripts = sorted(
        entry.name
        for entry in package.iterdir()
        if any(entry.name.startswith(prefix) for prefix in names)
    )
    assert len(scripts) == 5
    for version, name in enumerate(scripts, start=1):
        with connection:
            connection.execute((package / name).read_text(encoding="utf-8"))
            if version == 5:
                rekey_claims(connection)
            connection.pragma("user_version", version)
    stamp = NOW.isoformat()
    previous: dict[str, tuple[int, str]] = {}
    with connection:
        for agent in (A, B):
            connection.execute(
                "INSERT INTO agents (agent_id, created_at) VALUES (?, ?)",
                (agent, stamp),
            )
        for rowid, (agent, speaker, text) in enumerate(TURNS, start=1):
            context = previous.get(agent)
            connection.execute(
                "INSERT INTO events (rowid, agent_id, event_id, session_id, role, kind,"
                " speaker, text, content_hash, occurred_at, received_at, context_rowid,"
                " extracted) VALUES (?, ?, ?, 's1', 'user', 'message', ?, ?, ?, ?, ?,"
                " ?, 1)",
                (
                    rowid,
                    agent,
                    f"t{rowid}",
                    speaker,
                    text,
                    f"hash-{rowid}",
                    stamp,
                    stamp,
                    None if context is None else context[0],
                ),
            )
            old_body = f"{speaker} {text} {NOW:%d %B %Y} {'' if context is None else context[1]}"
            connection.execute(
                "INSERT INTO event_fts (rowid, body) VALUES (?, ?)",
                (rowid, index_text(old_body, namespace(agent))),
            )
            previous[agent] = (rowid, text)
    connection.close()


def _old_matches(path: Path, agent: str, query: str) -> set[int]:
    connection = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        expression = " OR ".join(
            quote_term(namespace(agent) + term) for term in query_terms(query)
        )
        return {
            int(row[0])
            for row in connection.execute(
                "SELECT rowid FROM event_fts WHERE event_fts MATCH ?", (expression,)
            )
        }
    finally:
        connection.close()


def _found(connection: apsw.Connection, agent: str, query: str) -> list[int]:
    hits = LexicalSearcher(connection).search_events(agent, query_terms(query), 20).hits
    return [hit.rowid for hit in hits]


def test_schema_5_event_fts_is_rebuilt_in_the_new_shape(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    _schema_5_database(path)
    before = {
        (agent, query): _old_matches(path, agent, query)
        for agent in (A, B)
        for query in QUERIES
    }
    assert before[A, "咖啡"] == {2, 3}  # the reply matched through its context

    connection = open_connection(path)
    try:
        assert int(connection.pragma("user_version")) == SCHEMA_VERSION
        columns = [
            str(row[1]) for row in connection.execute("PRAGMA table_info(event_fts)")
        ]
        assert columns == ["body", "context"]
        assert fts_integrity(connection, "event_fts") is None
        assert fts_row_gaps(connection, "event_fts").owners_without_row == 0
        # Every old match is found again, and nothing else (agents stay apart).
        for (agent, query), rowids in before.items():
            assert set(_found(connection, agent, query)) == rowids, (agent, query)
        # The turn that says it first; its reply still found, below it.
        assert _found(connection, A, "咖啡") == [2, 3]

        # Forgetting the coffee turn takes its words out of the index, the reply's
        # context included: the reply stays, found by its own words.
        with connection:
            delete_evidence(connection, A, [2], NOW, tombstone_content=True)
            run_fts_purges(connection, NOW)
        assert _found(connection, A, "咖啡") == []
        assert _found(connection, A, "真不错") == [3, 4]  # 4 replies to it
        assert _found(connection, B, "咖啡") == [5]
        assert fts_row_gaps(connection, "event_fts").rows_without_owner == 0
    finally:
        connection.close()
