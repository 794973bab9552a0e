"""Temporal normaliser: expressions resolve against the evidence's own timestamp (never the
wall clock) and the speaker's IANA zone into half-open UTC spans — local days, Monday-based
weeks, calendar months and years — with a parse confidence; odd or impossible text yields
``None`` and never raises."""

from __future__ import annotations

import datetime as dt
import itertools
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.domain.temporal import TimePrecision
from cairn.ingestion import temporal, temporal_en, temporal_zh
from cairn.ingestion.temporal import (
    Direction,
    TemporalMatch,
    _anchor,
    find_times,
    normalise_time,
)

# Wednesday 1 May 2024, noon UTC.
WEDNESDAY = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
SUNDAY = dt.datetime(2024, 5, 5, 12, 0, tzinfo=dt.UTC)
ZONES = [
    "UTC",
    "Europe/Berlin",
    "Asia/Shanghai",
    "America/New_York",
    "Australia/Sydney",
]


def _resolve(
    text: str,
    reference: dt.datetime = WEDNESDAY,
    timezone: str = "UTC",
    prefer: Direction = "future",
) -> TemporalMatch:
    match = normalise_time(text, reference, timezone, prefer=prefer)
    assert match is not None, text
    return match


def _local_days(match: TemporalMatch, timezone: str = "UTC") -> tuple[str, str]:
    zone = ZoneInfo(timezone)
    assert match.span.valid_from is not None
    assert match.span.valid_until is not None
    return (
        match.span.valid_from.astimezone(zone).date().isoformat(),
        match.span.valid_until.astimezone(zone).date().isoformat(),
    )


ENGLISH = [
    ("today", "2024-05-01", "2024-05-02", TimePrecision.DAY),
    ("tonight", "2024-05-01", "2024-05-02", TimePrecision.DAY),
    ("tomorrow", "2024-05-02", "2024-05-03", TimePrecision.DAY),
    ("yesterday", "2024-04-30", "2024-05-01", TimePrecision.DAY),
    ("the day after tomorrow", "2024-05-03", "2024-05-04", TimePrecision.DAY),
    ("this Friday", "2024-05-03", "2024-05-04", TimePrecision.DAY),
    ("next Friday", "2024-05-10", "2024-05-11", TimePrecision.DAY),
    ("last Friday", "2024-04-26", "2024-04-27", TimePrecision.DAY),
    ("on Monday", "2024-05-06", "2024-05-07", TimePrecision.DAY),
    ("this week", "2024-04-29", "2024-05-06", TimePrecision.WEEK),
    ("next week", "2024-05-06", "2024-05-13", TimePrecision.WEEK),
    ("last week", "2024-04-22", "2024-04-29", TimePrecision.WEEK),
    ("this weekend", "2024-05-04", "2024-05-06", TimePrecision.DAY),
    ("next month", "2024-06-01", "2024-07-01", TimePrecision.MONTH),
    ("last month", "2024-04-01", "2024-05-01", TimePrecision.MONTH),
    ("this year", "2024-01-01", "2025-01-01", TimePrecision.YEAR),
    ("next year", "2025-01-01", "2026-01-01", TimePrecision.YEAR),
    ("in 3 days", "2024-05-04", "2024-05-05", TimePrecision.DAY),
    ("in three days", "2024-05-04", "2024-05-05", TimePrecision.DAY),
    ("in two weeks", "2024-05-13", "2024-05-20", TimePrecision.WEEK),
    ("in 2 months", "2024-07-01", "2024-08-01", TimePrecision.MONTH),
    ("in twelve months", "2025-05-01", "2025-06-01", TimePrecision.MONTH),
    ("5 days ago", "2024-04-26", "2024-04-27", TimePrecision.DAY),
    ("two weeks ago", "2024-04-15", "2024-04-22", TimePrecision.WEEK),
    ("May 5", "2024-05-05", "2024-05-06", TimePrecision.DAY),
    ("5 May 2024", "2024-05-05", "2024-05-06", TimePrecision.DAY),
    ("May 5th, 2024", "2024-05-05", "2024-05-06", TimePrecision.DAY),
    ("the 3rd of June", "2024-06-03", "2024-06-04", TimePrecision.DAY),
    ("2024-05-05", "2024-05-05", "2024-05-06", TimePrecision.DAY),
    ("in June", "2024-06-01", "2024-07-01", TimePrecision.MONTH),
    ("in March", "2025-03-01", "2025-04-01", TimePrecision.MONTH),
    ("June 2025", "2025-06-01", "2025-07-01", TimePrecision.MONTH),
    ("in 2025", "2025-01-01", "2026-01-01", TimePrecision.YEAR),
]

CHINESE = [
    ("今天", "2024-05-01", "2024-05-02", TimePrecision.DAY),
    ("今晚", "2024-05-01", "2024-05-02", TimePrecision.DAY),
    ("明天", "2024-05-02", "2024-05-03", TimePrecision.DAY),
    ("后天", "2024-05-03", "2024-05-04", TimePrecision.DAY),
    ("昨天", "2024-04-30", "2024-05-01", TimePrecision.DAY),
    ("前天", "2024-04-29", "2024-04-30", TimePrecision.DAY),
    ("下周五", "2024-05-10", "2024-05-11", TimePrecision.DAY),
    ("下星期三", "2024-05-08", "2024-05-09", TimePrecision.DAY),
    ("上周日", "2024-04-28", "2024-04-29", TimePrecision.DAY),
    ("这周一", "2024-04-29", "2024-04-30", TimePrecision.DAY),
    ("本周六", "2024-05-04", "2024-05-05", TimePrecision.DAY),
    ("周五", "2024-05-03", "2024-05-04", TimePrecision.DAY),
    ("星期天", "2024-05-05", "2024-05-06", TimePrecision.DAY),
    ("下周", "2024-05-06", "2024-05-13", TimePrecision.WEEK),
    ("上周", "2024-04-22", "2024-04-29", TimePrecision.WEEK),
    ("本周", "2024-04-29", "2024-05-06", TimePrecision.WEEK),
    ("下个月", "2024-06-01", "2024-07-01", TimePrecision.MONTH),
    ("上个月", "2024-04-01", "2024-05-01", TimePrecision.MONTH),
    ("这个月", "2024-05-01", "2024-06-01", TimePrecision.MONTH),
    ("明年", "2025-01-01", "2026-01-01", TimePrecision.YEAR),
    ("去年", "2023-01-01", "2024-01-01", TimePrecision.YEAR),
    ("今年", "2024-01-01", "2025-01-01", TimePrecision.YEAR),
    ("3天后", "2024-05-04", "2024-05-05", TimePrecision.DAY),
    ("三天后", "2024-05-04", "2024-05-05", TimePrecision.DAY),
    ("两周后", "2024-05-13", "2024-05-20", TimePrecision.WEEK),
    ("三个月后", "2024-08-01", "2024-09-01", TimePrecision.MONTH),
    ("十天前", "2024-04-21", "2024-04-22", TimePrecision.DAY),
    ("5月5日", "2024-05-05", "2024-05-06", TimePrecision.DAY),
    ("5月5号", "2024-05-05", "2024-05-06", TimePrecision.DAY),
    ("十二月二十五日", "2024-12-25", "2024-12-26", TimePrecision.DAY),
    ("2024年5月5日", "2024-05-05", "2024-05-06", TimePrecision.DAY),
    ("这周末", "2024-05-04", "2024-05-06", TimePrecision.DAY),
]


@pytest.mark.parametrize(("text", "start", "end", "precision"), ENGLISH)
def test_english_expressions(
    text: str, start: str, end: str, precision: TimePrecision
) -> None:
    match = _resolve(f"I'll see you {text}, ok")
    assert match.text == text
    assert _local_days(match) == (start, end)
    assert match.span.precision is precision
    assert match.span.timezone == "UTC"


@pytest.mark.parametrize(("text", "start", "end", "precision"), CHINESE)
def test_chinese_expressions(
    text: str, start: str, end: str, precision: TimePrecision
) -> None:
    match = _resolve(f"我们{text}见")
    assert match.text == text
    assert _local_days(match) == (start, end)
    assert match.span.precision is precision


def test_match_offsets_point_into_the_text() -> None:
    text = "Let's meet next Friday at noon"
    match = _resolve(text)
    assert text[match.start : match.end] == match.text == "next Friday"


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("next Monday", "2024-05-06"),  # the next week starts tomorrow
        ("this Monday", "2024-05-06"),  # this week's Monday is past: the coming one
        ("last Monday", "2024-04-22"),
        ("next week", "2024-05-06"),
        ("下周一", "2024-05-06"),
        ("这周一", "2024-04-29"),  # Chinese weeks are explicit: this week's Monday
        ("上周一", "2024-04-22"),
        ("周一", "2024-05-06"),
    ],
)
def test_week_boundaries_from_a_sunday(text: str, start: str) -> None:
    assert _local_days(_resolve(text, SUNDAY))[0] == start


def test_tomorrow_across_dst_switch_is_23_hours() -> None:
    reference = dt.datetime(
        2024, 3, 30, 12, 0, tzinfo=dt.UTC
    )  # Berlin switches on the 31st
    span = _resolve("tomorrow", reference, "Europe/Berlin").span
    assert span.valid_from == dt.datetime(2024, 3, 30, 23, 0, tzinfo=dt.UTC)
    assert span.valid_until == dt.datetime(2024, 3, 31, 22, 0, tzinfo=dt.UTC)
    assert span.timezone == "Europe/Berlin"


def test_day_across_autumn_dst_switch_is_25_hours() -> None:
    reference = dt.datetime(2024, 10, 26, 12, 0, tzinfo=dt.UTC)
    span = _resolve("明天", reference, "Europe/Berlin").span
    assert span.valid_until is not None
    assert span.valid_from is not None
    assert span.valid_until - span.valid_from == dt.timedelta(hours=25)


def test_the_local_date_of_the_reference_decides_today() -> None:
    late_utc = dt.datetime(
        2024, 5, 5, 23, 30, tzinfo=dt.UTC
    )  # already the 6th in Shanghai
    assert _local_days(
        _resolve("today", late_utc, "Asia/Shanghai"), "Asia/Shanghai"
    ) == (
        "2024-05-06",
        "2024-05-07",
    )
    assert _local_days(_resolve("today", late_utc, "UTC")) == (
        "2024-05-05",
        "2024-05-06",
    )


def test_reference_not_wall_clock() -> None:
    earlier = dt.datetime(2019, 1, 10, 9, 0, tzinfo=dt.UTC)
    assert _local_days(_resolve("yesterday", earlier))[0] == "2019-01-09"


@pytest.mark.parametrize(
    ("text", "prefer", "start"),
    [
        ("on Friday", "future", "2024-05-03"),
        ("on Friday", "past", "2024-04-26"),
        ("周五", "past", "2024-04-26"),
        ("May 5", "future", "2024-05-05"),
        ("May 5", "past", "2023-05-05"),
        ("in June", "past", "2023-06-01"),
        ("5月5日", "past", "2023-05-05"),
        ("tomorrow", "past", "2024-05-02"),  # explicit relatives ignore the preference
    ],
)
def test_preferred_direction_resolves_ambiguous_positions(
    text: str, prefer: Direction, start: str
) -> None:
    assert _local_days(_resolve(text, prefer=prefer))[0] == start


@pytest.mark.parametrize(
    "text",
    [
        "Feb 30",
        "February 30, 2024",
        "2024-02-30",
        "2024-13-01",
        "2023年2月29日",
        "二月三十日",
        "13月5日",
        "May 35",
    ],
)
def test_invalid_dates_are_none(text: str) -> None:
    assert normalise_time(text, WEDNESDAY) is None


def test_leap_day_without_year_finds_the_next_leap_year() -> None:
    reference = dt.datetime(2023, 3, 1, tzinfo=dt.UTC)
    assert _local_days(_resolve("Feb 29", reference))[0] == "2024-02-29"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "I like turtles",
        "every Monday",
        "on Mondays",
        "每周一",
        "一周一次",
        "this may help",
        "我喜欢猫",
    ],
)
def test_no_time_expression_is_none(text: str) -> None:
    assert normalise_time(text, WEDNESDAY) is None


def test_chinese_together_is_not_monday() -> None:
    match = _resolve("下周一起吃饭")
    assert match.text == "下周"
    assert match.span.precision is TimePrecision.WEEK


def test_overlaps_resolve_leftmost_longest() -> None:
    assert [m.text for m in find_times("2024年5月5日和下周五", WEDNESDAY)] == [
        "2024年5月5日",
        "下周五",
    ]
    assert [m.text for m in find_times("next Friday or May 5th, 2024", WEDNESDAY)] == [
        "next Friday",
        "May 5th, 2024",
    ]


def test_confidence_reflects_how_explicit_the_expression_is() -> None:
    explicit = _resolve("2024-05-05").span.confidence
    relative = _resolve("tomorrow").span.confidence
    vague = _resolve("next month").span.confidence
    assert explicit == 1.0
    assert 0.85 <= relative < explicit
    assert vague <= 0.75
    assert _resolve("下个月").span.confidence == vague


def test_caller_errors_raise() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        normalise_time("tomorrow", dt.datetime(2024, 5, 1))  # noqa: DTZ001
    with pytest.raises(ValueError, match="timezone"):
        normalise_time("tomorrow", WEDNESDAY, "Mars/Olympus_Mons")


@settings(max_examples=300)
@given(text=st.text(max_size=80), zone=st.sampled_from(ZONES))
def test_odd_text_never_raises(text: str, zone: str) -> None:
    for match in find_times(text, WEDNESDAY, zone):
        assert text[match.start : match.end] == match.text
        assert match.span.valid_from is not None
        assert match.span.valid_until is not None
        assert match.span.valid_until > match.span.valid_from


FRAGMENTS = [fragment for fragment, *_ in ENGLISH + CHINESE] + [
    "Feb 30",
    "every Friday",
    "周末",
    " ",
    "，",
    "and",
    "I",
]


@settings(max_examples=200)
@given(
    parts=st.lists(st.sampled_from(FRAGMENTS), max_size=6),
    seconds=st.integers(min_value=0, max_value=20 * 365 * 86400),
    zone=st.sampled_from(ZONES),
)
def test_found_times_are_ordered_disjoint_and_verbatim(
    parts: list[str], seconds: int, zone: str
) -> None:
    text = " ".join(parts)
    reference = dt.datetime(2015, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    found = find_times(text, reference, zone)
    for earlier, later in itertools.pairwise(found):
        assert earlier.end <= later.start
    for match in found:
        assert text[match.start : match.end] == match.text
        assert match.span.timezone == zone


@settings(max_examples=200)
@given(
    seconds=st.integers(min_value=0, max_value=20 * 365 * 86400),
    zone=st.sampled_from(ZONES),
)
def test_tomorrow_is_the_next_local_day(seconds: int, zone: str) -> None:
    reference = dt.datetime(2015, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    span = _resolve("tomorrow", reference, zone).span
    local = ZoneInfo(zone)
    assert span.valid_from is not None
    start = span.valid_from.astimezone(local)
    assert start.date() == reference.astimezone(local).date() + dt.timedelta(days=1)
    assert (start.hour, start.minute) == (0, 0)


def _every_rule(
    text: str, reference: dt.datetime, zone: str
) -> list[tuple[int, int, str]]:
    """Oracle without trigger prefilters: run every rule, keep leftmost-longest."""
    anchor = _anchor(reference, zone, "future")
    rules = temporal_en.RULES + temporal_zh.RULES
    candidates = sorted(
        (match.start(), match.start() - match.end(), index, match)
        for index, rule in enumerate(rules)
        for match in rule.pattern.finditer(text)
    )
    found, covered = [], 0
    for start, _, index, match in candidates:
        if start < covered:
            continue
        covered = match.end()
        if temporal._resolve(rules[index], match, anchor) is not None:
            found.append((start, match.end(), match[0]))
    return found


@settings(max_examples=300)
@given(
    parts=st.lists(
        st.sampled_from(
            [*FRAGMENTS, "２０２４-０５-０５", "3", "x", "Mon", "今", "日本"]
        ),
        max_size=8,
    ),
    zone=st.sampled_from(ZONES),
)
def test_trigger_prefilters_never_hide_a_time(parts: list[str], zone: str) -> None:
    text = "".join(parts)
    found = [(m.start, m.end, m.text) for m in find_times(text, WEDNESDAY, zone)]
    assert found == _every_rule(text, WEDNESDAY, zone)
