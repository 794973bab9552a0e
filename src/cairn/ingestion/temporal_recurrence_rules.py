"""What the English and Chinese recurrence rules share: a repeat pattern's calendar part,
the rule shape, and the per-language bundle :mod:`cairn.ingestion.temporal_recurrence`
reads a sentence with."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence

import attrs

from cairn.domain.temporal import RecurrenceKind, TemporalSpan, TimePrecision
from cairn.ingestion.temporal import find_times

__all__ = [
    "WEEKEND",
    "WORKWEEK",
    "Language",
    "Repeat",
    "RepeatRule",
    "clock_time",
    "end_of",
    "first_repeat",
    "inclusive_by_default",
    "time_after",
]

WORKWEEK = (0, 1, 2, 3, 4)
WEEKEND = (5, 6)


@attrs.frozen
class Repeat:
    """The calendar part of a recurrence (its kind and which days), without its window."""

    kind: RecurrenceKind
    weekdays: tuple[int, ...] = ()
    day: int | None = None
    month: int | None = None


@attrs.frozen
class RepeatRule:
    """A repeat pattern and what it means (``None``: not a recurrence after all)."""

    pattern: re.Pattern[str]
    build: Callable[[re.Match[str]], Repeat | None]


def first_repeat(
    rules: Sequence[RepeatRule], text: str, start: int, end: int
) -> tuple[re.Match[str], Repeat] | None:
    """The repeat pattern starting first in ``text[start:end]``, then the longest."""
    best: tuple[re.Match[str], Repeat] | None = None
    for rule in rules:
        for match in rule.pattern.finditer(text, start, end):
            if best is not None and (
                match.start() > best[0].start()
                or (match.start() == best[0].start() and match.end() <= best[0].end())
            ):
                break
            repeat = rule.build(match)
            if repeat is not None:
                best = (match, repeat)
                break
    return best


def clock_time(hour: int, minute: int) -> dt.time | None:
    """A valid local time of day, else ``None`` ("25:00" is no time)."""
    if 0 <= hour <= 23 and 0 <= minute <= 59:
        return dt.time(hour, minute)
    return None


def time_after(
    text: str, position: int, end: int, reference: dt.datetime, timezone: str
) -> TemporalSpan | None:
    """The time expression starting at ``position`` ("until *June*"), if there is one."""
    for match in find_times(text, reference, timezone, start=position, end=end):
        return match.span if match.start == position else None
    return None


def end_of(span: TemporalSpan, *, inclusive: bool) -> dt.datetime | None:
    """Where "until <span>" stops: after it (inclusive) or when it begins."""
    return span.valid_until if inclusive else span.valid_from


def inclusive_by_default(span: TemporalSpan) -> bool:
    """ "until May 5" includes the day; "until June" stops when June begins."""
    return span.precision in {TimePrecision.DAY, TimePrecision.MINUTE}


@attrs.frozen
class Language:
    """One language's recurrence rules (see :func:`find_recurrence`)."""

    # Whether a lower-cased window holds a word it could start with: a cheap test, run on
    # every sentence before any rule.
    might_recur: Callable[[str], bool]
    # An interval outside the closed set: the sentence is not recurring at all.
    unsupported: re.Pattern[str]
    repeat: Callable[[str, int, int], tuple[re.Match[str], Repeat] | None]
    time_of_day: Callable[[str, int, int], dt.time | None]
    until: Callable[[str, int, int, dt.datetime, str], dt.datetime | None]
