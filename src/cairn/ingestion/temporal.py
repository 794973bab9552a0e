"""Temporal normaliser: time expressions in English and Chinese to half-open UTC spans.

Pure functions, no I/O and no wall clock: every expression is resolved against the
*evidence's own* timestamp (``reference``) read in the caller's IANA ``timezone``, so
"tomorrow" said at 23:30 UTC by someone in Shanghai is the Shanghai day after
(tests/ingestion/test_temporal.py). Results are :class:`~cairn.domain.temporal.TemporalSpan`
values ``[valid_from, valid_until)`` in UTC with the stated precision:

- day: ``[00:00 local, next 00:00 local)`` (23 or 25 hours across a DST switch);
- week: Monday-based; month and year: calendar month and year in the local zone.

Confidence is how sure the parse is: 1.0 for explicit dates, 0.95 when the year of a
"May 5" is inferred, 0.9 for relative days ("tomorrow", "in 3 days", "前天"), 0.8-0.9 for
weekdays and named months, 0.7 for vague periods ("next month", "this weekend", "下周").

Expressions that name a calendar position without saying which one ("on Friday",
"May 5", "in June", "周五") take the nearest one in the ``prefer`` direction: the
extractor passes ``"past"`` for past-tense events and ``"future"`` (the default) otherwise.

Odd text never raises: no expression, or only invalid ones ("Feb 30", "2024-13-01"),
gives ``None`` / an empty list. A naive ``reference``, an unknown ``timezone`` or a
``prefer`` other than future/past is a caller error and raises ``ValueError``.

The public functions are the stable seam: the rules behind them (``temporal_en``,
``temporal_zh``) may later be swapped for a maintained date parser.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfoNotFoundError

import attrs

from cairn.domain.temporal import TemporalSpan
from cairn.ingestion import temporal_en, temporal_zh
from cairn.ingestion.temporal_calendar import Anchor, Direction, TimeRule

if TYPE_CHECKING:
    import datetime as dt

__all__ = ["Direction", "TemporalMatch", "find_times", "normalise_time"]

# ASCII-only lower-casing keeps every offset (str.lower can change lengths).
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _by_trigger(
    rules: tuple[TimeRule, ...],
) -> tuple[tuple[tuple[str, ...], tuple[tuple[int, TimeRule], ...]], ...]:
    """Rules grouped by trigger, each with its index for tie-breaking between overlaps."""
    groups: dict[tuple[str, ...], list[tuple[int, TimeRule]]] = {}
    for index, rule in enumerate(rules):
        groups.setdefault(rule.trigger, []).append((index, rule))
    return tuple((trigger, tuple(members)) for trigger, members in groups.items())


_GROUPS = _by_trigger(temporal_en.RULES + temporal_zh.RULES)
# Chinese rules cannot match pure-ASCII text, English rules need an ASCII letter or digit.
_LATIN_GROUPS = _by_trigger(temporal_en.RULES)
_CJK_GROUPS = _by_trigger(temporal_zh.RULES)
_LATIN = re.compile(r"[a-z0-9０-９]")


@attrs.frozen
class TemporalMatch:
    """A resolved time expression and where it was found: ``text == source[start:end]``."""

    span: TemporalSpan
    start: int
    end: int
    text: str


@functools.lru_cache(maxsize=256)
def _anchor(reference: dt.datetime, timezone: str, prefer: str) -> Anchor:
    if reference.utcoffset() is None:
        raise ValueError("the reference datetime must be timezone-aware")
    if prefer not in {"future", "past"}:
        raise ValueError(f"prefer must be 'future' or 'past', not {prefer!r}")
    try:
        return Anchor.at(reference, timezone, "past" if prefer == "past" else "future")
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ValueError(f"unknown IANA timezone {timezone!r}") from error


def _resolve(
    rule: TimeRule, match: re.Match[str], anchor: Anchor
) -> TemporalSpan | None:
    try:
        return rule.resolve(match, anchor)
    except (ValueError, OverflowError):
        # Impossible calendar values (Feb 30, month 13, year 0) are not times.
        return None


def find_times(
    text: str,
    reference: dt.datetime,
    timezone: str = "UTC",
    *,
    prefer: Direction = "future",
    start: int = 0,
    end: int | None = None,
) -> list[TemporalMatch]:
    """Every time expression in ``text[start:end]``, left to right, non-overlapping.

    Where expressions overlap the one starting first wins, then the longest, so
    "2024年5月5日" is one date and "next Friday" is not also "Friday". An invalid
    expression still claims its characters but is left out of the result. Offsets are
    into the whole ``text``.
    """
    anchor = _anchor(reference, timezone, prefer)
    stop = len(text) if end is None else min(end, len(text))
    # Rules run only where their trigger words occur: most clauses hold no time at all,
    # and this is the extractor's hottest path (bench/extraction_score.py throughput).
    window = text[start:stop].translate(_ASCII_LOWER)
    if window.isascii():
        groups = _LATIN_GROUPS
    else:
        groups = _GROUPS if _LATIN.search(window) else _CJK_GROUPS
    candidates: list[tuple[int, int, int, re.Match[str], TimeRule]] = []
    for trigger, members in groups:
        if not any(word in window for word in trigger):
            continue
        candidates.extend(
            (match.start(), match.start() - match.end(), index, match, rule)
            for index, rule in members
            for match in rule.pattern.finditer(text, start, stop)
            if match.end() > match.start()
        )
    candidates.sort(key=lambda candidate: candidate[:3])
    found: list[TemporalMatch] = []
    covered_until = start
    for match_start, _, _, match, rule in candidates:
        if match_start < covered_until:
            continue
        covered_until = match.end()
        span = _resolve(rule, match, anchor)
        if span is not None:
            found.append(TemporalMatch(span, match_start, match.end(), match[0]))
    return found


def normalise_time(
    text: str,
    reference: dt.datetime,
    timezone: str = "UTC",
    *,
    prefer: Direction = "future",
) -> TemporalMatch | None:
    """The first valid time expression in ``text``, resolved against ``reference``.

    ``reference`` is the evidence's timestamp (tz-aware), not the current time;
    ``timezone`` is the IANA zone the speaker's days are counted in. Returns ``None`` when
    the text holds no valid time expression.
    """
    found = find_times(text, reference, timezone, prefer=prefer)
    return found[0] if found else None
