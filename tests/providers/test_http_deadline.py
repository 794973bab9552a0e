"""AdaptiveDeadline: EWMA latency × headroom clamped to [floor, ceiling]; a miss → ceiling."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.providers.http import AdaptiveDeadline


def test_starts_at_the_ceiling() -> None:
    assert AdaptiveDeadline().timeout_s() == 2.0


def test_follows_smoothed_latency_within_clamp() -> None:
    deadline = AdaptiveDeadline(headroom=2.0, smoothing=0.5)
    deadline.record_success(0.5)
    assert deadline.timeout_s() == pytest.approx(1.0)
    deadline.record_success(0.7)  # ewma 0.6
    assert deadline.smoothed_latency_s == pytest.approx(0.6)
    assert deadline.timeout_s() == pytest.approx(1.2)


def test_clamps_to_floor_and_ceiling() -> None:
    fast = AdaptiveDeadline()
    fast.record_success(0.01)
    assert fast.timeout_s() == 0.8
    slow = AdaptiveDeadline()
    slow.record_success(5.0)
    assert slow.timeout_s() == 2.0


def test_miss_gives_ceiling_once_then_success_returns_to_observed() -> None:
    deadline = AdaptiveDeadline(headroom=2.0, smoothing=1.0)
    deadline.record_success(0.5)
    assert deadline.timeout_s() == pytest.approx(1.0)
    deadline.record_miss()
    assert deadline.timeout_s() == 2.0
    assert deadline.timeout_s() == 2.0  # reading does not consume the miss
    deadline.record_success(0.45)
    assert deadline.timeout_s() == pytest.approx(0.9)


def test_reset_forgets() -> None:
    deadline = AdaptiveDeadline()
    deadline.record_success(0.1)
    deadline.record_miss()
    deadline.reset()
    assert deadline.smoothed_latency_s is None
    assert deadline.timeout_s() == 2.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"floor_s": 3.0},
        {"headroom": 0.5},
        {"smoothing": 0.0},
        {"ceiling_s": float("inf")},
    ],
)
def test_rejects_bad_parameters(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        AdaptiveDeadline(**kwargs)


def test_rejects_bad_durations() -> None:
    with pytest.raises(ValueError):
        AdaptiveDeadline().record_success(-1.0)


@given(st.lists(st.one_of(st.none(), st.floats(0.0, 100.0)), max_size=50))
def test_always_within_bounds(events: list[float | None]) -> None:
    deadline = AdaptiveDeadline()
    for event in events:
        if event is None:
            deadline.record_miss()
        else:
            deadline.record_success(event)
        assert 0.8 <= deadline.timeout_s() <= 2.0
