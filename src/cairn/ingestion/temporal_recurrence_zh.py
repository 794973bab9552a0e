"""Chinese recurrence expressions for :mod:`cairn.ingestion.temporal_recurrence`.

Repeat patterns: 每天/每日/天天/每晚/每天早上; 工作日/每个工作日/工作日每天; 每个周末/每周末;
每周四/每星期二和四/每个礼拜一、三、五/每逢周六; 每月15号/每个月的1日; 每年5月3日.
每次 (every time), 每个人 (everyone) and 每周三次 (three times a week) are not recurrences;
隔周, 每隔一天, 每两周, 每三个月 are intervals outside the closed set. A time of day is
"9点", "早上9点半", "下午3点15分", "晚上七点", "9:30" (下午/傍晚/晚上 move 1-11 点 past
noon). The end is 到/直到 followed by a time, included ("到六月" runs through June), or
到年底/到月底.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from cairn.domain.temporal import RecurrenceKind
from cairn.ingestion.temporal_calendar import Anchor, chinese_number
from cairn.ingestion.temporal_recurrence_rules import (
    WEEKEND,
    WORKWEEK,
    Language,
    Repeat,
    RepeatRule,
    clock_time,
    first_repeat,
    time_after,
)

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Callable

__all__ = ["LANGUAGE"]

_WEEKDAY_CHARS = "一二三四五六日"
_WEEK = r"(?:周|星期|礼拜)"
# 每周三次 is three times a week, 每周一起 "together every week": not weekdays.
_DAY_CHAR = r"(?:[二三四五六日天]|一(?![起些下定样直共点切般]))(?![次回遍趟个天])"
_DAY_LIST = rf"(?P<days>{_DAY_CHAR}(?:[、,，和与及跟]?{_WEEK}?{_DAY_CHAR})*)"
_NUMBER = r"(?:\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"


def _always(repeat: Repeat) -> Callable[[re.Match[str]], Repeat]:
    def build(_: re.Match[str]) -> Repeat:
        return repeat

    return build


def _weekdays(match: re.Match[str]) -> Repeat:
    days = {
        6 if char == "天" else _WEEKDAY_CHARS.index(char)
        for char in match["days"]
        if char in _WEEKDAY_CHARS or char == "天"
    }
    return Repeat(RecurrenceKind.WEEKLY, weekdays=tuple(sorted(days)))


def _number(text: str) -> int | None:
    return chinese_number(text)


def _monthly(match: re.Match[str]) -> Repeat | None:
    day = _number(match["day"])
    return None if day is None else Repeat(RecurrenceKind.MONTHLY, day=day)


def _yearly(match: re.Match[str]) -> Repeat | None:
    day, month = _number(match["day"]), _number(match["month"])
    if day is None or month is None:
        return None
    return Repeat(RecurrenceKind.YEARLY, day=day, month=month)


def _rule(pattern: str, build: Callable[[re.Match[str]], Repeat | None]) -> RepeatRule:
    return RepeatRule(re.compile(pattern), build)


_RULES = (
    _rule(
        r"每(?:一)?天|每日|天天|每晚|每早|每个?(?:早上|早晨|上午|中午|下午|傍晚|晚上)",
        _always(Repeat(RecurrenceKind.DAILY)),
    ),
    _rule(
        r"(?:每个?|每逢)?工作日(?:的)?(?:每天)?|每个?工作日",
        _always(Repeat(RecurrenceKind.WEEKLY, weekdays=WORKWEEK)),
    ),
    _rule(
        rf"(?:每个?|每逢){_WEEK}?末",
        _always(Repeat(RecurrenceKind.WEEKLY, weekdays=WEEKEND)),
    ),
    _rule(rf"(?:每个?|每逢){_WEEK}{_DAY_LIST}", _weekdays),
    _rule(rf"每个?月(?:的)?(?P<day>{_NUMBER})[日号]", _monthly),
    _rule(rf"每年(?:的)?(?P<month>{_NUMBER})月(?P<day>{_NUMBER})[日号]", _yearly),
)

_UNSUPPORTED = re.compile(
    r"隔(?:周|天|日|月|年|一)|每隔|双周|"
    r"每(?:[两二三四五六七八九十几]|\d+)个?(?:天|日|周|星期|礼拜|月|年)"
)
_PART_OF_DAY = r"(?P<part>早上|早晨|上午|中午|下午|傍晚|晚上|夜里|凌晨)?"
_CLOCK = re.compile(
    _PART_OF_DAY + r"(?P<h>\d{1,2}|[一二两三四五六七八九十]{1,3})[点點时]"
    r"(?:(?P<half>半)|(?P<quarter>一刻|三刻)|(?P<m>\d{1,2}|[一二三四五六七八九十]{1,3})分?)?"
    r"|(?P<h24>[01]?\d|2[0-3])[:：](?P<m24>[0-5]\d)"
)
_AFTERNOON = frozenset({"下午", "傍晚", "晚上", "夜里"})
_UNTIL = re.compile(r"(?:一直)?(?:直到|到)(?P<period>年底|年末|月底|月末)?")


def _repeat(text: str, start: int, end: int) -> tuple[re.Match[str], Repeat] | None:
    return first_repeat(_RULES, text, start, end)


def _time_of_day(text: str, start: int, end: int) -> dt.time | None:
    match = _CLOCK.search(text, start, end)
    if match is None:
        return None
    if match["h24"]:
        return clock_time(int(match["h24"]), int(match["m24"]))
    hour = chinese_number(match["h"].replace("两", "二"))
    if hour is None:
        return None
    minute = 0
    if match["half"]:
        minute = 30
    elif match["quarter"]:
        minute = 15 if match["quarter"] == "一刻" else 45
    elif match["m"]:
        minute = chinese_number(match["m"]) or 0
    part = match["part"]
    if (part in _AFTERNOON and 1 <= hour <= 11) or (part == "中午" and hour <= 2):
        hour += 12
    return clock_time(hour, minute)


def _until(
    text: str, start: int, end: int, reference: dt.datetime, timezone: str
) -> dt.datetime | None:
    for match in _UNTIL.finditer(text, start, end):
        anchor = Anchor.at(reference, timezone, "future")
        period = match["period"]
        if period in {"年底", "年末"}:
            return anchor.year(anchor.today.year, 1.0).valid_until
        if period in {"月底", "月末"}:
            return anchor.month(anchor.today.year, anchor.today.month, 1.0).valid_until
        span = time_after(text, match.end(), end, reference, timezone)
        if span is not None:
            return span.valid_until
    return None


def _might_recur(window: str) -> bool:
    return "每" in window or "天天" in window or "工作日" in window


LANGUAGE = Language(
    might_recur=_might_recur,
    unsupported=_UNSUPPORTED,
    repeat=_repeat,
    time_of_day=_time_of_day,
    until=_until,
)
