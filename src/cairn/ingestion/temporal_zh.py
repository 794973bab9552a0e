"""Chinese time expressions for :mod:`cairn.ingestion.temporal`.

Chinese names weeks explicitly (下周五 is next week's Friday, 这周一 this week's Monday),
so qualified weekdays resolve against Monday-based weeks with high confidence; a bare
周五/星期五 is the nearest one in the preferred direction, today excluded. Numbers are
Arabic digits or Chinese numerals below 100 (两 counts as two). Recurring phrasings
(每周一, 每个月) are not single times: :mod:`cairn.ingestion.temporal_recurrence` reads them.
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
    chinese_number,
)

if TYPE_CHECKING:
    from cairn.domain.temporal import TemporalSpan

__all__ = ["RULES"]

_CONFIDENCE_QUALIFIED_WEEKDAY = 0.9
_CONFIDENCE_NAMED_MONTH = 0.9

_DAY_WORDS = {
    "大后天": 3, "后天": 2, "明天": 1, "明日": 1, "明早": 1, "明晚": 1, "明儿": 1,
    "今天": 0, "今日": 0, "今晚": 0, "今早": 0, "今儿": 0, "今夜": 0,
    "昨天": -1, "昨日": -1, "昨晚": -1, "昨儿": -1, "昨夜": -1, "前天": -2, "大前天": -3,
}  # fmt: skip
_YEAR_WORDS = {
    "大后年": 3,
    "后年": 2,
    "明年": 1,
    "今年": 0,
    "去年": -1,
    "前年": -2,
    "大前年": -3,
}
_QUALIFIERS = {"下下": 2, "下": 1, "这": 0, "本": 0, "上": -1, "上上": -2}
_WEEKDAY_CHARS = "一二三四五六日"

_Q = r"(?P<q>下下|上上|下|上|这|本)"
_WEEK = r"(?:周|星期|礼拜)"
# 一 after 周 starts 一起/一些/一下/一次... far more often than it means Monday.
_WEEKDAY = r"(?P<wd>[二三四五六日天]|一(?![起些下定样直共点切般次]))"
_NUMERAL = r"(?:\d{1,3}|[一二两三四五六七八九十]{1,3})"
_MONTH_NUMBER = r"(?P<month>\d{1,2}|十[一二]?|[一二三四五六七八九])"
_DAY_NUMBER = r"(?P<day>\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"
_YEAR_NUMBER = r"(?P<year>\d{4}|[〇零一二三四五六七八九]{4})"


def _number(text: str) -> int:
    value = chinese_number(text)
    if value is None:
        raise ValueError(f"not a number: {text!r}")
    return value


def _weekday_index(char: str) -> int:
    return 6 if char == "天" else _WEEKDAY_CHARS.index(char)


def _day_word(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    offset = _DAY_WORDS[match[0]]
    return anchor.day(anchor.offset_days(offset), CONFIDENCE_RELATIVE_DAY)


def _year_word(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    return anchor.year(anchor.today.year + _YEAR_WORDS[match[0]], CONFIDENCE_VAGUE)


def _qualified_weekday(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    day = anchor.weekday_in_week(_QUALIFIERS[match["q"]], _weekday_index(match["wd"]))
    return anchor.day(day, _CONFIDENCE_QUALIFIED_WEEKDAY)


def _bare_weekday(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    day = anchor.nearest_weekday(_weekday_index(match["wd"]))
    return anchor.day(day, CONFIDENCE_WEEKDAY)


def _week(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    offset = _QUALIFIERS[match["q"]]
    return anchor.week(anchor.offset_days(7 * offset), CONFIDENCE_VAGUE)


def _weekend(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    if match["q"] is None:
        return anchor.weekend(anchor.nearest_weekend(), CONFIDENCE_VAGUE)
    offset = _QUALIFIERS[match["q"]]
    return anchor.weekend(anchor.offset_days(7 * offset), CONFIDENCE_VAGUE)


def _month(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    year, month = anchor.offset_months(_QUALIFIERS[match["q"]])
    return anchor.month(year, month, CONFIDENCE_VAGUE)


def _counted(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    count = _number(match["n"]) * (1 if match["dir"] == "后" else -1)
    unit = match["unit"].removeprefix("个")
    if unit in {"天", "日"}:
        return anchor.day(anchor.offset_days(count), CONFIDENCE_RELATIVE_DAY)
    if unit == "月":
        return anchor.month(*anchor.offset_months(count), CONFIDENCE_VAGUE)
    if unit == "年":
        return anchor.year(anchor.today.year + count, CONFIDENCE_VAGUE)
    return anchor.week(anchor.offset_days(7 * count), CONFIDENCE_VAGUE)


def _full_date(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    day = dt.date(
        _number(match["year"]), _number(match["month"]), _number(match["day"])
    )
    return anchor.day(day, CONFIDENCE_EXPLICIT)


def _month_day(match: re.Match[str], anchor: Anchor) -> TemporalSpan | None:
    nearest = anchor.nearest_date(_number(match["month"]), _number(match["day"]))
    return None if nearest is None else anchor.day(nearest, CONFIDENCE_INFERRED_YEAR)


def _year_month(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    month = _number(match["month"])
    return anchor.month(_number(match["year"]), month, CONFIDENCE_EXPLICIT)


def _year(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    return anchor.year(_number(match["year"]), CONFIDENCE_EXPLICIT)


def _named_month(match: re.Match[str], anchor: Anchor) -> TemporalSpan:
    month = _number(match["month"])
    return anchor.month(anchor.nearest_month(month), month, _CONFIDENCE_NAMED_MONTH)


def _rule(pattern: str, resolve: Resolver, trigger: tuple[str, ...]) -> TimeRule:
    return TimeRule(re.compile(pattern), resolve, trigger)


_DAYS = ("今", "明", "昨", "前天", "后天")
_YEARS = ("年",)
_WEEKS = ("周", "星期", "礼拜")
_MONTHS = ("月",)
_COUNTS = ("后", "前")


RULES: tuple[TimeRule, ...] = (
    _rule("|".join(sorted(_DAY_WORDS, key=len, reverse=True)), _day_word, _DAYS),
    _rule("|".join(sorted(_YEAR_WORDS, key=len, reverse=True)), _year_word, _YEARS),
    _rule(_Q + "个?" + _WEEK + _WEEKDAY, _qualified_weekday, _WEEKS),
    _rule(
        r"(?<![每下上这本个\d一二两三四五六七八九十])" + _WEEK + _WEEKDAY,
        _bare_weekday,
        _WEEKS,
    ),
    _rule(_Q + "个?" + _WEEK + "(?!末)", _week, _WEEKS),
    _rule("(?<!每)" + _Q + "?个?(?:周末|星期末)", _weekend, _WEEKS),
    _rule(_Q + "个?月(?!份)", _month, _MONTHS),
    _rule(
        r"(?P<n>" + _NUMERAL + r")(?P<unit>个?天|日|个?周|个?星期|个?礼拜|个月|年)"
        r"(?:以|之)?(?P<dir>后|前)",
        _counted,
        _COUNTS,
    ),
    _rule(
        _YEAR_NUMBER + "年" + _MONTH_NUMBER + "月" + _DAY_NUMBER + "[日号]",
        _full_date,
        _YEARS,
    ),
    _rule(
        r"(?<![\d年])" + _MONTH_NUMBER + "月" + _DAY_NUMBER + "[日号]",
        _month_day,
        _MONTHS,
    ),
    _rule(_YEAR_NUMBER + "年" + _MONTH_NUMBER + "月份?", _year_month, _YEARS),
    _rule(_YEAR_NUMBER + "年(?![代纪级])", _year, _YEARS),
    _rule(
        r"(?<![\d个每上下这本年])"
        + _MONTH_NUMBER
        + r"月份?(?![\d一二三四五六七八九十日号])",
        _named_month,
        _MONTHS,
    ),
)
