"""bench/knowledge_update.py without an engine run: the shipped cases parse and cover what
the benchmark promises, bad case files are refused with the line named, and the pass/fail
and chain rules are right on hand-built recall items and exported claims."""

from __future__ import annotations

import collections
import datetime as dt
import json
import types
from typing import TYPE_CHECKING, Any

import pytest

from bench import knowledge_update as ku

if TYPE_CHECKING:
    from pathlib import Path

QUESTION = ku.Question("Where does Mei live now?", ("Lisbon",), ("Berlin",))


def _item(text: str, standing: str | None = None) -> Any:
    return types.SimpleNamespace(text=text, standing=standing)


def _legacy_item(text: str) -> Any:
    # An item from code that has no ``standing`` field at all.
    return types.SimpleNamespace(text=text)


def test_the_shipped_cases_parse_and_cover_the_benchmark() -> None:
    cases = ku.load_cases(ku.DEFAULT_CASES)
    assert len(cases) >= 60
    languages = collections.Counter(case.language for case in cases)
    assert set(languages) == {"en", "zh"}
    assert min(languages.values()) >= 0.4 * len(cases)
    categories = {case.category for case in cases}
    assert categories >= {"move", "job", "partner", "tool", "preference", "plan"}
    assert sum(case.out_of_order for case in cases) >= 5
    for case in cases:
        assert len(case.sessions) >= 2, case.id
        roles = {turn.role for _, turns in case.sessions for turn in turns}
        assert roles == {"user", "assistant"}, case.id
        for question in case.questions:
            assert not set(question.current) & set(question.stale), case.id


def test_an_out_of_order_case_ingests_newer_evidence_first(tmp_path: Path) -> None:
    record = {
        "id": "c1",
        "speaker": "Mei",
        "sessions": [
            {
                "id": "old",
                "at": "2024-01-01T09:00:00Z",
                "turns": [_user("I live in Oslo.")],
            },
            {
                "id": "new",
                "at": "2024-05-01T09:00:00+02:00",
                "turns": [_user("Hi."), _user("I moved to Bergen.")],
            },
        ],
        "ingest_order": ["new", "old"],
        "questions": [{"question": "Where?", "current": ["Bergen"], "stale": ["Oslo"]}],
    }
    (case,) = ku.load_cases(_write(tmp_path, [record]))
    assert [name for name, _ in case.sessions] == ["new", "old"]
    assert case.out_of_order
    new_turns = case.sessions[0][1]
    assert [t.at for t in new_turns] == [
        dt.datetime(2024, 5, 1, 7, 0, tzinfo=dt.UTC),
        dt.datetime(2024, 5, 1, 7, 2, tzinfo=dt.UTC),
    ]
    assert new_turns[1].event_id == "c1-new-1"
    assert new_turns[1].speaker == "Mei"
    assert case.asked_at == dt.datetime(2024, 5, 1, 8, 2, tzinfo=dt.UTC)
    assert case.agent == "ku-c1"


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "text": text}


def _write(tmp_path: Path, records: list[Any]) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text(
        "# comment\n\n" + "".join(json.dumps(r) + "\n" for r in records),
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ingest_order": ["s1", "s9"]}, "ingest_order"),
        ({"sessions": [{"id": "s1", "at": "2024-01-01T09:00:00", "turns": [{"role": "user", "text": "x"}]}]}, "no zone"),
        ({"questions": [{"question": "q", "current": [], "stale": ["a"]}]}, "current"),
        ({"sessions": [{"id": "s1", "at": "2024-01-01T09:00:00Z", "turns": [{"role": "bot", "text": "x"}]}]}, "role"),
    ],
)  # fmt: skip
def test_a_bad_case_is_refused_with_its_line(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    record: dict[str, Any] = {
        "id": "c1",
        "speaker": "Mei",
        "sessions": [
            {
                "id": "s1",
                "at": "2024-01-01T09:00:00Z",
                "turns": [_user("I live in Oslo.")],
            }
        ],
        "questions": [{"question": "Where?", "current": ["Bergen"], "stale": ["Oslo"]}],
    }
    with pytest.raises(ku.CaseError, match=rf"cases\.jsonl:3 .*{message}"):
        ku.load_cases(_write(tmp_path, [{**record, **change}]))


def test_a_repeated_case_id_is_refused(tmp_path: Path) -> None:
    record = {
        "id": "c1",
        "speaker": "Mei",
        "sessions": [{"id": "s1", "at": "2024-01-01T09:00:00Z", "turns": [_user("x")]}],
        "questions": [{"question": "q", "current": ["a"], "stale": ["b"]}],
    }
    with pytest.raises(ku.CaseError, match="repeats"):
        ku.load_cases(_write(tmp_path, [record, record]))


@pytest.mark.parametrize(
    ("items", "passed", "reason"),
    [
        ([_item("Mei moved to Lisbon", "current")], True, "ok"),
        # the stale claim is there but marked history; a turn naming both is fine
        (
            [
                _item("Mei moved to LISBON last month", "current"),
                _item("Mei: I moved from Berlin to Lisbon."),
                _item("Mei lives in Berlin", "history"),
            ],
            True,
            "ok",
        ),
        ([], False, "no items"),
        (
            [_item("Mei lives in Berlin", "history"), _item("Mei moved to Lisbon")],
            False,
            "first item is not the current value",
        ),
        (
            [_item("Mei moved to Lisbon", "history")],
            False,
            "first item is marked history",
        ),
        (
            [_item("Mei moved to Lisbon"), _item("Mei lives in Berlin", "current")],
            False,
            "stale item at rank 2 is not marked history",
        ),
        (
            [_legacy_item("Mei moved to Lisbon"), _legacy_item("Mei lives in Berlin")],
            False,
            "stale item at rank 2 is not marked history",
        ),
        (
            [_legacy_item("Mei moved to Lisbon"), _legacy_item("Mei has a cat")],
            True,
            "ok",
        ),
    ],
)
def test_the_pass_rule(items: list[Any], passed: bool, reason: str) -> None:
    assert ku.score_question(items, QUESTION) == ku.Verdict(passed, reason)


def test_standing_may_be_an_enum() -> None:
    history = types.SimpleNamespace(value="history")
    items = [_item("Mei moved to Lisbon"), _item("Mei lives in Berlin", history)]
    assert ku.score_question(items, QUESTION).passed


def _claim(
    text: str, lifecycle: str, predicate: str | None = "lives_in"
) -> dict[str, Any]:
    return {
        "text": text,
        "lifecycle": lifecycle,
        "subject": "Mei",
        "predicate": predicate,
    }


@pytest.mark.parametrize(
    ("claims", "holds"),
    [
        ([_claim("Mei lives in Berlin", "superseded"), _claim("Mei moved to Lisbon", "active")], True),
        # the old value is still active: no supersession happened
        ([_claim("Mei lives in Berlin", "active"), _claim("Mei moved to Lisbon", "active")], False),
        # the old claim had another key, so nothing could supersede it
        ([_claim("Mei lives in Berlin", "active", None), _claim("Mei moved to Lisbon", "active")], False),
        # newer-by-arrival won: the current value is the superseded one
        ([_claim("Mei lives in Berlin", "active"), _claim("Mei moved to Lisbon", "superseded")], False),
        ([_claim("Mei moved to Lisbon", "active")], False),
    ],
)  # fmt: skip
def test_the_chain_rule(claims: list[dict[str, Any]], holds: bool) -> None:
    assert ku.chain_holds(claims, QUESTION) is holds


def test_the_report_groups_fractions() -> None:
    rows = [
        {"id": "a#1", "category": "move", "language": "en", "arrival": "in_order",
         "passed": True, "first_current": True, "chain": True},
        {"id": "b#1", "category": "tool", "language": "zh", "arrival": "out_of_order",
         "passed": False, "first_current": True, "chain": False},
    ]  # fmt: skip
    report = ku.summarise(rows, 1.0, "hashing", verbose=False)
    assert report["overall"] == {
        "questions": 2,
        "pass": 0.5,
        "first_current": 1.0,
        "chain": 0.5,
    }
    assert report["by_language"]["zh"]["pass"] == 0.0
    assert report["by_arrival"]["in_order"]["chain"] == 1.0
    assert report["failing"] == ["b#1"]
    assert report["broken_chains"] == ["b#1"]
    assert report["cases"] == 2
