"""The rules every ID follows: agent IDs from a safe alphabet matched whole, caller-given
IDs printable and bounded, segment IDs recognised by shape, turn times inside the
supported calendar."""

from __future__ import annotations

import datetime as dt

import pytest

from cairn.domain.evidence import EARLIEST_TIME, LATEST_TIME, time_problem
from cairn.domain.ids import (
    MAX_ID_BYTES,
    identifier_problem,
    is_segment_id,
    segment_id,
    validate_agent_id,
)


@pytest.mark.parametrize("value", ["a\n", "a\r\n", "\na", "a b", "", "-a", "a" * 129])
def test_an_agent_id_is_matched_whole_so_a_trailing_newline_is_refused(
    value: str,
) -> None:
    with pytest.raises(ValueError, match="must be 1-128 characters"):
        validate_agent_id(value)


def test_an_agent_id_of_the_safe_alphabet_is_accepted() -> None:
    assert validate_agent_id("a") == "a"
    assert (
        validate_agent_id("Agent_1.x:y@z-" + "9" * 114) == "Agent_1.x:y@z-" + "9" * 114
    )


@pytest.mark.parametrize(
    "value",
    [
        "e1",
        "msg#seg1",
        "会话-2026-01-05",
        "turn 🙂 42",
        "x" * MAX_ID_BYTES,
        "é" * (MAX_ID_BYTES // 2),
    ],
)
def test_a_printable_id_up_to_the_byte_limit_is_accepted(value: str) -> None:
    assert identifier_problem("event ID", value) is None


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("", "must not be blank"),
        ("   ", "must not be blank"),
        ("e\x00", "U+0000 at position 1"),
        ("e\n1", "U+000A at position 1"),
        ("e\x7f", "U+007F"),
        ("e\x85", "U+0085"),
        ("e\ud800", "U+D800"),
        ("x" * (MAX_ID_BYTES + 1), f"{MAX_ID_BYTES + 1} bytes; at most 256"),
        ("é" * 129, "258 bytes"),
        ("x" * 100_000, "100000 bytes"),
    ],
)
def test_a_blank_unprintable_or_overlong_id_is_refused_with_a_sentence(
    value: str, words: str
) -> None:
    problem = identifier_problem("event ID", value)
    assert problem is not None
    assert problem.startswith("the event ID ")
    assert words in problem
    # The sentence never carries the value itself (it may be huge or unprintable).
    assert len(problem) < 200


def test_a_non_string_id_is_refused() -> None:
    assert identifier_problem("session ID", 42) == "the session ID must be a string"


def test_segment_ids_are_recognised_by_their_shape() -> None:
    assert segment_id("x", 3) == "x#seg3"
    assert is_segment_id("x#seg1")
    assert is_segment_id("x#seg1#seg12")
    assert not is_segment_id("#seg1")
    assert not is_segment_id("x#seg")
    assert not is_segment_id("x#segment1")
    assert not is_segment_id("x#seg1a")


@pytest.mark.parametrize(
    "value",
    [
        dt.datetime(
            9999, 12, 31, 23, 59, 59, tzinfo=dt.timezone(dt.timedelta(hours=-5))
        ),
        dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=5))),
        dt.datetime.max.replace(tzinfo=dt.UTC),
        dt.datetime.min.replace(tzinfo=dt.UTC),
        LATEST_TIME + dt.timedelta(microseconds=1),
        EARLIEST_TIME - dt.timedelta(microseconds=1),
    ],
)
def test_a_time_at_the_calendar_edges_is_outside_the_supported_calendar(
    value: dt.datetime,
) -> None:
    problem = time_problem("the time", value)
    assert problem is not None
    assert "outside the supported calendar (0002-01-01 to 9998-12-31 UTC)" in problem


@pytest.mark.parametrize(
    "value",
    [
        LATEST_TIME,
        EARLIEST_TIME,
        # The same instants written in far zones convert to UTC inside the bounds.
        LATEST_TIME.astimezone(dt.timezone(dt.timedelta(hours=14))),
        EARLIEST_TIME.astimezone(dt.timezone(dt.timedelta(hours=-12))),
        dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC),
    ],
)
def test_a_time_inside_the_supported_calendar_is_accepted(value: dt.datetime) -> None:
    assert time_problem("the time", value) is None


def test_an_opaque_id_never_reads_as_a_card_number(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import uuid

    from cairn.domain import ids
    from cairn.errors import SecretInIdentifierError
    from cairn.ingestion.screen import screen_identifier

    # A Luhn-valid card number inside a random hex ID is refused by the screen every ID
    # handed back passes; such a draw is thrown away.
    card_like = uuid.UUID("4111111111111111abcdefabcdefabcd")
    drawn = iter([card_like, uuid.UUID("0123abcd" * 4)])
    monkeypatch.setattr(ids.uuid, "uuid4", lambda: next(drawn))
    with pytest.raises(SecretInIdentifierError):
        screen_identifier("conflict ID", card_like.hex)
    value = ids.opaque_id()
    assert value == "0123abcd" * 4
    screen_identifier("conflict ID", value)
