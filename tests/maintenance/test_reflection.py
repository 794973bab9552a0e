"""The reflection pass (cairn.maintenance.reflection) on a real database: what it asks,
which of the model's answers it keeps, what it writes, and that a reflection never
outlives a claim it was drawn from."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from tests.helpers import turn

from cairn.domain.claim import ClaimDraft, ClaimKind, SourceSpan
from cairn.domain.ids import AgentId, EventId
from cairn.ingestion.intake import prepare_turns
from cairn.maintenance.passes import Work
from cairn.maintenance.reflection import MAX_CONFIDENCE, ReflectionPass
from cairn.store.claims import insert_claims
from cairn.store.connection import open_connection
from cairn.store.dirty import DirtySeed
from cairn.store.evidence import insert_events
from cairn.store.forget import forget_memory, set_archived

A = AgentId("a")
NOW = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)
SAID = {
    "t1": "I drink oolong tea every morning.",
    "t2": "I always take green tea to work.",
    "t3": "I bought a new teapot yesterday.",
    "t4": "My sister lives in Oslo.",
}


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[apsw.Connection]:
    opened = open_connection(tmp_path / "cairn.db")
    with opened:
        insert_events(
            opened,
            A,
            prepare_turns([turn(e, text) for e, text in SAID.items()], 2400),
            NOW,
        )
        rowids = {
            EventId(str(e)): int(r)
            for e, r in opened.execute("SELECT event_id, rowid FROM events")
        }
        insert_claims(
            opened,
            A,
            [
                ClaimDraft(
                    ClaimKind.FACT,
                    text.replace("I ", "The user ").replace("My ", "The user's "),
                    (SourceSpan(EventId(e), 0, len(text)),),
                )
                for e, text in SAID.items()
            ],
            rowids,
            NOW,
        )
    yield opened
    opened.close()


def _work(connection: apsw.Connection) -> Work:
    seeds = tuple(
        DirtySeed(int(rowid), 1)
        for (rowid,) in connection.execute("SELECT rowid FROM claims ORDER BY rowid")
    )
    return Work(A, NOW, seeds)


def _claim_rowids(connection: apsw.Connection) -> list[int]:
    return [
        int(r) for (r,) in connection.execute("SELECT rowid FROM claims ORDER BY rowid")
    ]


def _reflect(
    connection: apsw.Connection, answer: dict[str, object]
) -> tuple[Work, object]:
    step = ReflectionPass()
    work = _work(connection)
    plan = step.plan(connection, work)
    assert plan is not None
    return work, step.answered(plan, answer)


def test_the_question_numbers_each_active_statement_once(
    connection: apsw.Connection,
) -> None:
    step = ReflectionPass()
    plan = step.plan(connection, _work(connection))
    assert plan is not None
    question = step.question(plan)
    assert question is not None
    lines = question.user.splitlines()[1:]
    assert [line.split(".")[0] for line in lines] == ["1", "2", "3", "4"]
    assert "oolong" in lines[0]
    assert "Oslo" in lines[3]
    assert question.schema["required"] == ["reflections"]


def test_a_reflection_cites_its_statements_and_their_evidence(
    connection: apsw.Connection,
) -> None:
    step = ReflectionPass()
    work, plan = _reflect(
        connection,
        {
            "reflections": [
                {"text": "The user is a keen tea drinker.", "sources": [1, 2, 3]}
            ]
        },
    )
    assert plan is not None
    with connection:
        result = step.apply(connection, work, plan)  # type: ignore[arg-type]
    assert result.counts["reflections"] == 1
    (child,) = result.changed
    kind, origin, confidence = connection.execute(
        "SELECT kind, origin, confidence FROM claims WHERE rowid = ?", (child,)
    ).fetchone()
    assert (kind, origin) == ("reflection", "model")
    assert confidence <= MAX_CONFIDENCE
    cited = sorted(
        str(e)
        for (e,) in connection.execute(
            "SELECT e.event_id FROM claim_sources s JOIN events e ON e.rowid ="
            " s.event_rowid WHERE s.claim_rowid = ?",
            (child,),
        )
    )
    assert cited == ["t1", "t2", "t3"]
    parents = sorted(
        int(p)
        for (p,) in connection.execute(
            "SELECT parent_rowid FROM derivations WHERE child_rowid = ?"
            " AND relation = 'reflection'",
            (child,),
        )
    )
    assert parents == _claim_rowids(connection)[:3]


def test_answers_that_break_the_rules_are_dropped(connection: apsw.Connection) -> None:
    _, plan = _reflect(
        connection,
        {
            "reflections": [
                {"text": "One source only.", "sources": [1]},
                {"text": "Numbers out of range.", "sources": [0, 9]},
                {"text": "x" * 400, "sources": [1, 2]},
                {
                    "text": "The user drinks oolong tea every morning.",
                    "sources": [1, 2],
                },
                {"text": "Booleans are not numbers.", "sources": [True, 2]},
                "not an object",
                {
                    "text": "The user's key is sk-live-4eC39HqLyjWDarjtT1zdp7dc.",
                    "sources": [1, 2],
                },
            ]
        },
    )
    # Only three items are read (MAX_REFLECTIONS), and none of those keeps the rules.
    assert plan is None


def test_a_secret_in_a_reflection_is_redacted(connection: apsw.Connection) -> None:
    _, plan = _reflect(
        connection,
        {
            "reflections": [
                {
                    "text": "The user pastes keys like sk-live-4eC39HqLyjWDarjtT1zdp7dc.",
                    "sources": [1, 2],
                }
            ]
        },
    )
    assert plan is not None
    (drafted,) = plan.drafted  # type: ignore[attr-defined]
    assert "4eC39HqLyjWDarjtT1zdp7dc" not in drafted.text
    assert "[REDACTED" in drafted.text


def test_without_a_model_nothing_is_reflected(connection: apsw.Connection) -> None:
    step = ReflectionPass()
    plan = step.plan(connection, _work(connection))
    assert plan is not None
    assert step.answered(plan, None) is None


def test_a_statement_archived_before_the_commit_stops_its_reflection(
    connection: apsw.Connection,
) -> None:
    step = ReflectionPass()
    work, plan = _reflect(
        connection,
        {
            "reflections": [
                {"text": "The user is a keen tea drinker.", "sources": [1, 2]}
            ]
        },
    )
    assert plan is not None
    first = str(
        connection.execute(
            "SELECT claim_id FROM claims WHERE rowid = ?",
            (_claim_rowids(connection)[0],),
        ).fetchone()[0]
    )
    with connection:
        set_archived(connection, A, first, True, NOW)
        result = step.apply(connection, work, plan)  # type: ignore[arg-type]
    assert result.changed == ()
    assert connection.execute(
        "SELECT COUNT(*) FROM claims WHERE kind = 'reflection'"
    ).fetchone() == (0,)


def _reflected(connection: apsw.Connection) -> int:
    step = ReflectionPass()
    work, plan = _reflect(
        connection,
        {
            "reflections": [
                {"text": "The user is a keen tea drinker.", "sources": [1, 2]}
            ]
        },
    )
    with connection:
        (child,) = step.apply(connection, work, plan).changed  # type: ignore[arg-type]
    return child


def test_forgetting_a_cited_claim_forgets_the_reflection(
    connection: apsw.Connection,
) -> None:
    child = _reflected(connection)
    first = str(
        connection.execute(
            "SELECT claim_id FROM claims WHERE rowid = ?",
            (_claim_rowids(connection)[0],),
        ).fetchone()[0]
    )
    with connection:
        forgotten = forget_memory(connection, A, first, NOW)
    assert child in forgotten.claim_rowids
    assert "reflections drawn from it" in forgotten.result.removed
    assert connection.execute(
        "SELECT COUNT(*) FROM claims WHERE kind = 'reflection'"
    ).fetchone() == (0,)
    # The other cited statement has its own evidence and stays.
    assert connection.execute(
        "SELECT COUNT(*) FROM claims WHERE text LIKE '%green tea%'"
    ).fetchone() == (1,)
    # And the same reflection is not written again: it is tombstoned.
    work, plan = _reflect(
        connection,
        {
            "reflections": [
                {"text": "The user is a keen tea drinker.", "sources": [1, 2]}
            ]
        },
    )
    with connection:
        assert ReflectionPass().apply(connection, work, plan).changed == ()  # type: ignore[arg-type]


def test_forgetting_a_turn_that_removes_a_cited_claim_forgets_the_reflection(
    connection: apsw.Connection,
) -> None:
    child = _reflected(connection)
    with connection:
        forgotten = forget_memory(connection, A, "t2", NOW)
    assert child in forgotten.claim_rowids
    assert connection.execute(
        "SELECT COUNT(*) FROM claims WHERE rowid = ?", (child,)
    ).fetchone() == (0,)


def test_too_few_statements_ask_nothing(connection: apsw.Connection) -> None:
    seeds = _work(connection).seeds[:2]
    assert ReflectionPass().plan(connection, Work(A, NOW, seeds)) is None
