"""Lexical normal form and FTS search: CJK bigrams, owner/scope inside the MATCH, pruning."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from cairn.domain.scope import Scope
from cairn.store.connection import open_connection
from cairn.store.fts import index_text, owner_token, query_terms, scope_token
from cairn.store.search import LexicalSearcher


@pytest.fixture
def connection(tmp_path: Path):
    opened = open_connection(tmp_path / "fts.db")
    yield opened
    opened.close()


def _add_event(connection: apsw.Connection, rowid: int, agent: str, text: str) -> None:
    connection.execute(
        "INSERT INTO event_fts (rowid, owner, body) VALUES (?, ?, ?)",
        (rowid, owner_token(agent), index_text(text)),
    )


def test_cjk_runs_become_bigrams_and_latin_stays_words() -> None:
    assert index_text("我喜欢咖啡 and Tea") == "我喜 喜欢 欢咖 咖啡 and tea"
    assert index_text("茶") == "茶"


def test_two_character_chinese_query_finds_longer_memory(
    connection: apsw.Connection,
) -> None:
    _add_event(connection, 1, "a", "我每天早上都喜欢喝一杯浓咖啡")
    _add_event(connection, 2, "a", "我周末去爬山")
    hits = LexicalSearcher(connection).search_events("a", query_terms("咖啡"), 10)
    assert [hit.rowid for hit in hits] == [1]


def test_owner_predicate_is_inside_the_match(connection: apsw.Connection) -> None:
    # Agent b has many better-matching rows; agent a must still get its one row back
    # with LIMIT 1, which only holds if the owner filter runs before LIMIT.
    for rowid in range(2, 40):
        _add_event(connection, rowid, "b", "pottery pottery pottery class")
    _add_event(connection, 1, "a", "I signed up for a pottery class")
    hits = LexicalSearcher(connection).search_events("a", query_terms("pottery"), 1)
    assert [hit.rowid for hit in hits] == [1]


def test_scope_tokens_filter_claims(connection: apsw.Connection) -> None:
    owner = owner_token("a")
    connection.execute(
        "INSERT INTO claim_fts (rowid, owner, scope, body) VALUES (1, ?, ?, ?)",
        (owner, scope_token("session", "s1"), index_text("likes green tea")),
    )
    searcher = LexicalSearcher(connection)
    assert searcher.search_claims("a", ["tea"], [Scope.agent()], 5) == []
    hits = searcher.search_claims("a", ["tea"], [Scope.agent(), Scope.session("s1")], 5)
    assert [hit.rowid for hit in hits] == [1]
    assert (
        searcher.search_claims("a", ["tea"], [Scope.agent(), Scope.session("s2")], 5)
        == []
    )


def test_query_syntax_in_user_text_is_quoted_not_parsed(
    connection: apsw.Connection,
) -> None:
    _add_event(connection, 1, "a", 'the "NEAR" operator AND friends')
    searcher = LexicalSearcher(connection)
    hits = searcher.search_events("a", query_terms('NEAR( "x" AND OR * ^ owner:'), 5)
    assert [hit.rowid for hit in hits] == [1]


def test_pruning_keeps_rare_terms_within_the_posting_budget(
    connection: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.store import search

    monkeypatch.setattr(search, "MAX_POSTINGS", 10)
    for rowid in range(1, 30):
        _add_event(connection, rowid, "a", "common words everywhere")
    _add_event(connection, 100, "a", "common zebra")
    searcher = LexicalSearcher(connection)
    assert searcher.prune("event_fts", ["common", "zebra"]) == ["zebra"]
    # A common term alone is still searched: pruning never empties a matching query.
    assert searcher.prune("event_fts", ["common"]) == ["common"]
