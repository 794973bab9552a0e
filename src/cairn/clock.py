"""Business time.

Timeouts, leases and linger windows use trio's clock; the *domain* time stamped on evidence
and used to resolve "tomorrow" comes from an injected :class:`DomainClock`, so tests control it
explicitly and never depend on the wall clock.
"""

from __future__ import annotations

import datetime as dt
from typing import Protocol

__all__ = ["DomainClock", "SystemDomainClock"]


class DomainClock(Protocol):
    """Source of business time. Always returns timezone-aware UTC datetimes."""

    def now(self) -> dt.datetime: ...


class SystemDomainClock:
    """The real wall clock, in UTC."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)  # noqa: TID251 - the one sanctioned wall-clock read
