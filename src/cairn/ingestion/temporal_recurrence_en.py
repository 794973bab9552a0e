"""English recurrence expressions for :mod:`cairn.ingestion.temporal_recurrence`.

Repeat patterns: "every day", "daily", "each morning", "every night"; "every weekday",
"on weekdays"; "every weekend", "on weekends"; "every Monday", "each Tuesday and
Thursday", "on Mondays", "Mondays"; "the 15th of every month", "every month on the 15th",
"monthly on the 15th"; "every year on May 3", "every May 3rd", "on May 3 every year".
A time of day is "at 9am", "9:30 pm", "at 18:00", "at noon", "at midnight" (a bare "at 9"
is ambiguous and ignored). The end is "until/till <time>" (a named day is included,
"until June" stops when June begins), "through <time>" (included) or "until the end of
the year/month".
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from cairn.domain.temporal import RecurrenceKind
from cairn.ingestion.temporal_calendar import Anchor
from cairn.ingestion.temporal_en import MONTH_NUMBERS, MONTH_WITH_DAY
from cairn.ingestion.temporal_recurrence_rules import (
    WEEKEND,
    WORKWEEK,
    Language,
    Repeat,
    RepeatRule,
    clock_time,
    end_of,
    first_repeat,
    inclusive_by_default,
    time_after,
)

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Callable

__all__ = ["LANGUAGE"]

_F = re.IGNORECASE
_WEEKDAYS = ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")
_DAY_NAME = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_DAY_LIST = rf"(?P<days>{_DAY_NAME}s?(?:\s*(?:,|and|&|or|,\s*and)\s*(?:on\s+)?{_DAY_NAME}s?)*)\b"
_PLURAL_LIST = (
    rf"(?P<days>{_DAY_NAME}s(?:\s*(?:,|and|&|or|,\s*and)\s*(?:on\s+)?{_DAY_NAME}s)*)\b"
)
_EVERY = r"\b(?:every|each)\s+(?:single\s+)?"
_ORDINAL = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?\b"
# Both orders, "May 3" and "the 3rd of May" (a pattern can name a group only once).
_MONTH_DATES = (
    rf"{MONTH_WITH_DAY}\s*{_ORDINAL}",
    rf"(?:the\s+)?{_ORDINAL}\s+(?:of\s+)?{MONTH_WITH_DAY}",
)


def _weekdays(match: re.Match[str]) -> Repeat:
    found = re.findall(_DAY_NAME, match["days"], _F)
    days = sorted({_WEEKDAYS.index(name.lower().removesuffix("day")) for name in found})
    return Repeat(RecurrenceKind.WEEKLY, weekdays=tuple(days))


def _always(repeat: Repeat) -> Callable[[re.Match[str]], Repeat]:
    def build(_: re.Match[str]) -> Repeat:
        return repeat

    return build


def _monthly(match: re.Match[str]) -> Repeat:
    return Repeat(RecurrenceKind.MONTHLY, day=int(match["day"]))


def _yearly(match: re.Match[str]) -> Repeat:
    month = MONTH_NUMBERS[match["month"].lower().rstrip(".")]
    return Repeat(RecurrenceKind.YEARLY, day=int(match["day"]), month=month)


def _rule(pattern: str, build: Callable[[re.Match[str]], Repeat | None]) -> RepeatRule:
    return RepeatRule(re.compile(pattern, _F), build)


_DAILY = Repeat(RecurrenceKind.DAILY)
_RULES = (
    _rule(
        _EVERY + r"(?:day|morning|evening|night|afternoon)\b|\bdaily\b",
        _always(_DAILY),
    ),
    _rule(
        _EVERY + r"(?:weekday|workday|working\s+day)\b|\bon\s+weekdays\b",
        _always(Repeat(RecurrenceKind.WEEKLY, weekdays=WORKWEEK)),
    ),
    _rule(
        _EVERY + r"weekend\b|\b(?:on|at|over)\s+(?:the\s+)?weekends\b",
        _always(Repeat(RecurrenceKind.WEEKLY, weekdays=WEEKEND)),
    ),
    _rule(_EVERY + _DAY_LIST, _weekdays),
    _rule(r"\b(?:on\s+)?" + _PLURAL_LIST, _weekdays),
    _rule(
        r"\b(?:on\s+)?the\s+"
        + _ORDINAL
        + r"\s+(?:day\s+)?(?:of\s+)?(?:every|each)\s+month\b",
        _monthly,
    ),
    _rule(
        r"\b(?:(?:every|each)\s+month|monthly)\s*,?\s+on\s+the\s+" + _ORDINAL,
        _monthly,
    ),
    *(
        _rule(pattern, _yearly)
        for date in _MONTH_DATES
        for pattern in (
            r"\b(?:(?:every|each)\s+year|yearly|annually)\s*,?\s+on\s+" + date,
            _EVERY + date,
            r"\b(?:on\s+)?" + date + r"\s+(?:every|each)\s+year\b",
        )
    ),
)

_UNSUPPORTED = re.compile(
    r"\bevery\s+(?:other|second|third|fourth|few|couple\s+of|several|\d+|two|three|four"
    r"|five|six|seven|eight|nine|ten|twelve)\s+(?:\w+\s+)?(?:days?|weeks?|months?|years?"
    r"|mornings?|nights?|evenings?|" + _DAY_NAME + r"s?)\b"
    r"|\bbi-?(?:weekly|monthly)\b|\bfortnightly\b|\bevery\s+fortnight\b",
    _F,
)
_CLOCK = re.compile(
    r"\b(?:at\s+)?(?P<h>[01]?\d|2[0-3])(?::(?P<m>[0-5]\d))?\s*"
    r"(?P<ap>a\.m\.|p\.m\.|am\b|pm\b)"
    r"|\bat\s+(?P<h24>[01]?\d|2[0-3]):(?P<m24>[0-5]\d)\b"
    r"|\bat\s+(?P<word>noon|midday|midnight)\b",
    _F,
)
_MONTH_ALONE = re.compile(
    r"(?P<month>january|february|march|april|may|june|july|august|september|october"
    r"|november|december)\b(?!\s*\d)",
    _F,
)
_UNTIL = re.compile(
    r"\b(?:(?P<until>until|till|til|up\s+to)|(?P<through>through|thru))\s+"
    r"(?:(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?(?P<period>year|month)\b)?",
    _F,
)


def _repeat(text: str, start: int, end: int) -> tuple[re.Match[str], Repeat] | None:
    return first_repeat(_RULES, text, start, end)


def _time_of_day(text: str, start: int, end: int) -> dt.time | None:
    match = _CLOCK.search(text, start, end)
    if match is None:
        return None
    if match["word"]:
        return clock_time(0 if match["word"].lower() == "midnight" else 12, 0)
    if match["h24"]:
        return clock_time(int(match["h24"]), int(match["m24"]))
    hour, minute = int(match["h"]), int(match["m"] or 0)
    if not 1 <= hour <= 12:
        return None  # "13 pm"
    afternoon = match["ap"].lower().startswith("p")
    return clock_time(hour % 12 + (12 if afternoon else 0), minute)


def _until(
    text: str, start: int, end: int, reference: dt.datetime, timezone: str
) -> dt.datetime | None:
    for match in _UNTIL.finditer(text, start, end):
        if match["period"]:
            anchor = Anchor.at(reference, timezone, "future")
            if match["period"].lower() == "year":
                span = anchor.year(anchor.today.year, 1.0)
            else:
                span = anchor.month(anchor.today.year, anchor.today.month, 1.0)
            return span.valid_until
        stated = time_after(text, match.end(), end, reference, timezone)
        month = _MONTH_ALONE.match(text, match.end(), end)
        if stated is None and month is not None:
            # "until June": the next June (the normaliser wants "in June" for a month).
            anchor = Anchor.at(reference, timezone, "future")
            number = MONTH_NUMBERS[month["month"].lower()]
            stated = anchor.month(anchor.nearest_month(number), number, 1.0)
        if stated is not None:
            inclusive = bool(match["through"]) or inclusive_by_default(stated)
            return end_of(stated, inclusive=inclusive)
    return None


def _might_recur(window: str) -> bool:
    # Spelled out rather than a loop over a tuple: this runs on every English sentence.
    # "days" stands for "weekdays" and "mondays" ... "sundays"; "every other week" and
    # "biweekly on Mondays" hold "every" or "days" too, so the unsupported check runs.
    return (
        "every" in window
        or "each" in window
        or "days" in window
        or "daily" in window
        or "weekends" in window
        or "monthly" in window
        or "yearly" in window
        or "annually" in window
    )


LANGUAGE = Language(
    might_recur=_might_recur,
    unsupported=_UNSUPPORTED,
    repeat=_repeat,
    time_of_day=_time_of_day,
    until=_until,
)
