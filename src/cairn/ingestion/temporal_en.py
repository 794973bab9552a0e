"""English time expressions for :mod:`cairn.ingestion.temporal`.

Weeks are Monday-based. "next/last <weekday>" name a day of the next or previous week;
"this <weekday>" the day of the current week when that agrees with the preferred
direction, else the nearest one; "on <weekday>" and a bare weekday are the nearest one in
the preferred direction, today excluded. Recurring phrasings ("every Monday", "on
Mondays") are not single times: :mod:`cairn.ingestion.temporal_recurrence` reads them.
"May" without a day number must be capitalised, so "this may help" is not a month.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING

from cairn.ingestion.temporal_calendar import (
    CONFIDENCE_EXPLICIT,
    CONFIDENCE_INFERRED_YEAR,
    CONFIDENCE_RELATIVE_DAY,
    CONFIDENCE_VAGUE,
    CONFIDENCE_WEEKDAY,
    Anchor,
    Resolver,
    TimeRule,
    english_number,
)

if TYPE_CHECKING:
    from cairn.domain.temporal import TemporalSpan

__all__ = ["MONTH_NUMBERS", "MONTH_WITH_DAY", "RULES"]

_CONFIDENCE_ON_WEEKDAY = 0.85
_CONFIDENCE_NAMED_MONTH = 0.9

_WEEKDAYS = (
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
)
_WEEKDAY = r"(?P<weekday>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
_NOT_RECURRING = r"(?<!every )(?<!each )"

MONTH_NUMBERS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
# Next to a day number any spelling is a month; standing alone only a capitalised full name.
MONTH_WITH_DAY = (
    r"(?P<month>january|february|march|april|may|june|july|august|september|october"
    r"|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\b\.?"
)
_MONTH_ALONE = (
    r"(?P<month>january|february|march|april|(?-i:May)|june|july|august|september"
    r"|october|november|december)\b"
)
_DAY_NUMBER = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?\b(?![:.]\d)"
_YEAR = r"(?P<year>(?:19|20|21)\d\d)\b"
_COUNT = (
    r"(?P<count>\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven"
    r"|twelve)"
)
_UNIT = r"(?P<unit>day|week|month|year)s?\b"


def _fixed_day(offset: int) -> Resolver:
    def resolve(_: re.Match[str], anchor: Anchor) -> TemporalSpan:
        return anchor.day(anchor.offset_days(offset), CONFIDENCE_RELATIVE_DAY)

    return resolve


def _qualified_weekday(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    weekday = _WEEKDAYS.index(match["weekday"].lower())
    qualifier = " ".join(match["q"].lower().split())
    if qualifier in {"coming", "this coming"}:
        future = Anchor(anchor.today, anchor.zone, anchor.zone_name, "future")
        return anchor.day(future.nearest_weekday(weekday), CONFIDENCE_WEEKDAY)
    if qualifier == "on":
        return anchor.day(anchor.nearest_weekday(weekday), _CONFIDENCE_ON_WEEKDAY)
    if qualifier == "next":
        return anchor.day(anchor.weekday_in_week(1, weekday), CONFIDENCE_WEEKDAY)
    if qualifier in {"last", "past", "previous"}:
        return anchor.day(anchor.weekday_in_week(-1, weekday), CONFIDENCE_WEEKDAY)
    # "this Friday": the current week's Friday, unless that contradicts the tense.
    day = anchor.weekday_in_week(0, weekday)
    if (anchor.prefer == "future" and day < anchor.today) or (
        anchor.prefer == "past" and day > anchor.today
    ):
        day = anchor.nearest_weekday(weekday)
    return anchor.day(day, CONFIDENCE_WEEKDAY)


def _bare_weekday(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    weekday = _WEEKDAYS.index(match["weekday"].lower())
    return anchor.day(anchor.nearest_weekday(weekday), CONFIDENCE_WEEKDAY)


def _offset_for(qualifier: str) -> int:
    qualifier = qualifier.lower()
    if qualifier == "last":
        return -1
    return 1 if qualifier in {"next", "coming"} else 0


def _relative_period(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    unit = match["unit"].lower()
    qualifier = match["q"].split()[-1]
    # "this coming weekend" is this week's; "this coming week" is the next one.
    offset = (
        0 if unit == "weekend" and qualifier == "coming" else _offset_for(qualifier)
    )
    if unit == "week":
        return anchor.week(anchor.offset_days(7 * offset), CONFIDENCE_VAGUE)
    if unit == "weekend":
        return anchor.weekend(anchor.offset_days(7 * offset), CONFIDENCE_VAGUE)
    if unit == "month":
        return anchor.month(*anchor.offset_months(offset), CONFIDENCE_VAGUE)
    return anchor.year(anchor.today.year + offset, CONFIDENCE_VAGUE)


def _the_weekend(_: re.Match[str], anchor: Anchor) -> TemporalSpan:
    return anchor.weekend(anchor.nearest_weekend(), CONFIDENCE_VAGUE)


def _counted(sign: int) -> Resolver:
    def resolve(match: re.Match[str], anchor: Anchor) -> TemporalSpan | None:
        count = english_number(match["count"])
        if count is None:
            return None
        count *= sign
        unit = match["unit"].lower()
        if unit == "day":
            return anchor.day(anchor.offset_days(count), CONFIDENCE_RELATIVE_DAY)
        if unit == "week":
            return anchor.week(anchor.offset_days(7 * count), CONFIDENCE_VAGUE)
        if unit == "month":
            return anchor.month(*anchor.offset_months(count), CONFIDENCE_VAGUE)
        return anchor.year(anchor.today.year + count, CONFIDENCE_VAGUE)

    return resolve


def _iso_date(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    day = dt.date(int(match["year"]), int(match["month"]), int(match["day"]))
    return anchor.day(day, CONFIDENCE_EXPLICIT)


def _named_date(match: re.Match[str], anchor: Anchor) -> TemporalSpan | None:
    month = MONTH_NUMBERS[match["month"].lower()]
    day_number = int(match["day"])
    if match["year"]:
        day = dt.date(int(match["year"]), month, day_number)
        return anchor.day(day, CONFIDENCE_EXPLICIT)
    nearest = anchor.nearest_date(month, day_number)
    return None if nearest is None else anchor.day(nearest, CONFIDENCE_INFERRED_YEAR)


def _month_year(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    return anchor.month(
        int(match["year"]), MONTH_NUMBERS[match["month"].lower()], CONFIDENCE_EXPLICIT
    )


def _named_month(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    month = MONTH_NUMBERS[match["month"].lower()]
    qualifier = match["q"].lower()
    if qualifier == "this":
        return anchor.month(anchor.today.year, month, CONFIDENCE_WEEKDAY)
    if qualifier in {"next", "last"}:
        year = anchor.today.year
        if qualifier == "next" and month <= anchor.today.month:
            year += 1
        elif qualifier == "last" and month >= anchor.today.month:
            year -= 1
        return anchor.month(year, month, CONFIDENCE_WEEKDAY)
    return anchor.month(anchor.nearest_month(month), month, _CONFIDENCE_NAMED_MONTH)


def _in_year(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    return anchor.year(int(match["year"]), CONFIDENCE_EXPLICIT)


def _rule(pattern: str, resolve: Resolver, trigger: tuple[str, ...]) -> TimeRule:
    return TimeRule(re.compile(pattern, re.IGNORECASE), resolve, trigger)


# Trigger substrings (see TimeRule): each rule's pattern cannot match without one of them.
_TOMORROW = ("tomorrow", "tmr")
_YESTERDAY = ("yesterday", "night")
_TODAY = ("today", "tonight", "morning", "afternoon", "evening")
_WEEKDAYS_NAMED = tuple(_WEEKDAYS)
_PERIODS = ("week", "month", "year")
_UNITS = ("day", "week", "month", "year")
_DIGITS = tuple("0123456789０１２３４５６７８９")
_MONTH_NAMES = (
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
)  # fmt: skip


RULES: tuple[TimeRule, ...] = (
    _rule(r"\b(?:the\s+)?day\s+after\s+tomorrow\b", _fixed_day(2), _TOMORROW),
    _rule(r"\b(?:the\s+)?day\s+before\s+yesterday\b", _fixed_day(-2), _YESTERDAY),
    _rule(
        r"\b(?:tomorrow|tmrw?)(?:\s+(?:morning|afternoon|evening|night))?\b",
        _fixed_day(1),
        _TOMORROW,
    ),
    _rule(
        r"\b(?:yesterday(?:\s+(?:morning|afternoon|evening))?|last\s+night)\b",
        _fixed_day(-1),
        _YESTERDAY,
    ),
    _rule(
        r"\b(?:(?:later|earlier)\s+today|today|tonight"
        r"|this\s+(?:morning|afternoon|evening))\b",
        _fixed_day(0),
        _TODAY,
    ),
    _rule(
        r"\b(?P<q>this\s+coming|coming|this|next|last|past|previous|on)\s+" + _WEEKDAY,
        _qualified_weekday,
        _WEEKDAYS_NAMED,
    ),
    _rule(_NOT_RECURRING + r"\b" + _WEEKDAY, _bare_weekday, _WEEKDAYS_NAMED),
    _rule(
        r"\b(?P<q>this\s+coming|this|next|last)\s+(?P<unit>week|month|year|weekend)\b",
        _relative_period,
        _PERIODS,
    ),
    _rule(r"\b(?:over|on|at|during)\s+the\s+weekend\b", _the_weekend, _PERIODS),
    _rule(
        r"\bin\s+(?:about\s+|around\s+|another\s+)?" + _COUNT + r"\s+" + _UNIT,
        _counted(1),
        _UNITS,
    ),
    _rule(
        r"\b" + _COUNT + r"\s+" + _UNIT + r"\s+from\s+(?:now|today)\b",
        _counted(1),
        _UNITS,
    ),
    _rule(r"\b" + _COUNT + r"\s+" + _UNIT + r"\s+ago\b", _counted(-1), _UNITS),
    _rule(
        r"(?<![\d/-])\b(?P<year>\d{4})(?P<sep>[-/])(?P<month>\d{1,2})(?P=sep)"
        r"(?P<day>\d{1,2})\b(?![/-]\d)",
        _iso_date,
        _DIGITS,
    ),
    _rule(
        r"\b" + MONTH_WITH_DAY + r"\s*" + _DAY_NUMBER + r"(?:,?\s+" + _YEAR + r")?",
        _named_date,
        _DIGITS,
    ),
    _rule(
        r"(?<![\d/.-])\b(?:the\s+)?"
        + _DAY_NUMBER
        + r"\s+(?:of\s+)?"
        + MONTH_WITH_DAY
        + r"(?:,?\s+"
        + _YEAR
        + r")?",
        _named_date,
        _DIGITS,
    ),
    _rule(r"\b(?:in\s+)?" + _MONTH_ALONE + r",?\s+" + _YEAR, _month_year, _DIGITS),
    _rule(
        r"\b(?P<q>in|during|this|next|last|early|late|mid)(?:\s+|-)"
        + _MONTH_ALONE
        + r"(?!\s*\d)",
        _named_month,
        _MONTH_NAMES,
    ),
    _rule(r"\b(?:in|during)\s+" + _YEAR, _in_year, _DIGITS),
)
