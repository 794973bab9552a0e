"""Recurrences: the closed set of kinds, their validation, and the next occurrence
(timezone-correct across DST, month ends clamped, nothing after the window)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.domain.temporal import (
    Recurrence,
    RecurrenceKind,
    next_occurrence,
    occurrence_start,
)

BERLIN = "Europe/Berlin"
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
NAIVE = dt.datetime(2026, 1, 1)  # noqa: DTZ001 - the refused case


def _utc(*parts: int) -> dt.datetime:
    return dt.datetime(*parts, tzinfo=dt.UTC)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": RecurrenceKind.WEEKLY, "weekdays": (7,)}, r"0 \(Monday\) to 6"),
        ({"kind": RecurrenceKind.WEEKLY, "weekdays": (-1,)}, r"0 \(Monday\) to 6"),
        ({"kind": RecurrenceKind.WEEKLY}, "weekdays are required"),
        ({"kind": RecurrenceKind.DAILY, "weekdays": (1,)}, "only for weekly"),
        ({"kind": RecurrenceKind.WEEKLY, "weekdays": (3, 1)}, "sorted and distinct"),
        ({"kind": RecurrenceKind.MONTHLY, "day": 0}, "1 to 31"),
        ({"kind": RecurrenceKind.MONTHLY, "day": 32}, "1 to 31"),
        ({"kind": RecurrenceKind.MONTHLY}, "day of the month is required"),
        ({"kind": RecurrenceKind.YEARLY, "day": 30, "month": 2}, "1 to 29"),
        ({"kind": RecurrenceKind.YEARLY, "day": 31, "month": 4}, "1 to 30"),
        ({"kind": RecurrenceKind.YEARLY, "day": 1, "month": 13}, "1 to 12"),
        ({"kind": RecurrenceKind.YEARLY, "day": 1}, "a month is required"),
        ({"kind": RecurrenceKind.DAILY, "timezone": "Mars/Olympus"}, "IANA"),
        ({"kind": RecurrenceKind.DAILY, "until": START}, "after its start"),
        ({"kind": RecurrenceKind.DAILY, "starts": NAIVE}, "aware"),
        (
            {"kind": RecurrenceKind.DAILY, "time": dt.time(9, tzinfo=dt.UTC)},
            "local",
        ),
    ],
)
def test_invalid_recurrences_are_refused_with_a_clear_error(
    fields: dict[str, object], message: str
) -> None:
    values: dict[str, object] = {"starts": START, **fields}
    with pytest.raises(ValueError, match=message):
        Recurrence(**values)  # type: ignore[arg-type]


def test_json_round_trip_and_bad_records() -> None:
    recurrence = Recurrence(
        RecurrenceKind.WEEKLY,
        _utc(2026, 12, 2, 10),
        BERLIN,
        weekdays=(0, 3),
        time=dt.time(9, 30),
        until=_utc(2027, 6, 1),
    )
    text = recurrence.to_json()
    assert Recurrence.from_json(text) == recurrence
    assert " " not in text  # compact
    for bad, message in (
        ("[]", "JSON object"),
        ("{", "JSON object"),
        ('{"kind": "hourly", "starts": "2026-01-01T00:00:00+00:00"}', "one of"),
        ('{"kind": "daily"}', "starts"),
        ('{"kind": "daily", "starts": "2026-01-01T00:00:00"}', "UTC offset"),
        ('{"kind": "daily", "starts": "2026-01-01T00:00:00+00:00", "x": 1}', "unknown"),
        (
            (
                '{"kind": "weekly", "weekdays": ["mon"],'
                ' "starts": "2026-01-01T00:00:00+00:00"}'
            ),
            "integers",
        ),
        (
            '{"kind": "daily", "time": "25:00", "starts": "2026-01-01T00:00:00+00:00"}',
            "HH:MM",
        ),
    ):
        with pytest.raises(ValueError, match=message):
            Recurrence.from_json(bad)


def test_describe_reads_as_words() -> None:
    assert (
        Recurrence(
            RecurrenceKind.WEEKLY, START, BERLIN, weekdays=(0,), time=dt.time(9)
        ).describe()
        == "every Monday 09:00 (Europe/Berlin)"
    )
    assert (
        Recurrence(RecurrenceKind.WEEKLY, START, weekdays=(0, 1, 2, 3, 4)).describe()
        == "every weekday (UTC)"
    )
    assert (
        Recurrence(RecurrenceKind.MONTHLY, START, day=22).describe()
        == "every month on the 22nd (UTC)"
    )
    assert (
        Recurrence(
            RecurrenceKind.YEARLY, START, day=3, month=5, until=_utc(2027, 1, 1)
        ).describe()
        == "every year on May 3 (UTC) until 2026-12-31"
    )


def test_weekly_next_occurrence_in_its_zone() -> None:
    standup = Recurrence(
        RecurrenceKind.WEEKLY,
        _utc(2026, 12, 2, 10),
        BERLIN,
        weekdays=(0,),
        time=dt.time(9),
    )
    # Wednesday 2 December 2026: the next Monday 09:00 Berlin is 08:00 UTC on the 7th.
    assert next_occurrence(standup, _utc(2026, 12, 2, 10)) == _utc(2026, 12, 7, 8)
    # At the occurrence itself it is that one; a minute later the one after.
    assert next_occurrence(standup, _utc(2026, 12, 7, 8)) == _utc(2026, 12, 7, 8)
    assert next_occurrence(standup, _utc(2026, 12, 7, 8, 1)) == _utc(2026, 12, 14, 8)
    # Before the window starts, the first occurrence is inside it.
    assert next_occurrence(standup, _utc(2026, 1, 1)) == _utc(2026, 12, 7, 8)


def test_all_day_occurrence_lasts_its_local_day() -> None:
    swim = Recurrence(
        RecurrenceKind.WEEKLY, _utc(2026, 12, 2, 2), "Asia/Shanghai", weekdays=(3,)
    )
    # Thursday 3 Dec, 15:00 in Shanghai: today's occurrence is not over yet.
    thursday = dt.datetime(2026, 12, 3, 15, tzinfo=ZoneInfo("Asia/Shanghai"))
    expected = dt.datetime(2026, 12, 3, tzinfo=ZoneInfo("Asia/Shanghai"))
    assert next_occurrence(swim, thursday) == expected
    friday = thursday + dt.timedelta(days=1)
    assert next_occurrence(swim, friday) == expected + dt.timedelta(days=7)


def test_across_dst_the_local_time_holds() -> None:
    daily = Recurrence(RecurrenceKind.DAILY, START, BERLIN, time=dt.time(9))
    # 09:00 Berlin is 08:00 UTC in winter and 07:00 UTC after the switch of 29 March.
    assert next_occurrence(daily, _utc(2026, 3, 28, 12)) == _utc(2026, 3, 29, 7)
    assert next_occurrence(daily, _utc(2026, 3, 27, 12)) == _utc(2026, 3, 28, 8)
    # 02:30 does not exist on 29 March: it happens at 03:30 local, after the switch.
    early = Recurrence(RecurrenceKind.DAILY, START, BERLIN, time=dt.time(2, 30))
    assert next_occurrence(early, _utc(2026, 3, 28, 23)) == _utc(2026, 3, 29, 1, 30)
    # 02:30 happens twice on 25 October: the first time counts (00:30 UTC).
    assert next_occurrence(early, _utc(2026, 10, 25)) == _utc(2026, 10, 25, 0, 30)


def test_month_end_falls_on_the_last_day() -> None:
    rent = Recurrence(RecurrenceKind.MONTHLY, START, day=31)
    assert next_occurrence(rent, _utc(2026, 2, 1)) == _utc(2026, 2, 28)
    assert next_occurrence(rent, _utc(2026, 4, 1)) == _utc(2026, 4, 30)
    assert next_occurrence(rent, _utc(2026, 5, 1)) == _utc(2026, 5, 31)
    leap = Recurrence(RecurrenceKind.YEARLY, START, day=29, month=2)
    assert next_occurrence(leap, _utc(2026, 3, 1)) == _utc(2027, 2, 28)
    assert next_occurrence(leap, _utc(2027, 3, 1)) == _utc(2028, 2, 29)


def test_nothing_after_the_window() -> None:
    until_june = Recurrence(
        RecurrenceKind.WEEKLY,
        START,
        BERLIN,
        weekdays=(0,),
        until=dt.datetime(2026, 6, 1, tzinfo=ZoneInfo(BERLIN)),
    )
    last = next_occurrence(until_june, _utc(2026, 5, 24, 23))
    assert last == dt.datetime(2026, 5, 25, tzinfo=ZoneInfo(BERLIN))
    assert next_occurrence(until_june, _utc(2026, 5, 26)) is None
    assert next_occurrence(until_june, _utc(2030, 1, 1)) is None
    with pytest.raises(ValueError, match="aware"):
        next_occurrence(until_june, NAIVE)


_ZONES = st.sampled_from(
    ["UTC", BERLIN, "America/New_York", "Asia/Shanghai", "Australia/Lord_Howe"]
)
# Hypothesis bounds are naive; every drawn moment is made UTC.
_MOMENTS = st.datetimes(
    min_value=dt.datetime(2025, 1, 1),  # noqa: DTZ001
    max_value=dt.datetime(2029, 12, 31),  # noqa: DTZ001
).map(lambda moment: moment.replace(tzinfo=dt.UTC))
_TIMES = st.none() | st.times().map(lambda t: t.replace(second=0, microsecond=0))


@st.composite
def _recurrences(draw: st.DrawFn) -> Recurrence:
    kind = draw(st.sampled_from(list(RecurrenceKind)))
    fields: dict[str, object] = {}
    if kind is RecurrenceKind.WEEKLY:
        days = draw(st.sets(st.integers(0, 6), min_size=1))
        fields["weekdays"] = tuple(sorted(days))
    elif kind is RecurrenceKind.MONTHLY:
        fields["day"] = draw(st.integers(1, 31))
    elif kind is RecurrenceKind.YEARLY:
        month = draw(st.integers(1, 12))
        fields["month"] = month
        fields["day"] = draw(
            st.integers(1, (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1])
        )
    starts = draw(_MOMENTS)
    until = draw(st.none() | st.timedeltas(dt.timedelta(hours=1), dt.timedelta(3000)))
    return Recurrence(
        kind=kind,
        starts=starts,
        timezone=draw(_ZONES),
        time=draw(_TIMES),
        until=None if until is None else starts + until,
        **fields,  # type: ignore[arg-type]
    )


def _matches_kind(recurrence: Recurrence, occurrence: dt.datetime) -> bool:
    local = occurrence.astimezone(recurrence.zone)
    day = local.date()
    if occurrence != occurrence_start(recurrence, day):
        return False
    if recurrence.kind is RecurrenceKind.WEEKLY:
        return day.weekday() in recurrence.weekdays
    last = (day.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
    month_end = (last - dt.timedelta(days=1)).day
    wanted = None if recurrence.day is None else min(recurrence.day, month_end)
    if recurrence.kind is RecurrenceKind.MONTHLY:
        return day.day == wanted
    if recurrence.kind is RecurrenceKind.YEARLY:
        return day.month == recurrence.month and day.day == wanted
    return True


@given(_recurrences(), _MOMENTS)
def test_next_occurrence_matches_its_kind_inside_the_window(
    recurrence: Recurrence, moment: dt.datetime
) -> None:
    occurrence = next_occurrence(recurrence, moment)
    if occurrence is None:
        assert recurrence.until is not None
        # Nothing left: no occurrence starts between the moment and the window's end.
        return
    assert _matches_kind(recurrence, occurrence)
    assert recurrence.until is None or occurrence < recurrence.until
    since = max(moment, recurrence.starts)
    if recurrence.time is not None:
        assert occurrence >= since
    else:
        # An all-day occurrence counts while its local day lasts.
        assert (
            occurrence.astimezone(recurrence.zone).date()
            >= since.astimezone(recurrence.zone).date()
        )


@given(_recurrences(), _MOMENTS, st.timedeltas(dt.timedelta(0), dt.timedelta(400)))
def test_next_occurrence_is_monotone(
    recurrence: Recurrence, moment: dt.datetime, step: dt.timedelta
) -> None:
    first = next_occurrence(recurrence, moment)
    later = next_occurrence(recurrence, moment + step)
    if first is None:
        assert later is None
    elif later is not None:
        assert first <= later
    # Nothing is skipped: the next occurrence after this one's start is not earlier.
    if first is not None:
        assert next_occurrence(recurrence, first) == first
