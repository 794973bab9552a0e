"""Time-awareness of claims: a half-open validity interval with explicit precision."""

from __future__ import annotations

import datetime as dt
import enum

import attrs

__all__ = ["TemporalSpan", "TimePrecision"]


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
