"""Shared fixtures: real data directories, a fixed domain clock, a fast deterministic
embedder; and the bound every async test runs under."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import settings

from cairn import Memory, MemoryConfig, open_memory
from cairn.clock import DomainClock
from cairn.providers.embedding import EmbeddingProvider
from cairn.providers.http.text import TextProvider
from cairn.testing import FixedDomainClock, HashingEmbedder

settings.register_profile("ci", max_examples=60, deadline=None)
settings.register_profile("fast", max_examples=15, deadline=None)
settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Recall waits are deadlines, not sleeps: generous ones keep thread-backed tests on the
# `ok` path; the pending path has its own MockClock tests.
TEST_CONFIG = MemoryConfig(
    recall_wait_s=60.0,
    embed_linger_s=0.001,
    maintenance_interval_s=3600,
    # Extraction starts as soon as a turn arrives; the linger window has its own
    # MockClock tests (tests/runtime/test_batches.py).
    extraction_linger_s=0.001,
)


def open_test_memory(
    data_dir: Path,
    config: MemoryConfig = TEST_CONFIG,
    *,
    clock: DomainClock | None = None,
    embedder: EmbeddingProvider | None = None,
    text_provider: TextProvider | None = None,
) -> AbstractAsyncContextManager[Memory]:
    """``open_memory`` as the tests open it: unless given, a fixed domain clock and the
    hashing embedder, so no test reaches the configured model or the wall clock."""
    return open_memory(
        data_dir,
        config,
        clock=FixedDomainClock() if clock is None else clock,
        embedder=HashingEmbedder() if embedder is None else embedder,
        text_provider=text_provider,
    )


# Every async test body runs under a trio deadline (trio-websocket's charter): a hang is a
# failure with a traceback, never a stuck run. On the real clock a test gets REAL_BOUND_S;
# with a mock clock time is virtual and long waits (leases, backoffs, failure windows)
# jump by, so the bound is virtual too. A test may set a tighter bound of its own inside.
REAL_BOUND_S = 120.0
VIRTUAL_BOUND_S = 24 * 3600.0
_MOCK_CLOCKS = {"thread_safe_clock", "autojump_clock", "mock_clock"}
# Node IDs of the tests given a bound (tests/test_bounds.py checks none is missed).
BOUNDED: set[str] = set()


def _bounded(function: Any, bound_s: float) -> Any:
    @functools.wraps(function)
    async def bounded(*args: Any, **kwargs: Any) -> None:
        with trio.fail_after(bound_s):
            await function(*args, **kwargs)

    return bounded


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        function = getattr(item, "obj", None)
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(function):
            virtual = _MOCK_CLOCKS & set(item.fixturenames)
            item.obj = _bounded(function, VIRTUAL_BOUND_S if virtual else REAL_BOUND_S)
            BOUNDED.add(item.nodeid)


@pytest.fixture
def thread_safe_clock() -> trio.testing.MockClock:
    """Autojump, but only after 250 ms of real idleness.

    With a zero threshold the clock also jumps while a task waits on a worker thread
    (every SQLite call), firing deadlines the test never meant to reach (MockClock's
    "false alarm" warning; STYLE.md section 5). The threshold lets threads finish first;
    it is generous because a loaded 2-core machine can hold a thread back for tens of ms.
    """
    return trio.testing.MockClock(autojump_threshold=0.25)


@pytest.fixture
def clock() -> FixedDomainClock:
    return FixedDomainClock()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
async def memory(data_dir: Path, clock: FixedDomainClock) -> AsyncIterator[Memory]:
    async with open_test_memory(data_dir, clock=clock) as opened:
        yield opened
