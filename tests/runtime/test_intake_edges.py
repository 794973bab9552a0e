"""Intake at its edges, embedded: a bad ID or a time at the edge of the calendar rejects
that turn alone with a typed reason and stores nothing of it; single-ID calls raise a
typed error; segment IDs have a key space of their own, so no caller ID can make a long
message impossible to ingest; turns near the calendar edges go through extraction and
recall without overflowing, and an extraction bound past the calendar drops its
candidate only."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import attrs
import pytest
import trio
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import BASE_TIME, turn

from cairn import Memory, Turn
from cairn.domain.evidence import EARLIEST_TIME, LATEST_TIME, EvidenceEvent, Role
from cairn.domain.ids import AgentId, EventId, SessionId
from cairn.domain.outcomes import IntakeOutcome, IntakeRejection
from cairn.domain.scope import Scope
from cairn.errors import (
    InvalidIdentifierError,
    InvalidInputError,
    InvalidTemporalError,
)
from cairn.ingestion.proposal import Candidate, CandidateSource, Proposal
from cairn.ingestion.validate import validate_proposal
from cairn.runtime.transfer import export_memory, import_memory
from cairn.store.agents import ensure_agent
from cairn.store.connection import open_connection
from cairn.store.evidence import insert_events, stored_turn
from cairn.testing import FixedDomainClock

WEST = dt.timezone(dt.timedelta(hours=-5))
EAST = dt.timezone(dt.timedelta(hours=5))
# Over two segments at the test's 64-byte segments.
LONG = (
    "The first part is about gardening and roses in spring. "
    "The second part names the vault combination zebra marigold. "
    "The third part is about cooking pasta on Sundays."
)


def _event_ids(data_dir: Path) -> list[str]:
    connection = open_connection(data_dir / "cairn.db")
    try:
        return [
            str(row[0]) for row in connection.execute("SELECT event_id FROM events")
        ]
    finally:
        connection.close()


def _store_directly(data_dir: Path, stored: Turn) -> None:
    """``stored`` in the agent's evidence as an older cairn or an import left it."""
    data_dir.mkdir(parents=True)
    connection = open_connection(data_dir / "cairn.db")
    try:
        with connection:
            ensure_agent(connection, AgentId("a"), BASE_TIME)
            insert_events(connection, AgentId("a"), [stored_turn(stored)], BASE_TIME)
    finally:
        connection.close()


async def test_a_bad_id_rejects_that_turn_alone_and_stores_nothing_of_it(
    memory: Memory, data_dir: Path
) -> None:
    turns = [
        turn("good-1", "I love oolong tea."),
        turn("a" * 100_000, "An overlong event ID."),
        turn("e\x00nul", "A NUL in the event ID."),
        turn("e-surrogate\ud800", "A lone surrogate in the event ID."),
        turn("e-session", "A control character in the session.", session="s\n1"),
        turn("e-replaces", "An edit of an unprintable ID.", replaces="r\x85"),
        turn("good-2", "My sister lives in Lisbon."),
    ]
    report = await memory.ingest("a", turns)
    outcomes = [(r.outcome, r.rejection) for r in report.results]
    rejected = (IntakeOutcome.REJECTED, IntakeRejection.INVALID_ID)
    assert outcomes == [
        (IntakeOutcome.INGESTED, None),
        rejected,
        rejected,
        rejected,
        rejected,
        rejected,
        (IntakeOutcome.INGESTED, None),
    ]
    reasons = [r.reason or "" for r in report.results[1:6]]
    assert "100000 bytes; at most 256" in reasons[0]
    assert "U+0000" in reasons[1]
    assert "U+D800" in reasons[2]
    assert reasons[3].startswith("the session ID holds a control character")
    assert reasons[4].startswith("the replaced event ID holds a control character")
    await memory.wait_idle("a")
    assert sorted(_event_ids(data_dir)) == ["good-1", "good-2"]
    assert (
        "Lisbon"
        in (await memory.recall("a", "where does my sister live?")).memory_block
    )


async def test_a_single_turn_call_with_a_bad_id_or_time_raises_a_typed_error(
    memory: Memory, data_dir: Path
) -> None:
    with pytest.raises(InvalidIdentifierError, match="U\\+0000"):
        await memory.ingest_turn("a", turn("e\x00", "A NUL."))
    with pytest.raises(InvalidIdentifierError, match="at most 256"):
        await memory.ingest_event("a", turn("e" * 300, "Too long."))
    edge = dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=WEST)
    with pytest.raises(InvalidTemporalError, match="outside the supported calendar"):
        await memory.ingest_turn("a", turn("e-late", "At the edge.", at=edge))
    assert _event_ids(data_dir) == []


async def test_single_id_calls_refuse_a_malformed_id_with_a_typed_error(
    memory: Memory,
) -> None:
    with pytest.raises(InvalidIdentifierError, match="session ID"):
        await memory.declare_session("a", "s\x001")
    with pytest.raises(InvalidIdentifierError, match="fork event ID"):
        await memory.declare_session("a", "s2", forked_from=("s1", "e" * 257))
    with pytest.raises(InvalidIdentifierError, match="turn ID"):
        await memory.recall("a", "tea", session_id="s1", turn_id="t\x1b[31m")
    with pytest.raises(InvalidIdentifierError, match="scope key"):
        await memory.remember(
            "a", "Ana likes tea.", by="user", scope=Scope.session("s" * 300)
        )


@pytest.mark.parametrize(
    "edge",
    [
        dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=WEST),
        dt.datetime(1, 1, 1, tzinfo=EAST),
        dt.datetime.max.replace(tzinfo=dt.UTC),
        dt.datetime.min.replace(tzinfo=dt.UTC),
    ],
)
async def test_a_calendar_edge_time_rejects_that_turn_alone(
    memory: Memory, data_dir: Path, edge: dt.datetime
) -> None:
    report = await memory.ingest(
        "a",
        [
            turn("good-1", "I love oolong tea.", at=BASE_TIME),
            turn("edge", "A turn at the edge of the calendar.", at=edge),
            turn("good-2", "My sister lives in Lisbon."),
        ],
    )
    edge_result = report.results[1]
    assert edge_result.outcome is IntakeOutcome.REJECTED
    assert edge_result.rejection is IntakeRejection.INVALID_TIME
    assert "outside the supported calendar" in (edge_result.reason or "")
    assert [r.outcome for r in report.results[::2]] == [IntakeOutcome.INGESTED] * 2
    await memory.wait_idle("a")
    assert sorted(_event_ids(data_dir)) == ["good-1", "good-2"]


async def test_turns_at_the_supported_edges_are_extracted_and_recalled_without_overflow(
    memory: Memory,
) -> None:
    with trio.fail_after(60):
        report = await memory.ingest(
            "a",
            [
                turn(
                    "late",
                    "Tomorrow I fly to Rome, and next year I move to Oslo every Monday.",
                    at=LATEST_TIME.astimezone(dt.timezone(dt.timedelta(hours=14))),
                ),
                turn(
                    "early",
                    "Yesterday I visited Paris; last year I lived in Lima.",
                    at=EARLIEST_TIME.astimezone(dt.timezone(dt.timedelta(hours=-12))),
                ),
            ],
        )
        assert [r.outcome for r in report.results] == [IntakeOutcome.INGESTED] * 2
        await memory.wait_idle("a")
        assert "Rome" in (await memory.recall("a", "where do I fly?")).memory_block
        assert "Paris" in (await memory.recall("a", "what did I visit?")).memory_block
        # A recall as of any time UTC can hold answers: the moment's arithmetic (a
        # claim's standing then, the turns said by then) never overflows.
        for moment in (
            LATEST_TIME,
            EARLIEST_TIME,
            dt.datetime.max.replace(tzinfo=dt.UTC),
            dt.datetime.min.replace(tzinfo=dt.UTC),
        ):
            found = await memory.recall("a", "where do I fly?", as_of=moment)
            assert ("Rome" in found.memory_block) is (moment >= LATEST_TIME)


async def test_a_caller_id_shaped_like_a_segment_id_never_blocks_a_later_long_message(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    config = attrs.evolve(TEST_CONFIG, event_max_bytes=64)
    async with open_test_memory(data_dir, config, clock=clock) as memory:
        first = await memory.ingest("a", [turn("x#seg1", "A short turn.")])
        (result,) = first.results
        assert result.outcome is IntakeOutcome.REJECTED
        assert result.rejection is IntakeRejection.INVALID_ID
        assert "names a segment of a long message" in (result.reason or "")
        report = await memory.ingest(
            "a", [turn("x", LONG), turn("x#segment-notes", "Not a segment's shape.")]
        )
        assert [r.outcome for r in report.results] == [IntakeOutcome.INGESTED] * 2
        assert report.results[0].segments > 1
        # The segment's own ID is refused as a caller's too, with the same reason.
        again = await memory.ingest("a", [turn("x#seg1", "Another short turn.")])
        assert again.results[0].rejection is IntakeRejection.INVALID_ID
        await memory.wait_idle("a")
        ids = _event_ids(data_dir)
        assert "x" in ids
        assert "x#seg1" in ids
        shown = await memory.recall("a", "vault combination zebra marigold", k=5)
        (segment,) = [i for i in shown.items if "zebra" in i.text]
        forgotten = await memory.forget("a", segment.id)
        assert forgotten.turns_removed == (segment.id,)


async def test_a_turn_stored_under_a_segment_shaped_id_before_still_replays_and_blocks_only_its_message(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    # A turn stored under "x#seg1" before segment IDs were reserved (or imported).
    old = turn("x#seg1", "A short turn from before.")
    _store_directly(data_dir, old)
    config = attrs.evolve(TEST_CONFIG, event_max_bytes=64)
    async with open_test_memory(data_dir, config, clock=clock) as memory:
        replay = await memory.ingest("a", [old])
        assert replay.results[0].outcome is IntakeOutcome.DUPLICATE
        report = await memory.ingest(
            "a", [turn("x", LONG), turn("y", "My sister lives in Lisbon.")]
        )
        long_result, other = report.results
        assert long_result.outcome is IntakeOutcome.REJECTED
        assert long_result.rejection is IntakeRejection.INVALID_ID
        assert "segment ID 'x#seg1' is already a stored turn's ID" in (
            long_result.reason or ""
        )
        assert other.outcome is IntakeOutcome.INGESTED
        await memory.wait_idle("a")
        assert sorted(_event_ids(data_dir)) == ["x#seg1", "y"]


async def test_an_export_with_segments_imports_again_into_a_fresh_directory(
    tmp_path: Path, clock: FixedDomainClock
) -> None:
    config = attrs.evolve(TEST_CONFIG, event_max_bytes=64)
    path = tmp_path / "export.jsonl"
    async with open_test_memory(tmp_path / "one", config, clock=clock) as memory:
        await memory.ingest("a", [turn("x", LONG)])
        await memory.wait_idle("a")
        with path.open("w", encoding="utf-8") as out:
            await export_memory(memory, out, "a")
    async with open_test_memory(tmp_path / "two", config, clock=clock) as other:
        summary = await import_memory(other, path)
        assert summary.rejected == ()
        assert summary.records["event"].imported == 3
        await other.wait_idle("a")
        assert "zebra" in (await other.recall("a", "zebra marigold", k=5)).memory_block
    assert {"x", "x#seg1"} <= set(_event_ids(tmp_path / "two"))


@pytest.mark.parametrize(
    ("valid_from", "valid_until", "timezone"),
    [
        (None, "9999-12-31T23:59:59-05:00", "UTC"),
        ("0001-01-01T00:00:00+05:00", None, "UTC"),
        (None, "0001-01-01", "Asia/Tokyo"),
    ],
)
def test_an_extraction_bound_with_no_utc_instant_drops_that_candidate_only(
    valid_from: str | None, valid_until: str | None, timezone: str
) -> None:
    said = EvidenceEvent(
        1, EventId("e1"), SessionId("s1"), Role.USER, "I fly to Oslo.", BASE_TIME, "Ana"
    )
    source = (CandidateSource(EventId("e1"), quote="I fly to Oslo"),)
    edge = Candidate(
        "plan", "Ana flies", source, valid_from=valid_from, valid_until=valid_until
    )
    fine = Candidate("plan", "Ana flies to Oslo", source)
    batch = validate_proposal(Proposal((edge, fine)), [said], timezone)
    assert batch.rejected_candidates == 1
    assert [draft.text for draft in batch.drafts] == ["Ana flies to Oslo"]


async def test_a_lone_surrogate_in_the_text_rejects_that_turn_alone(
    memory: Memory, data_dir: Path
) -> None:
    report = await memory.ingest(
        "a",
        [
            turn("good", "I love oolong tea."),
            turn("bad-text", "I like \ud800 tea."),
            turn("bad-speaker", "Hello.", speaker="An\udfffa"),
        ],
    )
    decided = [(r.outcome, r.rejection) for r in report.results]
    assert decided == [
        (IntakeOutcome.INGESTED, None),
        (IntakeOutcome.REJECTED, IntakeRejection.INVALID_TEXT),
        (IntakeOutcome.REJECTED, IntakeRejection.INVALID_TEXT),
    ]
    with pytest.raises(InvalidInputError, match="lone surrogate"):
        await memory.ingest_turn("a", turn("bad-2", "\udc00"))
    assert _event_ids(data_dir) == ["good"]
