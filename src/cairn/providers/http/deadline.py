"""Adaptive query-embedding deadline: smoothed recent latency × headroom, clamped.

Recall waits for the query vector only as long as the provider normally needs, so a slow day
at the provider costs at most the ceiling and a fast provider keeps recall snappy. Pure and
clock-free: the caller measures durations with its own clock and reports them, which makes
the policy trivially unit-testable and keeps trio out of it.

Policy (architecture section 8): the deadline is ``ewma(latency) × headroom`` clamped to
``[floor_s, ceiling_s]`` (800 ms to 2 s by default). Before any observation, and for the one
call after a miss, it is the ceiling. A miss does not feed the average (the true latency is
unknown, only that it exceeded the deadline); the next success does, and the deadline returns
to the observed value.
"""

from __future__ import annotations

import math

import attrs

__all__ = ["AdaptiveDeadline"]


def _positive_finite(
    _: object, attribute: attrs.Attribute[float], value: float
) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(
            f"{attribute.name} must be a positive finite number, got {value}"
        )


@attrs.define
class AdaptiveDeadline:
    """Per provider/model deadline for query and warm-up embedding calls.

    ``smoothing`` is the EWMA weight of the newest observation (1.0 = last call only).
    """

    floor_s: float = attrs.field(default=0.8, validator=_positive_finite)
    ceiling_s: float = attrs.field(default=2.0, validator=_positive_finite)
    headroom: float = attrs.field(default=2.0, validator=attrs.validators.ge(1.0))
    smoothing: float = attrs.field(
        default=0.3, validator=[attrs.validators.gt(0.0), attrs.validators.le(1.0)]
    )
    _smoothed_s: float | None = attrs.field(default=None, init=False)
    _missed: bool = attrs.field(default=False, init=False)

    def __attrs_post_init__(self) -> None:
        if self.floor_s > self.ceiling_s:
            raise ValueError(
                f"floor_s ({self.floor_s}) must not exceed ceiling_s ({self.ceiling_s})"
            )

    @property
    def smoothed_latency_s(self) -> float | None:
        """The EWMA of successful call durations, or None before the first success."""
        return self._smoothed_s

    def timeout_s(self) -> float:
        """How long the next call may take, in seconds."""
        if self._missed or self._smoothed_s is None:
            return self.ceiling_s
        return min(self.ceiling_s, max(self.floor_s, self._smoothed_s * self.headroom))

    def record_success(self, duration_s: float) -> None:
        """A call finished within its deadline after ``duration_s`` seconds."""
        if not (math.isfinite(duration_s) and duration_s >= 0):
            raise ValueError(f"duration_s must be finite and >= 0, got {duration_s}")
        if self._smoothed_s is None:
            self._smoothed_s = duration_s
        else:
            self._smoothed_s += self.smoothing * (duration_s - self._smoothed_s)
        self._missed = False

    def record_miss(self) -> None:
        """A call ran past its deadline: the next call gets the ceiling."""
        self._missed = True

    def reset(self) -> None:
        """Forget all observations (config switch, agent clean-up)."""
        self._smoothed_s = None
        self._missed = False
