"""Shared fixtures: real data directories, a fixed domain clock, a fast deterministic embedder."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.testing
from hypothesis import settings

from cairn import Memory, MemoryConfig, open_memory
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
    async with open_memory(
        data_dir, TEST_CONFIG, clock=clock, embedder=HashingEmbedder()
    ) as opened:
        yield opened
