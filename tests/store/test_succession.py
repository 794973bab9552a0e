"""Succession follows evidence time, not arrival: any ingestion order of the values of an
attribute gives the same current value, and each superseded value says until when it held
(cairn.store.succession)."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path

import apsw
import pytest
from tests.helpers import turn

from cairn import Memory
from cairn.domain.claim import ClaimDraft, ClaimKind, SourceSpan
from cairn.domain.ids import AgentId, EventId
from cairn.domain.scope import Scope
from cairn.domain.temporal import TemporalSpan, TimePrecision
from cairn.ingestion.intake import prepare_turns
from cairn.store.claims import insert_claims
from cairn.store.connection import SCHEMA_VERSION, open_connection
from cairn.store.evidence import insert_events

A = AgentId("a")
JAN = dt.datetime(2025, 1, 1, 9, tzinfo=dt.UTC)  # before the test clock's now
DAYS = {"Paris": 0, "Berlin": 19, "Lisbon": 40}  # city -> day its turn is dated


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[apsw.Connection]:
    opened = open_connection(tmp_path / "cairn.db")
    yield opened
    opened.close()


def _say(
    connection: apsw.Connection,
    event: str,
    at: dt.datetime,
    draft: ClaimDraft,
) -> int:
    """Store one user turn dated ``at`` and the claim drafted from it; superseded count."""
    with connection:
        insert_events(
            connection,
            A,
            prepare_turns([turn(event, draft.text, at=at)], 2400),
            at + dt.timedelta(days=90),  # received long after: arrival is not evidence
        )
        rowids = {
            EventId(str(e)): int(r)
            for e, r in connection.execute("SELECT event_id, rowid FROM events")
        }
        committed = insert_claims(connection, A, [draft], rowids, JAN)
    return committed.superseded


def _lives_in(city: str, event: str, scope: Scope | None = None) -> ClaimDraft:
    return ClaimDraft(
        ClaimKind.FACT,
        f"Ana lives in {city}",
        (SourceSpan(EventId(event), 0, 5),),
        subject="Ana",
        predicate="lives_in",
        scope=scope or Scope.agent(),
    )


def _chain(connection: apsw.Connection) -> list[tuple[str, str, str | None]]:
    return [
        (str(text), str(lifecycle), None if until is None else str(until))
        for text, lifecycle, until in connection.execute(
            "SELECT text, lifecycle, superseded_at FROM claims WHERE agent_id = 'a'"
            " ORDER BY evidence_at"
        )
    ]


def _day(city: str) -> dt.datetime:
    return JAN + dt.timedelta(days=DAYS[city])


@pytest.mark.parametrize("order", list(itertools.permutations(DAYS)))
def test_any_arrival_order_gives_the_same_succession(
    connection: apsw.Connection, order: tuple[str, ...]
) -> None:
    for city in order:
        _say(connection, city.lower(), _day(city), _lives_in(city, city.lower()))
    assert _chain(connection) == [
        ("Ana lives in Paris", "superseded", _day("Berlin").isoformat()),
        ("Ana lives in Berlin", "superseded", _day("Lisbon").isoformat()),
        ("Ana lives in Lisbon", "active", None),
    ]
    # Lineage only grows: every adjacent pair has its supersede edge.
    edges = {
        (str(parent), str(child))
        for parent, child in connection.execute(
            "SELECT p.text, c.text FROM derivations d JOIN claims p ON p.rowid ="
            " d.parent_rowid JOIN claims c ON c.rowid = d.child_rowid"
            " WHERE d.relation = 'supersede'"
        )
    }
    assert {
        ("Ana lives in Paris", "Ana lives in Berlin"),
        ("Ana lives in Berlin", "Ana lives in Lisbon"),
    } <= edges


def test_an_older_value_arriving_late_stays_history(
    connection: apsw.Connection,
) -> None:
    """The issue's finding: Paris dated Jan 1, ingested after Berlin dated Jan 20."""
    _say(connection, "berlin", _day("Berlin"), _lives_in("Berlin", "berlin"))
    # One claim superseded: the late, older Paris itself, not Berlin.
    assert _say(connection, "paris", _day("Paris"), _lives_in("Paris", "paris")) == 1
    assert _chain(connection) == [
        ("Ana lives in Paris", "superseded", _day("Berlin").isoformat()),
        ("Ana lives in Berlin", "active", None),
    ]


def _stated(text: str, event: str) -> ClaimDraft:
    return ClaimDraft(
        ClaimKind.FACT,
        text,
        (SourceSpan(EventId(event), 0, 5),),
        subject="Ana",
        predicate="lives_in",
    )


def _state_in_order(
    connection: apsw.Connection, said: list[tuple[str, int]], order: Sequence[int]
) -> None:
    """Store ``said`` (text, day) as turns of their own, in ``order``."""
    for index in order:
        text, day = said[index]
        event = f"e{index}"
        _say(connection, event, JAN + dt.timedelta(days=day), _stated(text, event))


def _until(day: int) -> str:
    return (JAN + dt.timedelta(days=day)).isoformat()


def _moved(
    text: str, event: str, start: dt.datetime, precision: TimePrecision
) -> ClaimDraft:
    return ClaimDraft(
        ClaimKind.STATE,
        text,
        (SourceSpan(EventId(event), 0, 5),),
        subject="Ana",
        predicate="lives_in",
        temporal=TemporalSpan(start, None, precision, "UTC"),
    )


def _moved_last_month(event: str, month_start: dt.datetime) -> ClaimDraft:
    return _moved(
        "Ana moved to Lisbon last month", event, month_start, TimePrecision.MONTH
    )


def _moved_on(city: str, event: str, day: dt.datetime) -> ClaimDraft:
    return _moved(f"Ana moved to {city}", event, day, TimePrecision.DAY)


@pytest.mark.parametrize("porto_first", [True, False])
def test_a_move_dated_only_by_its_month_follows_a_value_stated_within_that_month(
    connection: apsw.Connection, porto_first: bool
) -> None:
    """Found in a user trial: "I live in Porto" said on October 1 at 9:00, "I moved to
    Lisbon last month" said on November 20. The move fell somewhere in October, after
    the user still lived in Porto: Lisbon is current (it was history "until October 1",
    its month's first instant being taken as the move's)."""
    october = dt.datetime(2025, 10, 1, tzinfo=dt.UTC)
    porto_at = october + dt.timedelta(hours=9)
    lisbon_at = dt.datetime(2025, 11, 20, 9, tzinfo=dt.UTC)
    said = [
        ("porto", porto_at, _lives_in("Porto", "porto")),
        ("lisbon", lisbon_at, _moved_last_month("lisbon", october)),
    ]
    for event, at, draft in said if porto_first else reversed(said):
        _say(connection, event, at, draft)
    # Porto held until the move, which is known to its month only.
    assert _chain(connection) == [
        ("Ana moved to Lisbon last month", "active", None),
        ("Ana lives in Porto", "superseded", october.isoformat()),
    ]


@pytest.mark.parametrize("porto_first", [True, False])
def test_a_move_dated_only_by_its_month_follows_a_value_stated_late_in_that_month(
    connection: apsw.Connection, porto_first: bool
) -> None:
    # "I live in Porto" said on October 25: the October move came after the 25th.
    october = dt.datetime(2025, 10, 1, tzinfo=dt.UTC)
    said = [
        ("porto", october + dt.timedelta(days=24), _lives_in("Porto", "porto")),
        (
            "lisbon",
            dt.datetime(2025, 11, 20, 9, tzinfo=dt.UTC),
            _moved_last_month("lisbon", october),
        ),
    ]
    for event, at, draft in said if porto_first else reversed(said):
        _say(connection, event, at, draft)
    assert [(text, lifecycle) for text, lifecycle, _ in _chain(connection)] == [
        ("Ana moved to Lisbon last month", "active"),
        ("Ana lives in Porto", "superseded"),
    ]


@pytest.mark.parametrize("porto_first", [True, False])
def test_a_move_dated_by_last_month_told_after_a_value_said_this_month_is_news(
    connection: apsw.Connection, porto_first: bool
) -> None:
    """Found in a user trial: "I live in Porto" said on December 6, then minutes later
    "Update: I moved to Lisbon last month". The move fell in November, before Porto was
    said, but the user told it after saying Porto: it is news to that, and Lisbon is
    current. (Placed in the middle of November, Porto was.)"""
    november = dt.datetime(2025, 11, 1, tzinfo=dt.UTC)
    porto_at = dt.datetime(2025, 12, 6, 21, 31, tzinfo=dt.UTC)
    lisbon_at = porto_at + dt.timedelta(minutes=2)
    said = [
        ("porto", porto_at, _lives_in("Porto", "porto")),
        ("lisbon", lisbon_at, _moved_last_month("lisbon", november)),
    ]
    for event, at, draft in said if porto_first else reversed(said):
        _say(connection, event, at, draft)
    assert [(text, lifecycle) for text, lifecycle, _ in _chain(connection)] == [
        ("Ana moved to Lisbon last month", "active"),
        ("Ana lives in Porto", "superseded"),
    ]


def test_a_move_dated_to_a_year_long_past_stays_history_of_a_value_said_since(
    connection: apsw.Connection,
) -> None:
    """ "I live in Porto" said in December 2025, then "I moved to Lisbon in 2019": a
    later move fits between 2019 and the Porto statement, so Porto stays current."""
    porto_at = dt.datetime(2025, 12, 6, 21, 31, tzinfo=dt.UTC)
    _say(connection, "porto", porto_at, _lives_in("Porto", "porto"))
    _say(
        connection,
        "lisbon",
        porto_at + dt.timedelta(minutes=2),
        _moved(
            "Ana moved to Lisbon in 2019",
            "lisbon",
            dt.datetime(2019, 1, 1, tzinfo=dt.UTC),
            TimePrecision.YEAR,
        ),
    )
    assert [(text, lifecycle) for text, lifecycle, _ in _chain(connection)] == [
        ("Ana moved to Lisbon in 2019", "superseded"),
        ("Ana lives in Porto", "active"),
    ]


@pytest.mark.parametrize("berlin_first", [True, False])
def test_a_move_dated_to_its_day_late_in_a_month_follows_one_dated_to_that_month(
    connection: apsw.Connection, berlin_first: bool
) -> None:
    """Both said on January 5: "I moved to Berlin two weeks ago" (December 22) and "I
    moved to Lisbon last month" (some day of December). Nothing said within December
    narrows the month, so the move known to its month is placed at its middle, before
    the 22nd: Berlin is current. (Placed at the month's end, Lisbon was.)"""
    december = dt.datetime(2025, 12, 1, tzinfo=dt.UTC)
    said_at = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
    said = [
        ("berlin", _moved_on("Berlin", "berlin", december + dt.timedelta(days=21))),
        ("lisbon", _moved_last_month("lisbon", december)),
    ]
    for event, draft in said if berlin_first else reversed(said):
        _say(connection, event, said_at, draft)
    assert [(text, lifecycle) for text, lifecycle, _ in _chain(connection)] == [
        ("Ana moved to Lisbon last month", "superseded"),
        ("Ana moved to Berlin", "active"),
    ]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_a_restated_value_is_not_history_of_its_restatement(
    connection: apsw.Connection, order: tuple[int, ...]
) -> None:
    said = [
        ("Ana lives in Berlin", 0),
        ("Ana moved to Lisbon last month", 19),
        ("Ana lives in Lisbon now", 40),
    ]
    _state_in_order(connection, said, order)
    # Berlin held until the first statement of Lisbon; both Lisbon statements hold.
    assert _chain(connection) == [
        ("Ana lives in Berlin", "superseded", _until(19)),
        ("Ana moved to Lisbon last month", "active", None),
        ("Ana lives in Lisbon now", "active", None),
    ]


def test_a_value_said_again_after_another_is_current_again(
    connection: apsw.Connection,
) -> None:
    said = [
        ("Ana lives in Lisbon", 0),
        ("Ana lives in Berlin", 19),
        ("Ana lives in Lisbon now", 40),
    ]
    _state_in_order(connection, said, range(3))
    assert _chain(connection) == [
        ("Ana lives in Lisbon", "superseded", _until(19)),
        ("Ana lives in Berlin", "superseded", _until(40)),
        ("Ana lives in Lisbon now", "active", None),
    ]


def test_a_plan_moved_earlier_is_still_the_newer_plan(
    connection: apsw.Connection,
) -> None:
    """A plan's evidence time is when it was said, not the day it is for."""

    def plan(day: int, event: str) -> ClaimDraft:
        return ClaimDraft(
            ClaimKind.PLAN,
            f"Ana sees the dentist on March {day}",
            (SourceSpan(EventId(event), 0, 5),),
            temporal=TemporalSpan(
                dt.datetime(2026, 3, day, tzinfo=dt.UTC),
                dt.datetime(2026, 3, day + 1, tzinfo=dt.UTC),
                TimePrecision.DAY,
            ),
            subject="Ana",
            predicate="plan:dentist",
        )

    said = dt.datetime(2026, 3, 2, 9, tzinfo=dt.UTC)
    _say(connection, "p20", said, plan(20, "p20"))
    _say(connection, "p10", said + dt.timedelta(days=1), plan(10, "p10"))
    lifecycles = dict(
        connection.execute("SELECT text, lifecycle FROM claims WHERE agent_id = 'a'")
    )
    assert lifecycles == {
        "Ana sees the dentist on March 20": "superseded",
        "Ana sees the dentist on March 10": "active",
    }


def test_succession_never_crosses_a_scope(connection: apsw.Connection) -> None:
    _say(connection, "paris", _day("Paris"), _lives_in("Paris", "paris"))
    _say(
        connection,
        "berlin",
        _day("Berlin"),
        _lives_in("Berlin", "berlin", Scope.session("s9")),
    )
    assert dict(
        connection.execute("SELECT text, lifecycle FROM claims WHERE agent_id = 'a'")
    ) == {"Ana lives in Paris": "active", "Ana lives in Berlin": "active"}


def test_an_earlier_source_merged_into_a_value_moves_it_earlier(
    connection: apsw.Connection,
) -> None:
    _say(connection, "paris", _day("Paris"), _lives_in("Paris", "paris"))
    _say(connection, "berlin2", _day("Lisbon"), _lives_in("Berlin", "berlin2"))
    # The same Berlin claim, said again but dated before Paris: now the oldest value.
    _say(
        connection,
        "berlin1",
        _day("Paris") - dt.timedelta(days=5),
        _lives_in("Berlin", "berlin1"),
    )
    assert [row[:2] for row in _chain(connection)] == [
        ("Ana lives in Berlin", "superseded"),
        ("Ana lives in Paris", "active"),
    ]


def test_schema_17_orders_moves_dated_by_their_month_again(tmp_path: Path) -> None:
    """A database from before schema 17, where the move dated "last month" took its
    month's first instant and was made history of a value stated within that month,
    comes out of the migration with the move current."""
    path = tmp_path / "cairn.db"
    connection = open_connection(path)
    october = dt.datetime(2025, 10, 1, tzinfo=dt.UTC)
    _say(
        connection,
        "porto",
        october + dt.timedelta(hours=9),
        _lives_in("Porto", "porto"),
    )
    _say(
        connection,
        "lisbon",
        dt.datetime(2025, 11, 20, 9, tzinfo=dt.UTC),
        _moved_last_month("lisbon", october),
    )
    porto_at = (october + dt.timedelta(hours=9)).isoformat()
    with connection:  # as schema 16 left it
        connection.execute(
            "UPDATE claims SET lifecycle = 'superseded',"
            " superseded_at = ? WHERE valid_from IS NOT NULL",
            (porto_at,),
        )
        connection.execute(
            "UPDATE claims SET lifecycle = 'active', superseded_at = NULL"
            " WHERE valid_from IS NULL"
        )
        connection.pragma("user_version", 16)
    assert _chain(connection)[0] == (
        "Ana moved to Lisbon last month",
        "superseded",
        porto_at,
    )
    connection.close()
    connection = open_connection(path)
    try:
        assert connection.pragma("user_version") == SCHEMA_VERSION
        assert _chain(connection) == [
            ("Ana moved to Lisbon last month", "active", None),
            ("Ana lives in Porto", "superseded", october.isoformat()),
        ]
    finally:
        connection.close()


def _reopened_as_left_by(
    connection: apsw.Connection,
    path: Path,
    version: int,
    *,
    current: str,
    superseded: tuple[str, dt.datetime],
) -> apsw.Connection:
    """The chain as schema ``version`` ordered it (``current`` active, the other
    superseded at its moment), closed and opened again: the later migrations run."""
    text, until = superseded
    with connection:
        connection.execute(
            "UPDATE claims SET lifecycle = 'superseded', superseded_at = ?"
            " WHERE text = ?",
            (until.isoformat(), text),
        )
        connection.execute(
            "UPDATE claims SET lifecycle = 'active', superseded_at = NULL"
            " WHERE text = ?",
            (current,),
        )
        connection.pragma("user_version", version)
    connection.close()
    return open_connection(path)


def test_schema_18_places_a_move_dated_by_its_month_at_the_middle(
    tmp_path: Path,
) -> None:
    """A database schema 17 left with the month's move current over a move dated to the
    22nd of that month (both said at once) comes out of schema 18 with the later day's
    move current."""
    path = tmp_path / "cairn.db"
    connection = open_connection(path)
    december = dt.datetime(2025, 12, 1, tzinfo=dt.UTC)
    said_at = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
    berlin_day = december + dt.timedelta(days=21)
    _say(connection, "berlin", said_at, _moved_on("Berlin", "berlin", berlin_day))
    _say(connection, "lisbon", said_at, _moved_last_month("lisbon", december))
    connection = _reopened_as_left_by(
        connection,
        path,
        17,
        current="Ana moved to Lisbon last month",
        superseded=("Ana moved to Berlin", december),
    )
    try:
        assert connection.pragma("user_version") == SCHEMA_VERSION
        assert _chain(connection) == [
            ("Ana moved to Lisbon last month", "superseded", berlin_day.isoformat()),
            ("Ana moved to Berlin", "active", None),
        ]
    finally:
        connection.close()


def test_schema_20_makes_a_move_told_after_a_value_said_since_its_period_current(
    tmp_path: Path,
) -> None:
    """A database schema 19 left with "I live in Porto" current over "I moved to Lisbon
    last month" told minutes after it comes out of schema 20 with Lisbon current."""
    path = tmp_path / "cairn.db"
    connection = open_connection(path)
    porto_at = dt.datetime(2025, 12, 6, 21, 31, tzinfo=dt.UTC)
    november = dt.datetime(2025, 11, 1, tzinfo=dt.UTC)
    _say(connection, "porto", porto_at, _lives_in("Porto", "porto"))
    lisbon_at = porto_at + dt.timedelta(minutes=2)
    _say(connection, "lisbon", lisbon_at, _moved_last_month("lisbon", november))
    connection = _reopened_as_left_by(
        connection,
        path,
        19,
        current="Ana lives in Porto",
        superseded=("Ana moved to Lisbon last month", porto_at),
    )
    try:
        assert connection.pragma("user_version") == SCHEMA_VERSION
        assert [(text, lifecycle) for text, lifecycle, _ in _chain(connection)] == [
            ("Ana moved to Lisbon last month", "active"),
            ("Ana lives in Porto", "superseded"),
        ]
    finally:
        connection.close()


def test_schema_8_orders_existing_chains_by_evidence(tmp_path: Path) -> None:
    """A database from before schema 8 where a late, older value superseded the newer
    one (arrival order) comes out of the migration with the newer value current."""
    path = tmp_path / "cairn.db"
    old = apsw.Connection(str(path))
    package = resources.files("cairn.store") / "migrations"
    names = sorted(p.name for p in package.iterdir() if p.name.endswith(".sql"))
    for index, name in enumerate(names[:5], start=1):
        with old:
            old.execute((package / name).read_text(encoding="utf-8"))
            old.pragma("user_version", index)
    stamp = JAN.isoformat()
    with old:
        old.execute(
            "INSERT INTO agents (agent_id, created_at) VALUES ('a', ?)", (stamp,)
        )
        for rowid, (city, lifecycle) in enumerate(
            (("Berlin", "superseded"), ("Paris", "active")), start=1
        ):
            at = _day(city).isoformat()
            old.execute(
                "INSERT INTO events (rowid, event_id, agent_id, session_id, role, text,"
                " content_hash, occurred_at, received_at, extracted)"
                " VALUES (?, ?, 'a', 's1', 'user', ?, ?, ?, ?, 1)",
                (rowid, city.lower(), f"I live in {city}.", city, at, stamp),
            )
            old.execute(
                "INSERT INTO claims (rowid, claim_id, agent_id, kind, lifecycle, origin,"
                " text, subject, predicate, confidence, scope, provenance_key,"
                " content_hash, created_at, updated_at) VALUES (?, ?, 'a', 'fact', ?,"
                " 'extracted', ?, 'Ana', 'lives_in', 0.8, 'agent', ?, ?, ?, ?)",
                (
                    rowid,
                    f"c{rowid}",
                    lifecycle,
                    f"Ana lives in {city}",
                    city,
                    city,
                    stamp,
                    stamp,
                ),
            )
            old.execute(
                "INSERT INTO claim_sources (claim_rowid, event_rowid, span_start,"
                " span_end) VALUES (?, ?, 0, 5)",
                (rowid, rowid),
            )
        old.execute(
            "INSERT INTO derivations (agent_id, parent_rowid, child_rowid, relation,"
            " created_at) VALUES ('a', 1, 2, 'supersede', ?)",
            (stamp,),
        )
    old.close()
    connection = open_connection(path)
    try:
        assert connection.pragma("user_version") == SCHEMA_VERSION
        assert _chain(connection) == [
            ("Ana lives in Paris", "superseded", _day("Berlin").isoformat()),
            ("Ana lives in Berlin", "active", None),
        ]
    finally:
        connection.close()


async def test_recall_answers_the_newer_value_whatever_arrived_last(
    memory: Memory,
) -> None:
    await memory.ingest("a", [turn("b", "I live in Berlin.", at=_day("Berlin"))])
    await memory.wait_idle("a")
    await memory.ingest("a", [turn("p", "I live in Paris.", at=_day("Paris"))])
    await memory.wait_idle("a")
    recall = await memory.recall("a", "Where does Ana live?")
    assert "Berlin" in recall.items[0].text
    assert recall.items[0].standing == "current"
    assert [item.standing for item in recall.items if "Paris" in item.text] == [
        "history"
    ] * len([item for item in recall.items if "Paris" in item.text])
