"""One question, analysed: names, kinship references, time anchor, shape, tense.

The names are candidates only (every run of one to three words, and for Chinese every
substring of two to six characters); which of them are entities the agent knows is
answered by its alias table in the recall's snapshot (cairn.store.entities.resolve_names).
"""

from __future__ import annotations

import datetime as dt
import re

import attrs

from cairn.entities.extract import USER, kin_key
from cairn.entities.lexicon import KIN_EN, KIN_ZH
from cairn.entities.vocabulary import fold
from cairn.ingestion.temporal import find_times
from cairn.query.expansion import expansion_terms
from cairn.query.shape import (
    QuestionShape,
    Tense,
    asked_task_status,
    shape_of,
    tense_of,
)

__all__ = ["QueryAnalysis", "TimeAnchor", "analyse"]

_LATIN_WORD = re.compile(r"[a-z0-9][a-z0-9'’.-]*")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
_KIN_EN_WORDS = "|".join(sorted(map(re.escape, KIN_EN), key=len, reverse=True))
_THEIR_KIN = re.compile(rf"\b([a-z][a-z'’.-]*?)(?:'s|’s)\s+({_KIN_EN_WORDS})\b")
_MY_KIN = re.compile(rf"\bmy\s+({_KIN_EN_WORDS})\b")
_KIN_ZH_WORDS = "|".join(sorted(map(re.escape, KIN_ZH), key=len, reverse=True))
_ZH_THEIR_KIN = re.compile(rf"([\u3400-\u9fff]{{2,4}}|[a-z]+)的({_KIN_ZH_WORDS})")
_ZH_MY_KIN = re.compile(rf"我(?:的)?({_KIN_ZH_WORDS})")
# Meteorological seasons (northern hemisphere): first month, and months long.
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_ZH_SEASONS = {"春天": "spring", "夏天": "summer", "秋天": "autumn", "冬天": "winter"}
_SEASON = re.compile(r"\b(last|this|past)\s+(spring|summer|autumn|fall|winter)\b")
_ZH_SEASON = re.compile(r"(去年|今年)(春天|夏天|秋天|冬天)")
# Longest name run looked up, in words (Latin) and characters (Chinese).
MAX_WORDS = 3
MAX_CJK = 6


@attrs.frozen
class TimeAnchor:
    """A time the question names: ``[start, end)`` in UTC, and the words naming it."""

    start: dt.datetime | None
    end: dt.datetime | None
    text: str


@attrs.frozen
class QueryAnalysis:
    text: str
    shape: QuestionShape
    tense: Tense
    # Folded word runs that may be names, and the entity keys of kinship references.
    names: tuple[str, ...]
    kin_keys: tuple[str, ...]
    anchors: tuple[TimeAnchor, ...] = ()
    # Member words of the categories it names ("activities" -> hiking, pottery…).
    expansion: tuple[str, ...] = ()
    # Task statuses it asks about ("what is blocked?" -> blocked).
    task_statuses: tuple[str, ...] = ()


def _latin_runs(text: str) -> list[str]:
    words = [fold(word) for word in _LATIN_WORD.findall(text)]
    runs: list[str] = []
    for size in range(1, MAX_WORDS + 1):
        runs.extend(" ".join(words[i : i + size]) for i in range(len(words) - size + 1))
    return [run for run in runs if run]


def _cjk_runs(text: str) -> list[str]:
    runs: list[str] = []
    for match in _CJK_RUN.finditer(text):
        run = match.group(0)
        for size in range(2, min(MAX_CJK, len(run)) + 1):
            runs.extend(run[i : i + size] for i in range(len(run) - size + 1))
    return runs


def _kin_keys(text: str) -> list[str]:
    keys = [
        kin_key(match.group(1), KIN_EN[match.group(2)])
        for match in _THEIR_KIN.finditer(text)
    ]
    keys.extend(
        kin_key(USER, KIN_EN[match.group(1)]) for match in _MY_KIN.finditer(text)
    )
    keys.extend(
        kin_key(match.group(1), KIN_ZH[match.group(2)])
        for match in _ZH_THEIR_KIN.finditer(text)
    )
    keys.extend(
        kin_key(USER, KIN_ZH[match.group(1)]) for match in _ZH_MY_KIN.finditer(text)
    )
    return keys


def _season(name: str, year: int) -> tuple[dt.datetime, dt.datetime]:
    first = _SEASONS[name]
    start = dt.datetime(year, first, 1, tzinfo=dt.UTC)
    end_month = first + 3
    end = dt.datetime(
        year + (end_month > 12), (end_month - 1) % 12 + 1, 1, tzinfo=dt.UTC
    )
    return start, end


def _season_anchors(text: str, now: dt.datetime) -> list[TimeAnchor]:
    """ "last summer": the latest summer over by now; "this summer": this year's;
    "去年夏天": last year's."""
    anchors: list[TimeAnchor] = []
    moment = now.astimezone(dt.UTC)
    for match in _SEASON.finditer(text):
        which, name = match.group(1), match.group(2)
        year = moment.year
        if which in ("last", "past"):
            while _season(name, year)[1] > moment:
                year -= 1
        elif _season(name, year - 1)[1] > moment:
            year -= 1  # January's "this winter" began last December
        anchors.append(TimeAnchor(*_season(name, year), match.group(0)))
    for match in _ZH_SEASON.finditer(text):
        year = moment.year - (match.group(1) == "去年")
        season = _season(_ZH_SEASONS[match.group(2)], year)
        anchors.append(TimeAnchor(*season, match.group(0)))
    return anchors


def analyse(query: str, now: dt.datetime, timezone: str = "UTC") -> QueryAnalysis:
    """The offline analysis of ``query``, asked at ``now``."""
    text = " ".join(query.casefold().split())
    seasons = _season_anchors(text, now)
    anchors = tuple(
        seasons
        + [
            TimeAnchor(match.span.valid_from, match.span.valid_until, match.text)
            for match in find_times(query, now, timezone, prefer="past")
            # "去年夏天" is the summer, not the whole year.
            if not any(match.text in season.text for season in seasons)
        ]
    )
    names = dict.fromkeys([*_latin_runs(text), *_cjk_runs(text)])
    return QueryAnalysis(
        text=text,
        shape=shape_of(query),
        tense=tense_of(query),
        names=tuple(names),
        kin_keys=tuple(dict.fromkeys(_kin_keys(text))),
        anchors=anchors,
        expansion=tuple(expansion_terms(query)),
        task_statuses=asked_task_status(query),
    )
