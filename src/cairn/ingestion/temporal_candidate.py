"""Temporal data of a proposed claim to a validated ``[valid_from, valid_until)`` span.

A candidate may state its time as explicit ISO bounds, as an expression ("next Friday",
"上周三", "in two weeks"), or not at all. Expressions are resolved against the cited
event's own timestamp in the agent's zone by our normaliser (cairn.ingestion.temporal)
first; what it does not know goes to ``dateparser`` as a fallback, with day precision and a
lower temporal confidence. Anything that cannot be read, or an interval that is empty or
inverted, raises :class:`MalformedTemporalError`: the validator drops that candidate only.
A recurring candidate's recurrence is checked the same way (:class:`MalformedRecurrenceError`).
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from cairn.domain.claim import ClaimKind
from cairn.domain.temporal import Recurrence, TemporalSpan, TimePrecision
from cairn.ingestion.temporal import normalise_time

if TYPE_CHECKING:
    from cairn.ingestion.proposal import Candidate

__all__ = [
    "MalformedRecurrenceError",
    "MalformedTemporalError",
    "recurrence_window",
    "resolve_candidate_recurrence",
    "resolve_candidate_time",
]

# A parse the rules did not recognise is less certain than one they did.
_FALLBACK_CONFIDENCE = 0.6
# How sure a recurrence's window is: the repeat is explicit, but whether and until when it
# still holds is inferred from when it was said.
_RECURRENCE_CONFIDENCE = 0.9


class MalformedTemporalError(ValueError):
    """The candidate's temporal data cannot be normalised."""


class MalformedRecurrenceError(MalformedTemporalError):
    """The candidate's recurrence is not one of the closed set, or not a valid one."""


def _bound(text: str, zone: ZoneInfo) -> tuple[dt.datetime, TimePrecision]:
    try:
        if len(text) == len("2026-01-05"):
            day = dt.date.fromisoformat(text)
            return dt.datetime.combine(day, dt.time(), zone), TimePrecision.DAY
        moment = dt.datetime.fromisoformat(text)
    except ValueError as error:
        raise MalformedTemporalError(f"not an ISO date or time: {text!r}") from error
    if moment.utcoffset() is None:
        moment = moment.replace(tzinfo=zone)
    return moment, TimePrecision.MINUTE


@functools.cache
def _dateparser() -> Any:
    # Imported on first use: a third of a second, paid only when the rules missed.
    import dateparser  # noqa: PLC0415

    return dateparser


def _fallback(
    expression: str, reference: dt.datetime, timezone: str
) -> TemporalSpan | None:
    zone = ZoneInfo(timezone)
    local = reference.astimezone(zone).replace(tzinfo=None)
    parsed = _dateparser().parse(
        expression,
        languages=["en", "zh"],
        settings={
            "RELATIVE_BASE": local,
            "TIMEZONE": timezone,
            "RETURN_AS_TIMEZONE_AWARE": True,
            "PREFER_DATES_FROM": "future",
        },
    )
    if parsed is None:
        return None
    start = dt.datetime.combine(parsed.astimezone(zone).date(), dt.time(), zone)
    until = dt.datetime.combine(start.date() + dt.timedelta(days=1), dt.time(), zone)
    return TemporalSpan(
        start.astimezone(dt.UTC),
        until.astimezone(dt.UTC),
        TimePrecision.DAY,
        timezone,
        _FALLBACK_CONFIDENCE,
    )


def resolve_candidate_time(
    candidate: Candidate, reference: dt.datetime, timezone: str
) -> TemporalSpan | None:
    """The candidate's validity interval, or ``None`` when it states no time."""
    if candidate.temporal is not None:
        return candidate.temporal
    zone = ZoneInfo(timezone)
    if candidate.valid_from or candidate.valid_until:
        start = until = None
        precision = TimePrecision.DAY
        if candidate.valid_from:
            start, precision = _bound(candidate.valid_from, zone)
        if candidate.valid_until:
            until, until_precision = _bound(candidate.valid_until, zone)
            if start is None:
                precision = until_precision
        try:
            return TemporalSpan(
                None if start is None else start.astimezone(dt.UTC),
                None if until is None else until.astimezone(dt.UTC),
                precision,
                timezone,
            )
        except ValueError as error:
            raise MalformedTemporalError(str(error)) from error
    if candidate.time_text:
        match = normalise_time(candidate.time_text, reference, timezone)
        if match is not None:
            return match.span
        span = _fallback(candidate.time_text, reference, timezone)
        if span is None:
            raise MalformedTemporalError("time expression not understood")
        return span
    return None


_RECURRENCE_FIELDS = frozenset({"kind", "weekdays", "day", "month", "time", "until"})


def resolve_candidate_recurrence(
    candidate: Candidate, reference: dt.datetime, timezone: str
) -> Recurrence | None:
    """The candidate's recurrence, its window from ``reference`` in ``timezone``.

    A text model states the repeat only (kind, weekdays, day, month, local "HH:MM" time,
    an ISO ``until``, exclusive); the window starts at the cited evidence and is counted in
    the agent's zone. Raises :class:`MalformedRecurrenceError` for anything else, or for a
    recurrence on a claim that is not ``recurring``.
    """
    given = candidate.recurrence
    if given is None:
        return None
    if candidate.kind != ClaimKind.RECURRING.value:
        raise MalformedRecurrenceError("a recurrence on a claim that is not recurring")
    if isinstance(given, Recurrence):
        return given
    unknown = set(given) - _RECURRENCE_FIELDS
    if unknown:
        raise MalformedRecurrenceError(
            f"unknown recurrence fields: {', '.join(sorted(unknown))}"
        )
    record: dict[str, object] = {
        key: value for key, value in given.items() if value is not None
    }
    record["tz"] = timezone
    record["starts"] = reference.astimezone(dt.UTC).isoformat()
    until = given.get("until")
    if until is not None:
        if not isinstance(until, str):
            raise MalformedRecurrenceError("recurrence until is an ISO date or time")
        moment, _ = _bound(until, ZoneInfo(timezone))
        record["until"] = moment.astimezone(dt.UTC).isoformat()
    try:
        return Recurrence.from_record(record)
    except ValueError as error:
        raise MalformedRecurrenceError(str(error)) from error


def recurrence_window(recurrence: Recurrence) -> TemporalSpan:
    """A recurring claim's validity interval: its recurrence's window."""
    return TemporalSpan(
        recurrence.starts,
        recurrence.until,
        TimePrecision.DAY if recurrence.time is None else TimePrecision.MINUTE,
        recurrence.timezone,
        _RECURRENCE_CONFIDENCE,
    )
