"""Every async test runs under a trio deadline (tests/conftest.py): a hang fails with a
traceback at its bound instead of holding the run."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from tests.conftest import BOUNDED, _bounded


async def test_a_hanging_body_fails_at_its_bound(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hang = _bounded(trio.sleep_forever, 30.0)
    with pytest.raises(trio.TooSlowError):
        await hang()
    assert trio.current_time() == pytest.approx(30.0)


def test_collected_async_tests_carry_the_bound(request: pytest.FixtureRequest) -> None:
    trio_tests = [
        item.nodeid
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.get_closest_marker("trio")
    ]
    assert trio_tests
    assert [nodeid for nodeid in trio_tests if nodeid not in BOUNDED] == []
