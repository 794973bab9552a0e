"""Circuit breaker for query embedding, per (agent, provider, model).

When a provider keeps failing, recall should stop paying a deadline per query and go straight
to lexical and evidence candidates. Only query embedding uses this: batch embedding, warm-up
and dimension discovery have their own retry and backoff and never consult it.

States::

    CLOSED --(failure_threshold consecutive failures within window_s)--> OPEN
    OPEN   --(cooldown_s elapsed, first allow())--> HALF_OPEN (one probe in flight)
    HALF_OPEN --probe success--> CLOSED
    HALF_OPEN --probe failure--> OPEN (cooldown restarts)
    HALF_OPEN --probe abandoned (cancelled / capacity)--> HALF_OPEN, probe slot free again

Only deadline misses and transport failures count (:class:`FailureKind`). Cancellation and
local capacity rejection say nothing about the provider, so they have their own method,
:meth:`CircuitBreaker.record_abandoned`, which never changes the state; it only frees the
probe slot if the abandoned call was the probe (``test_abandoned_probe_frees_the_slot``).

Results that arrive while OPEN come from calls admitted before it opened and are ignored; the
only way back to CLOSED is a probe success (or :meth:`CircuitBreaker.reset`).

Sync and clock-injected: every method is a plain state update, safe to call from any trio
task (no checkpoint in between, so no interleaving inside one call). Tests drive it with
``trio.testing.MockClock``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import attrs
import trio

__all__ = ["AbandonReason", "BreakerState", "CircuitBreaker", "FailureKind"]


class BreakerState(enum.Enum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class FailureKind(enum.Enum):
    """Failures that count towards opening the breaker."""

    DEADLINE = "deadline"
    TRANSPORT = "transport"


class AbandonReason(enum.Enum):
    """Outcomes that are *not* provider failures and never count."""

    CANCELLED = "cancelled"
    CAPACITY_REJECTED = "capacity_rejected"


@attrs.define(eq=False)
class CircuitBreaker:
    """Decides whether a query-embedding call may go to the provider.

    Use: ``if breaker.allow(): ...`` then exactly one of :meth:`record_success`,
    :meth:`record_failure` or :meth:`record_abandoned` for that call.
    """

    failure_threshold: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    window_s: float = attrs.field(default=30.0, validator=attrs.validators.gt(0.0))
    cooldown_s: float = attrs.field(default=30.0, validator=attrs.validators.gt(0.0))
    clock: Callable[[], float] = trio.current_time
    _state: BreakerState = attrs.field(default=BreakerState.CLOSED, init=False)
    _streak: int = attrs.field(default=0, init=False)
    _streak_started_at: float = attrs.field(default=0.0, init=False)
    _opened_at: float = attrs.field(default=0.0, init=False)
    _probe_in_flight: bool = attrs.field(default=False, init=False)

    @property
    def state(self) -> BreakerState:
        """The current state; OPEN turns HALF_OPEN only when a probe is admitted."""
        return self._state

    def allow(self) -> bool:
        """True if this call may go to the provider (as the probe, when half-open)."""
        if self._state is BreakerState.CLOSED:
            return True
        if self._state is BreakerState.OPEN:
            if self.clock() - self._opened_at < self.cooldown_s:
                return False
            self._state = BreakerState.HALF_OPEN
        # HALF_OPEN: exactly one probe at a time (test_only_one_probe_is_admitted).
        if self._probe_in_flight:
            return False
        self._probe_in_flight = True
        return True

    def record_success(self) -> None:
        """The call succeeded: the failure streak ends; a probe success closes the breaker."""
        if self._state is BreakerState.OPEN:
            return
        self._close()

    def record_failure(self, kind: FailureKind) -> None:
        """The call missed its deadline or hit a transport failure."""
        del (
            kind
        )  # both kinds count the same today; the parameter keeps callers explicit
        now = self.clock()
        if self._state is BreakerState.OPEN:
            return
        if self._state is BreakerState.HALF_OPEN:
            self._open(now)
            return
        if self._streak == 0 or now - self._streak_started_at > self.window_s:
            self._streak = 0
            self._streak_started_at = now
        self._streak += 1
        if self._streak >= self.failure_threshold:
            self._open(now)

    def record_abandoned(self, reason: AbandonReason) -> None:
        """The call was cancelled or refused locally: not a failure, state unchanged."""
        del reason
        if self._state is BreakerState.HALF_OPEN:
            self._probe_in_flight = False

    def reset(self) -> None:
        """Back to CLOSED with no history (config switch, agent clean-up, shutdown)."""
        self._close()

    def _open(self, now: float) -> None:
        self._state = BreakerState.OPEN
        self._opened_at = now
        self._probe_in_flight = False
        self._streak = 0

    def _close(self) -> None:
        self._state = BreakerState.CLOSED
        self._streak = 0
        self._probe_in_flight = False
