"""Recurrence expressions ("every Monday at 9am", "每月15号") to :class:`Recurrence` values.

The counterpart of :mod:`cairn.ingestion.temporal` for times that repeat. A recurrence is
read from three parts of one sentence: the repeat pattern ("every weekday", "每周四"), an
optional time of day ("at 9am", "早上9点") and an optional end ("until June", "到年底").
Its window starts at the evidence's own timestamp (``reference``) in the speaker's zone.

Only the closed set of :class:`~cairn.domain.temporal.RecurrenceKind` is recognised. An
interval outside it ("every other week", "every two days", "隔周", "每两个月") makes the
whole sentence not recurring rather than a wrong recurrence: a claim saying "every week"
about a fortnightly meeting would answer "when is my next ..." wrongly every other week.
Expressions that only look alike ("every time I try", "每次", "每个人") are not
recurrences. Pure functions, no I/O; odd text never raises.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import attrs

from cairn.domain.temporal import Recurrence
from cairn.ingestion import temporal_recurrence_en, temporal_recurrence_zh

if TYPE_CHECKING:
    import datetime as dt

    from cairn.ingestion.temporal_recurrence_rules import Language

__all__ = ["RecurrenceMatch", "find_recurrence", "might_recur"]

_CJK = re.compile(r"[\u3400-\u9fff]")
_LANGUAGES: tuple[Language, ...] = (
    temporal_recurrence_en.LANGUAGE,
    temporal_recurrence_zh.LANGUAGE,
)


@attrs.frozen
class RecurrenceMatch:
    """A recurrence and where its repeat pattern was found: ``text == source[start:end]``."""

    recurrence: Recurrence
    start: int
    end: int
    text: str


_ENGLISH, _CHINESE = _LANGUAGES


def might_recur(text: str, start: int = 0, end: int | None = None) -> bool:
    """A cheap test: can ``text[start:end]`` hold a recurrence at all?

    Substring tests, not a regex: most sentences state no recurrence, this runs on every
    one of them (bench/extraction_score.py throughput), and a few ``in`` tests are several
    times faster than one case-insensitive regex search.
    """
    window = text[start:end].lower()
    if window.isascii():
        return _ENGLISH.might_recur(window)
    return _CHINESE.might_recur(window) or _ENGLISH.might_recur(window)


def find_recurrence(
    text: str,
    reference: dt.datetime,
    timezone: str = "UTC",
    *,
    start: int = 0,
    end: int | None = None,
    until_end: int | None = None,
) -> RecurrenceMatch | None:
    """The first recurrence stated in ``text[start:end]``, its window from ``reference``.

    The time of day is looked for anywhere in the window ("I have a standup at 9am every
    day"), the end up to ``until_end`` (default: the window's end), so a clause's
    "，到年底" may follow it. ``None`` when the window states no recurrence, or an
    interval outside the closed set.
    """
    stop = len(text) if end is None else min(end, len(text))
    if not might_recur(text, start, stop):
        return None
    if reference.utcoffset() is None:
        raise ValueError("the reference datetime must be timezone-aware")
    chinese = _CJK.search(text, start, stop) is not None
    languages = _LANGUAGES[::-1] if chinese else _LANGUAGES
    for language in languages:
        if language.unsupported.search(text, start, stop):
            return None
        found = language.repeat(text, start, stop)
        if found is None:
            continue
        match, repeat = found
        until_stop = stop if until_end is None else max(stop, min(until_end, len(text)))
        until = language.until(text, start, until_stop, reference, timezone)
        if until is not None and until <= reference:
            until = None  # an end already past at the time it was said is a misreading
        try:
            recurrence = Recurrence(
                kind=repeat.kind,
                starts=reference,
                timezone=timezone,
                weekdays=repeat.weekdays,
                day=repeat.day,
                month=repeat.month,
                time=language.time_of_day(text, start, stop),
                until=until,
            )
        except ValueError:
            return None  # "the 31st of every February": no such date
        return RecurrenceMatch(recurrence, match.start(), match.end(), match[0])
    return None
