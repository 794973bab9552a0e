"""Bounded exponential backoff for a background step that failed, logged once a streak.

A failing step (a projection save on a full disk, a warm-up with no file descriptors
left) must neither end its agent nor retry hot nor flood the log: the first failure of a
streak is logged as a warning with its type, later ones at debug level, and the recovery
is logged once more.
"""

from __future__ import annotations

import logging

import attrs

__all__ = ["Backoff"]

logger = logging.getLogger("cairn.runtime")


@attrs.define(eq=False)
class Backoff:
    step: str
    base_s: float = 0.5
    cap_s: float = 30.0
    failures: int = 0
    last_error: str | None = None

    def failed(self, error: BaseException) -> float:
        """Record a failure; returns how long to wait before the next attempt."""
        self.failures += 1
        self.last_error = f"{type(error).__name__}: {error}"[:200]
        if self.failures == 1:
            logger.warning(
                "%s failed (%s); retrying with backoff", self.step, self.last_error
            )
        else:
            logger.debug("%s failed again (%d in a row)", self.step, self.failures)
        return float(min(self.cap_s, self.base_s * 2.0 ** (self.failures - 1)))

    def succeeded(self) -> None:
        if self.failures:
            logger.info("%s recovered after %d failures", self.step, self.failures)
        self.failures = 0
        self.last_error = None

    @property
    def failing(self) -> bool:
        return self.failures > 0
