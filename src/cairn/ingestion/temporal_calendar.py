"""Calendar arithmetic shared by the English and Chinese time rules.

Everything is resolved against an :class:`Anchor`: the evidence's own local date (never the
wall clock), its IANA zone and the preferred direction for expressions that name a calendar
position without saying which one ("on Friday", "May 5", "周五"). Bounds are local midnights
converted to UTC, so a day in a DST-switch zone is 23 or 25 hours long
(tests/ingestion/test_temporal.py::test_tomorrow_across_dst_switch_is_23_hours).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Literal
from zoneinfo import ZoneInfo

import attrs

from cairn.domain.temporal import TemporalSpan, TimePrecision

__all__ = [
    "CONFIDENCE_EXPLICIT",
    "CONFIDENCE_INFERRED_YEAR",
    "CONFIDENCE_RELATIVE_DAY",
    "CONFIDENCE_VAGUE",
    "CONFIDENCE_WEEKDAY",
    "Anchor",
    "Direction",
    "Resolver",
    "TimeRule",
    "chinese_number",
    "english_number",
]

Direction = Literal["future", "past"]

CONFIDENCE_EXPLICIT = 1.0  # "2024-05-05", "May 5th, 2024", "2024年5月5日"
CONFIDENCE_INFERRED_YEAR = 0.95  # "May 5": the year comes from the direction
CONFIDENCE_RELATIVE_DAY = 0.9  # today, tomorrow, in 3 days, 前天
CONFIDENCE_WEEKDAY = 0.8  # next Friday, on Monday: English week naming is ambiguous
CONFIDENCE_VAGUE = 0.7  # next month, this weekend, in two weeks

_ONE_DAY = dt.timedelta(days=1)


@attrs.frozen
class Anchor:
    """The resolution context: the reference's local date, zone and preferred direction."""

    today: dt.date
    zone: dt.tzinfo
    zone_name: str
    prefer: Direction

    @classmethod
    def at(cls, reference: dt.datetime, zone_name: str, prefer: Direction) -> Anchor:
        zone = ZoneInfo(zone_name)
        return cls(reference.astimezone(zone).date(), zone, zone_name, prefer)

    # -- spans ----------------------------------------------------------------------------

    def _midnight(self, day: dt.date) -> dt.datetime:
        return dt.datetime.combine(day, dt.time(), tzinfo=self.zone).astimezone(dt.UTC)

    def days(self, first: dt.date, count: int, confidence: float) -> TemporalSpan:
        """``count`` whole local days starting at ``first``, day precision."""
        return TemporalSpan(
            self._midnight(first),
            self._midnight(first + dt.timedelta(days=count)),
            TimePrecision.DAY,
            self.zone_name,
            confidence,
        )

    def day(self, day: dt.date, confidence: float) -> TemporalSpan:
        return self.days(day, 1, confidence)

    def week(self, any_day: dt.date, confidence: float) -> TemporalSpan:
        """The Monday-based week containing ``any_day``."""
        monday = any_day - dt.timedelta(days=any_day.weekday())
        return TemporalSpan(
            self._midnight(monday),
            self._midnight(monday + dt.timedelta(days=7)),
            TimePrecision.WEEK,
            self.zone_name,
            confidence,
        )

    def weekend(self, any_day: dt.date, confidence: float) -> TemporalSpan:
        """Saturday and Sunday of the Monday-based week containing ``any_day``."""
        monday = any_day - dt.timedelta(days=any_day.weekday())
        return self.days(monday + dt.timedelta(days=5), 2, confidence)

    def month(self, year: int, month: int, confidence: float) -> TemporalSpan:
        first = dt.date(year, month, 1)
        following = dt.date(year + month // 12, month % 12 + 1, 1)
        return TemporalSpan(
            self._midnight(first),
            self._midnight(following),
            TimePrecision.MONTH,
            self.zone_name,
            confidence,
        )

    def year(self, year: int, confidence: float) -> TemporalSpan:
        return TemporalSpan(
            self._midnight(dt.date(year, 1, 1)),
            self._midnight(dt.date(year + 1, 1, 1)),
            TimePrecision.YEAR,
            self.zone_name,
            confidence,
        )

    # -- calendar positions ---------------------------------------------------------------

    def offset_days(self, count: int) -> dt.date:
        return self.today + dt.timedelta(days=count)

    def offset_months(self, count: int) -> tuple[int, int]:
        """(year, month) ``count`` calendar months from today's month."""
        index = self.today.year * 12 + self.today.month - 1 + count
        return index // 12, index % 12 + 1

    def weekday_in_week(self, week_offset: int, weekday: int) -> dt.date:
        """Weekday ``weekday`` (0 = Monday) of the Monday-based week ``week_offset`` away."""
        monday = self.today - dt.timedelta(days=self.today.weekday())
        return monday + dt.timedelta(days=7 * week_offset + weekday)

    def nearest_weekday(self, weekday: int) -> dt.date:
        """The next (or, preferring the past, the last) such weekday, today excluded."""
        if self.prefer == "past":
            back = (self.today.weekday() - weekday) % 7 or 7
            return self.today - dt.timedelta(days=back)
        ahead = (weekday - self.today.weekday()) % 7 or 7
        return self.today + dt.timedelta(days=ahead)

    def nearest_weekend(self) -> dt.date:
        """A day of the weekend meant by a bare "the weekend" / "周末"."""
        if self.prefer == "past" and self.today.weekday() < 5:
            return self.today - dt.timedelta(days=7)
        return self.today

    def nearest_date(self, month: int, day: int) -> dt.date | None:
        """``month``/``day`` in the nearest year in the preferred direction (today counts).

        A date that exists in no year nearby (February 30) is ``None``.
        """
        step = -1 if self.prefer == "past" else 1
        for shift in range(9):  # 8 years always includes a leap year
            try:
                candidate = dt.date(self.today.year + step * shift, month, day)
            except ValueError:
                if not 1 <= month <= 12 or not 1 <= day <= 31:
                    return None
                continue
            if (step > 0 and candidate >= self.today) or (
                step < 0 and candidate <= self.today
            ):
                return candidate
        return None

    def nearest_month(self, month: int) -> int:
        """The year of the nearest such month in the preferred direction (this month counts)."""
        if self.prefer == "past":
            return self.today.year if month <= self.today.month else self.today.year - 1
        return self.today.year if month >= self.today.month else self.today.year + 1


Resolver = Callable[[re.Match[str], Anchor], TemporalSpan | None]


@attrs.frozen
class TimeRule:
    """One compiled time pattern and its resolver (``None`` = not a valid time).

    ``trigger`` holds substrings of which the ASCII-lower-cased text must contain one for
    ``pattern`` to have any chance; rules sharing a trigger are skipped together when none
    is present (a substring test is far cheaper than a case-insensitive regex).
    """

    pattern: re.Pattern[str]
    resolve: Resolver
    trigger: tuple[str, ...] = ()


# -- numbers ----------------------------------------------------------------------------------

_EN_UNITS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip


def english_number(word: str) -> int | None:
    """Digits or a number word up to twelve ("a"/"an" count as one)."""
    word = word.strip().lower()
    if word.isdigit():
        return int(word)
    return _EN_UNITS.get(word)


_CN_DIGITS = {
    "〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4,
    "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
}  # fmt: skip


def chinese_number(text: str) -> int | None:
    """Arabic digits, a Chinese numeral below 100, or digit-by-digit years (二〇二四)."""
    if not text:
        return None
    if text.isdigit():
        return int(text)
    if "十" not in text:
        if not all(char in _CN_DIGITS for char in text):
            return None
        value = 0
        for char in text:
            value = value * 10 + _CN_DIGITS[char]
        return value
    tens_text, _, units_text = text.partition("十")
    if len(tens_text) > 1 or len(units_text) > 1:
        return None
    tens = _CN_DIGITS.get(tens_text, -1) if tens_text else 1
    units = _CN_DIGITS.get(units_text, -1) if units_text else 0
    if tens < 1 or units < 0:
        return None
    return tens * 10 + units
