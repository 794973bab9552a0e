"""CircuitBreaker on the trio MockClock: open → half-open (one probe) → closed.

Invariants: only deadline/transport failures count, consecutively and within the window;
while open nothing passes; after the cooldown exactly one probe passes, even to concurrent
callers; cancellation and capacity rejection never change the state.
"""

from __future__ import annotations

import trio
import trio.testing

from cairn.providers.http import (
    AbandonReason,
    BreakerState,
    CircuitBreaker,
    FailureKind,
)


def _state(breaker: CircuitBreaker) -> BreakerState:
    # A call, not the property, so mypy does not narrow the state across transitions.
    return breaker.state


def _breaker() -> CircuitBreaker:
    return CircuitBreaker(failure_threshold=3, window_s=10.0, cooldown_s=30.0)


def _trip(breaker: CircuitBreaker) -> None:
    for _ in range(3):
        assert breaker.allow()
        breaker.record_failure(FailureKind.TRANSPORT)


async def test_open_half_open_closed(autojump_clock: trio.testing.MockClock) -> None:
    breaker = _breaker()
    _trip(breaker)
    assert _state(breaker) is BreakerState.OPEN
    assert not breaker.allow()
    await trio.sleep(29.9)
    assert not breaker.allow()
    await trio.sleep(0.2)
    assert breaker.allow()  # the probe
    assert _state(breaker) is BreakerState.HALF_OPEN
    assert not breaker.allow()
    breaker.record_success()
    assert _state(breaker) is BreakerState.CLOSED
    assert breaker.allow()
    assert breaker.allow()


async def test_probe_failure_reopens_with_fresh_cooldown(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = _breaker()
    _trip(breaker)
    await trio.sleep(30.0)
    assert breaker.allow()
    breaker.record_failure(FailureKind.DEADLINE)
    assert _state(breaker) is BreakerState.OPEN
    await trio.sleep(29.0)
    assert not breaker.allow()
    await trio.sleep(1.0)
    assert breaker.allow()


async def test_only_one_probe_is_admitted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = _breaker()
    _trip(breaker)
    await trio.sleep(30.0)
    admitted: list[int] = []
    probe_may_finish = trio.Event()

    async def caller(number: int) -> None:
        if breaker.allow():
            admitted.append(number)
            await probe_may_finish.wait()
            breaker.record_success()

    async with trio.open_nursery() as nursery:
        for number in range(10):
            nursery.start_soon(caller, number)
        await trio.testing.wait_all_tasks_blocked()
        assert len(admitted) == 1
        probe_may_finish.set()
    assert _state(breaker) is BreakerState.CLOSED


async def test_abandoned_probe_frees_the_slot(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = _breaker()
    _trip(breaker)
    await trio.sleep(30.0)
    assert breaker.allow()
    breaker.record_abandoned(AbandonReason.CANCELLED)
    assert _state(breaker) is BreakerState.HALF_OPEN
    assert breaker.allow()
    assert not breaker.allow()


async def test_cancellation_and_capacity_do_not_count(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = _breaker()
    for _ in range(10):
        assert breaker.allow()
        breaker.record_abandoned(AbandonReason.CANCELLED)
        breaker.record_abandoned(AbandonReason.CAPACITY_REJECTED)
    assert _state(breaker) is BreakerState.CLOSED


async def test_failures_must_be_consecutive_and_within_window(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = _breaker()
    breaker.record_failure(FailureKind.TRANSPORT)
    breaker.record_failure(FailureKind.TRANSPORT)
    breaker.record_success()
    breaker.record_failure(FailureKind.TRANSPORT)
    breaker.record_failure(FailureKind.TRANSPORT)
    assert _state(breaker) is BreakerState.CLOSED
    await trio.sleep(
        11.0
    )  # the streak's window has passed: this failure starts a new one
    breaker.record_failure(FailureKind.DEADLINE)
    assert _state(breaker) is BreakerState.CLOSED
    breaker.record_failure(FailureKind.DEADLINE)
    breaker.record_failure(FailureKind.DEADLINE)
    assert _state(breaker) is BreakerState.OPEN


async def test_results_while_open_are_ignored_and_reset_closes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = _breaker()
    _trip(breaker)
    breaker.record_success()  # a straggler admitted before opening
    assert _state(breaker) is BreakerState.OPEN
    breaker.reset()
    assert _state(breaker) is BreakerState.CLOSED
    assert breaker.allow()


def test_clock_is_injectable() -> None:
    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=1, cooldown_s=5.0, clock=lambda: now[0])
    breaker.record_failure(FailureKind.TRANSPORT)
    assert not breaker.allow()
    now[0] = 5.0
    assert breaker.allow()
