"""Lexical normal form and FTS search: CJK bigrams, namespaced tokens (owner and scope
inside the index, before LIMIT), pruning within a posting budget."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import apsw
import pytest

from cairn.domain.scope import Scope
from cairn.store import search
from cairn.store.connection import open_connection
from cairn.store.evidence import event_fts_row, write_event_fts
from cairn.store.fts import index_text, namespace, query_terms
from cairn.store.search import LexicalSearcher


@pytest.fixture
def connection(tmp_path: Path):
    opened = open_connection(tmp_path / "fts.db")
    yield opened
    opened.close()


def _add_event(connection: apsw.Connection, rowid: int, agent: str, text: str) -> None:
    # A hit is a stored turn: search reads its row (evidence class, context).
    when = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC).isoformat()
    connection.execute(
        "INSERT INTO events (rowid, agent_id, event_id, session_id, role, kind, text,"
        " content_hash, occurred_at, received_at)"
        " VALUES (?, ?, ?, 's1', 'user', 'message', ?, ?, ?, ?)",
        (rowid, agent, f"e{rowid}", text, f"h{rowid}", when, when),
    )
    connection.execute(
        "INSERT INTO event_fts (rowid, body) VALUES (?, ?)",
        (rowid, index_text(text, namespace(agent))),
    )


def _add_claim(
    connection: apsw.Connection, rowid: int, agent: str, scope: Scope, text: str
) -> None:
    connection.execute(
        "INSERT INTO claim_fts (rowid, body) VALUES (?, ?)",
        (rowid, index_text(text, namespace(agent, scope.kind.value, scope.key))),
    )


def test_cjk_runs_become_bigrams_and_latin_stays_words() -> None:
    assert index_text("我喜欢咖啡 and Tea") == "我喜 喜欢 欢咖 咖啡 and tea"
    assert index_text("茶") == "茶"


def test_a_chinese_question_word_is_no_term_and_no_bigram_straddles_it() -> None:
    # 什么 is in every question the user asked, like "what" (a stopword); 用什 and 么编
    # would match nothing the user meant.
    assert " ".join(query_terms("高翔用什么编程语言？")) == "高翔 翔用 编程 程语 语言"
    assert " ".join(query_terms("赵磊是做什么工作的？")) == "赵磊 磊是 是做 工作 作的"
    assert query_terms("她为什么搬去了哪里") == ["搬去", "去了"]


def test_namespace_is_consonants_only_and_distinct() -> None:
    prefixes = {namespace("a"), namespace("b"), namespace("a", "session", "s1")}
    assert len(prefixes) == 3
    for prefix in prefixes:
        assert set(prefix) <= set("bcdfghjklmnpqrstvwxz")


def test_stemming_is_unchanged_by_the_namespace(connection: apsw.Connection) -> None:
    _add_event(connection, 1, "a", "She was running and singing")
    searcher = LexicalSearcher(connection)
    for query in ("runs", "run", "sings", "singing"):
        assert [
            h.rowid for h in searcher.search_events("a", query_terms(query), 5).hits
        ] == [1]


def test_two_character_chinese_query_finds_longer_memory(
    connection: apsw.Connection,
) -> None:
    _add_event(connection, 1, "a", "我每天早上都喜欢喝一杯浓咖啡")
    _add_event(connection, 2, "a", "我周末去爬山")
    hits = LexicalSearcher(connection).search_events("a", query_terms("咖啡"), 10).hits
    assert [hit.rowid for hit in hits] == [1]


def test_owner_isolation_holds_before_limit(connection: apsw.Connection) -> None:
    # Agent b has many better-matching rows; agent a must still get its one row back
    # with LIMIT 1, which only holds if the owner filter runs before LIMIT.
    for rowid in range(2, 40):
        _add_event(connection, rowid, "b", "pottery pottery pottery class")
    _add_event(connection, 1, "a", "I signed up for a pottery class")
    searcher = LexicalSearcher(connection)
    assert [
        hit.rowid for hit in searcher.search_events("a", query_terms("pottery"), 1).hits
    ] == [1]
    assert searcher.search_events("c", query_terms("pottery"), 10).hits == []


def test_scope_namespaces_filter_claims(connection: apsw.Connection) -> None:
    _add_claim(connection, 1, "a", Scope.session("s1"), "likes green tea")
    _add_claim(connection, 2, "a", Scope.agent(), "drinks black coffee")
    searcher = LexicalSearcher(connection)
    assert searcher.search_claims("a", ["tea"], [Scope.agent()], 5).hits == []
    hits = searcher.search_claims(
        "a", ["tea", "coffee"], [Scope.agent(), Scope.session("s1")], 5
    ).hits
    assert sorted(hit.rowid for hit in hits) == [1, 2]
    assert (
        searcher.search_claims(
            "a", ["tea"], [Scope.agent(), Scope.session("s2")], 5
        ).hits
        == []
    )
    assert (
        searcher.search_claims(
            "b", ["tea"], [Scope.agent(), Scope.session("s1")], 5
        ).hits
        == []
    )


def test_query_syntax_in_user_text_is_quoted_not_parsed(
    connection: apsw.Connection,
) -> None:
    _add_event(connection, 1, "a", 'the "NEAR" operator AND friends')
    searcher = LexicalSearcher(connection)
    hits = searcher.search_events(
        "a", query_terms('NEAR( "x" AND OR * ^ body:'), 5
    ).hits
    assert [hit.rowid for hit in hits] == [1]


def test_pruning_keeps_rare_terms_within_the_posting_budget(
    connection: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "MAX_POSTINGS", 10)
    for rowid in range(1, 30):
        _add_event(connection, rowid, "a", "common words everywhere")
    _add_event(connection, 100, "a", "common zebra")
    searcher = LexicalSearcher(connection)
    prefix = [namespace("a")]
    kept, exhausted = searcher.prune("event_fts", prefix, ["common", "zebra"])
    assert kept == [prefix[0] + "zebra"]
    assert not exhausted
    # A common term alone is still searched, newest first, and flagged as exhausted.
    result = searcher.search_events("a", ["common"], 5)
    assert result.exhausted
    assert [hit.rowid for hit in result.hits] == [100, 29, 28, 27, 26]


def test_a_term_missing_a_moment_ago_is_found_once_stored(
    connection: apsw.Connection,
) -> None:
    searcher = LexicalSearcher(connection)
    terms = query_terms("locker code")
    scopes = [Scope.agent()]
    assert searcher.search_claims("a", terms, scopes, 10).hits == []
    _add_claim(connection, 7, "a", Scope.agent(), "My locker code is 4417.")
    # Same connection, well within the frequency cache's lifetime.
    assert [
        hit.rowid for hit in searcher.search_claims("a", terms, scopes, 10).hits
    ] == [7]


def _add_turns(connection: apsw.Connection, agent: str, texts: list[str]) -> None:
    """One session of turns, each indexed with the one before it, as intake does."""
    when = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
    for rowid, text in enumerate(texts, start=1):
        context = rowid - 1 if rowid > 1 else None
        connection.execute(
            "INSERT INTO events (rowid, agent_id, event_id, session_id, role, kind,"
            " text, content_hash, occurred_at, received_at, context_rowid)"
            " VALUES (?, ?, ?, 's1', 'user', 'message', ?, ?, ?, ?, ?)",
            (
                rowid,
                agent,
                f"t{rowid}",
                text,
                f"h{rowid}",
                when.isoformat(),
                when.isoformat(),
                context,
            ),
        )
        write_event_fts(
            connection,
            rowid,
            event_fts_row(
                agent, None, text, when, None if context is None else texts[rowid - 2]
            ),
        )


@pytest.mark.parametrize("budget", [search.MAX_POSTINGS, 1])
def test_a_reply_found_through_its_context_ranks_below_the_turn_it_answers(
    connection: apsw.Connection, monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    # Ranked by bm25 (the reply's row is the shorter one), and newest-first when the
    # term is over the posting budget (the reply is the newer one).
    monkeypatch.setattr(search, "MAX_POSTINGS", budget)
    _add_turns(
        connection,
        "a",
        [
            "最近工作特别忙，每天加班到很晚，周末也要去公司开会，感觉整个人都累坏了。",
            "我每天早上都喝咖啡。",
            "真不错！",
        ],
    )
    result = LexicalSearcher(connection).search_events("a", query_terms("咖啡"), 5)
    assert result.exhausted == (budget == 1)
    assert [hit.rowid for hit in result.hits] == [2, 3]
    assert result.hits[0].score >= result.hits[1].score


def test_a_search_within_the_bodies_keeps_a_context_hit_only_as_the_answer_to_a_question(
    connection: apsw.Connection,
) -> None:
    # The entity-centred list (cairn.retrieval.entity_lists) searches a speaker's own
    # words: "送什么礼物好？" follows a remark about the computer but says nothing of it,
    # while "MacBook，用了两年了。" answers a question about it.
    _add_turns(
        connection,
        "a",
        [
            "那款电脑的键盘很好。",
            "送什么礼物好？",
            "你平时用什么电脑？",
            "MacBook，用了两年了。",
        ],
    )
    searcher = LexicalSearcher(connection)
    everything = "event_fts.rowid > 0"
    terms = query_terms("罗敏用什么电脑？")
    both = searcher.search_events_within("a", terms, 5, everything, ())
    assert sorted(hit.rowid for hit in both.hits) == [1, 2, 3, 4]
    bodies = searcher.search_events_within(
        "a", terms, 5, everything, (), body_only=True
    )
    assert sorted(hit.rowid for hit in bodies.hits) == [1, 3, 4]
