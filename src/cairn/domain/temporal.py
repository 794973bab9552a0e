"""Time-awareness of claims: a half-open validity interval with explicit precision, and
the closed set of recurrences a recurring claim repeats on."""

from __future__ import annotations

import calendar
import datetime as dt
import enum
import itertools
import json
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "Recurrence",
    "RecurrenceKind",
    "TemporalSpan",
    "TimePrecision",
    "next_occurrence",
    "occurrence_start",
]

_ONE_DAY = dt.timedelta(days=1)


class TimePrecision(enum.StrEnum):
    MINUTE = "minute"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    YEAR = "year"


@attrs.frozen
class TemporalSpan:
    """``[valid_from, valid_until)`` in UTC, with the precision and zone it was stated in.

    ``confidence`` is how sure the time parse is, independent of the claim's evidence
    confidence: a low-confidence parse fails open at recall with lower weight.
    """

    valid_from: dt.datetime | None
    valid_until: dt.datetime | None
    precision: TimePrecision
    timezone: str = "UTC"
    confidence: float = 1.0

    def __attrs_post_init__(self) -> None:
        for value in (self.valid_from, self.valid_until):
            if value is not None and value.utcoffset() is None:
                raise ValueError("temporal bounds must be timezone-aware")
        if (
            self.valid_from is not None
            and self.valid_until is not None
            and self.valid_until <= self.valid_from
        ):
            raise ValueError(
                "valid_until must be after valid_from (half-open interval)"
            )
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError("temporal confidence must be within [0, 1]")

    def contains(self, moment: dt.datetime) -> bool:
        if self.valid_from is not None and moment < self.valid_from:
            return False
        return not (self.valid_until is not None and moment >= self.valid_until)


class RecurrenceKind(enum.StrEnum):
    """The closed set of repeat patterns a claim can carry (architecture §4)."""

    DAILY = "daily"
    WEEKLY = "weekly"  # on one or more weekdays
    MONTHLY = "monthly"  # on a day of the month
    YEARLY = "yearly"  # on a month and day


_WEEKDAY_NAMES = (
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
)
_MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
)  # fmt: skip
# The longest each month ever gets: February 30 is no date in any year.
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_WEEKDAYS = frozenset(range(7))
_WORKWEEK = (0, 1, 2, 3, 4)
_WEEKEND = (5, 6)


def _ordinal(day: int) -> str:
    suffix = (
        "th"
        if 10 <= day % 100 <= 20
        else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    )
    return f"{day}{suffix}"


@attrs.frozen
class Recurrence:
    """Something that happens again and again: "every Monday at 9", "每月15号".

    ``weekdays`` (0 = Monday) is for weekly; ``day`` for monthly and yearly, ``month``
    (1-12) for yearly. ``time`` is the local time of day in ``timezone`` (the IANA zone it
    was stated in), or ``None`` for an all-day occurrence. The window is ``[starts,
    until)``: ``starts`` is normally the evidence time, ``until`` when it stops ("until
    June"), ``None`` for open-ended.

    A monthly day past the month's end ("the 31st" in April, "Feb 29" in 2027) falls on
    the month's last day: people paying rent "on the 31st" pay on the 30th in April, and
    skipping the month would lose an occurrence they expect.
    """

    kind: RecurrenceKind
    starts: dt.datetime
    timezone: str = "UTC"
    weekdays: tuple[int, ...] = ()
    day: int | None = None
    month: int | None = None
    time: dt.time | None = None
    until: dt.datetime | None = None

    def __attrs_post_init__(self) -> None:
        _check_zone(self.timezone)
        for value in (self.starts, self.until):
            if value is not None and value.utcoffset() is None:
                raise ValueError("recurrence bounds must be timezone-aware")
        if self.until is not None and self.until <= self.starts:
            raise ValueError("a recurrence's until must be after its start")
        if self.time is not None and self.time.tzinfo is not None:
            raise ValueError("a recurrence's time of day is local: no tzinfo")
        if self.weekdays != tuple(sorted(set(self.weekdays))):
            raise ValueError("recurrence weekdays must be sorted and distinct")
        if not set(self.weekdays) <= _WEEKDAYS:
            raise ValueError("a recurrence weekday is 0 (Monday) to 6 (Sunday)")
        kind = self.kind
        if (kind is RecurrenceKind.WEEKLY) != bool(self.weekdays):
            raise ValueError("weekdays are required for weekly, and only for weekly")
        if (kind in {RecurrenceKind.MONTHLY, RecurrenceKind.YEARLY}) != (
            self.day is not None
        ):
            raise ValueError(
                "a day of the month is required for monthly and yearly only"
            )
        if (kind is RecurrenceKind.YEARLY) != (self.month is not None):
            raise ValueError("a month is required for yearly, and only for yearly")
        if self.month is not None and not 1 <= self.month <= 12:
            raise ValueError("a recurrence month is 1 to 12")
        if self.day is not None:
            longest = 31 if self.month is None else _MONTH_DAYS[self.month - 1]
            if not 1 <= self.day <= longest:
                raise ValueError(f"a recurrence day of the month is 1 to {longest}")

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def describe(self) -> str:
        """Readable in any language: "every Monday 09:00 (Europe/Berlin)"."""
        if self.kind is RecurrenceKind.DAILY:
            what = "every day"
        elif self.kind is RecurrenceKind.WEEKLY:
            if self.weekdays == _WORKWEEK:
                what = "every weekday"
            elif self.weekdays == _WEEKEND:
                what = "every weekend"
            else:
                names = [_WEEKDAY_NAMES[day] for day in self.weekdays]
                what = "every " + (
                    names[0]
                    if len(names) == 1
                    else ", ".join(names[:-1]) + " and " + names[-1]
                )
        elif self.kind is RecurrenceKind.MONTHLY:
            assert self.day is not None  # noqa: S101 - checked at construction
            what = f"every month on the {_ordinal(self.day)}"
        else:
            assert self.month is not None  # noqa: S101 - checked at construction
            what = f"every year on {_MONTH_NAMES[self.month - 1]} {self.day}"
        if self.time is not None:
            what += f" {self.time.strftime('%H:%M')}"
        what += f" ({self.timezone})"
        if self.until is not None:
            last = (self.until - dt.timedelta(microseconds=1)).astimezone(self.zone)
            what += f" until {last.date().isoformat()}"
        return what

    def to_json(self) -> str:
        """The compact JSON stored in ``claims.recurrence`` (design/schema.md)."""
        record: dict[str, object] = {"kind": self.kind.value, "tz": self.timezone}
        if self.weekdays:
            record["weekdays"] = list(self.weekdays)
        if self.day is not None:
            record["day"] = self.day
        if self.month is not None:
            record["month"] = self.month
        if self.time is not None:
            record["time"] = self.time.isoformat(timespec="minutes")
        record["starts"] = self.starts.astimezone(dt.UTC).isoformat()
        if self.until is not None:
            record["until"] = self.until.astimezone(dt.UTC).isoformat()
        return json.dumps(record, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Recurrence:
        """The inverse of :meth:`to_json`; anything else raises :class:`ValueError`."""
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"a recurrence is a JSON object: {error}") from None
        return cls.from_record(record)

    @classmethod
    def from_record(cls, record: object) -> Recurrence:
        """A recurrence from its JSON object, validated; :class:`ValueError` if not one."""
        if not isinstance(record, dict):
            # ValueError like every other bad value: importers turn it into a typed error.
            raise ValueError("a recurrence is a JSON object")  # noqa: TRY004
        unknown = set(record) - _RECORD_FIELDS
        if unknown:
            raise ValueError(f"unknown recurrence fields: {', '.join(sorted(unknown))}")
        try:
            kind = RecurrenceKind(str(record.get("kind")))
        except ValueError:
            choices = ", ".join(kind.value for kind in RecurrenceKind)
            raise ValueError(f"a recurrence kind is one of {choices}") from None
        weekdays = record.get("weekdays", [])
        if not isinstance(weekdays, list) or not all(_is_int(day) for day in weekdays):
            raise ValueError("recurrence weekdays are a list of integers 0-6")
        for name in ("day", "month"):
            if record.get(name) is not None and not _is_int(record[name]):
                raise ValueError(f"recurrence {name} must be an integer")
        return cls(
            kind=kind,
            starts=_moment(record.get("starts"), "starts"),
            timezone=_text(record.get("tz", "UTC"), "tz"),
            weekdays=tuple(sorted(set(weekdays))),
            day=record.get("day"),
            month=record.get("month"),
            time=None if record.get("time") is None else _clock_time(record["time"]),
            until=None
            if record.get("until") is None
            else _moment(record["until"], "until"),
        )


_RECORD_FIELDS = frozenset(
    {"kind", "tz", "weekdays", "day", "month", "time", "starts", "until"}
)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"recurrence {name} must be a string")  # noqa: TRY004
    return value


def _moment(value: object, name: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(_text(value, name))
    except ValueError:
        raise ValueError(f"recurrence {name} is not an ISO-8601 moment") from None
    if moment.utcoffset() is None:
        raise ValueError(f"recurrence {name} must carry a UTC offset")
    return moment


def _clock_time(value: object) -> dt.time:
    try:
        moment = dt.time.fromisoformat(_text(value, "time"))
    except ValueError:
        raise ValueError("recurrence time is HH:MM") from None
    if moment.tzinfo is not None:
        raise ValueError("recurrence time is local: no UTC offset")
    return moment


def _check_zone(name: str) -> None:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown IANA timezone {name!r}") from None


def _month_day(year: int, month: int, day: int) -> dt.date:
    """``day`` of the month, or its last day when the month is shorter."""
    return dt.date(year, month, min(day, calendar.monthrange(year, month)[1]))


def _dates_from(recurrence: Recurrence, first: dt.date) -> Iterator[dt.date]:
    """The recurrence's local dates on or after ``first``, in order."""
    kind = recurrence.kind
    if kind is RecurrenceKind.DAILY:
        day = first
        while True:
            yield day
            day += _ONE_DAY
    elif kind is RecurrenceKind.WEEKLY:
        day = first
        while True:
            if day.weekday() in recurrence.weekdays:
                yield day
            day += _ONE_DAY
    elif kind is RecurrenceKind.MONTHLY:
        assert recurrence.day is not None  # noqa: S101 - checked at construction
        year, month = first.year, first.month
        while True:
            day = _month_day(year, month, recurrence.day)
            if day >= first:
                yield day
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    else:
        assert recurrence.day is not None  # noqa: S101 - checked at construction
        assert recurrence.month is not None  # noqa: S101 - checked at construction
        for year in itertools.count(first.year):
            day = _month_day(year, recurrence.month, recurrence.day)
            if day >= first:
                yield day


def occurrence_start(recurrence: Recurrence, day: dt.date) -> dt.datetime:
    """When the occurrence on local ``day`` starts, in UTC.

    A time a DST switch skips (02:30 on a spring-forward night) happens as far after the
    switch as it was meant after the hour before it (03:30); a time a switch repeats
    happens the first time (``fold=0``).
    """
    local = dt.datetime.combine(day, recurrence.time or dt.time(), recurrence.zone)
    return local.astimezone(dt.UTC)


def next_occurrence(recurrence: Recurrence, moment: dt.datetime) -> dt.datetime | None:
    """The first occurrence not over at ``moment``, in UTC; ``None`` once the window ends.

    A timed occurrence ("09:00") is an instant: the first one at or after ``moment``
    (and at or after ``starts``). An all-day occurrence ("every Thursday") lasts its local
    day, so on a Thursday it is today's, returned as that day's local midnight. Nothing at
    or after ``until`` is an occurrence.
    """
    if moment.utcoffset() is None:
        raise ValueError("the moment must be timezone-aware")
    since = max(moment, recurrence.starts)
    if recurrence.until is not None and since >= recurrence.until:
        return None
    zone = recurrence.zone
    first = since.astimezone(zone).date()
    if recurrence.time is None:
        # The starting day itself counts even when ``starts`` is later in the day.
        threshold = occurrence_start(recurrence, first)
    else:
        first -= (
            _ONE_DAY  # a DST gap can push the previous local day's time past ``since``
        )
        threshold = since
    for day in _dates_from(recurrence, first):
        start = occurrence_start(recurrence, day)
        if recurrence.until is not None and start >= recurrence.until:
            return None
        if start >= threshold:
            return start
    return None  # pragma: no cover - the date generators never end
