"""Adaptive refill: when filtering leaves the vector list short of k, the search asks
again for twice the hits with the same query vector, up to the cap; short at the cap,
the manifest says ``candidate_budget_exhausted``. Never an unbounded loop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import numpy as np
import pytest
from tests.conftest import TEST_CONFIG, open_test_memory

from cairn import Memory
from cairn.domain.scope import Scope
from cairn.testing import HashingEmbedder

# Only vectors can find these: the query text shares no word with them.
QUERY = "zq"
NEAR = "harbour ferry timetable"  # the session claims: closest to the query vector
FAR = "harbour ferry timetable for the weekend trip with my cousin"  # the agent claim


async def _open(tmp_path: Path, **config: int) -> AsyncIterator[Memory]:
    async with open_test_memory(
        tmp_path / "data", attrs.evolve(TEST_CONFIG, vector_candidates=5, **config)
    ) as memory:
        yield memory


async def _fill(memory: Memory, session_claims: int) -> None:
    for number in range(session_claims):
        await memory.remember(
            "a", f"{NEAR} {number}", by="user", scope=Scope.session("other")
        )
    await memory.remember("a", FAR, by="user")
    await memory.wait_idle("a")


def _query_vector() -> list[float]:
    return [float(x) for x in HashingEmbedder()._embed(NEAR)]


@pytest.fixture
async def refilled(tmp_path: Path) -> AsyncIterator[Memory]:
    async for memory in _open(tmp_path):
        yield memory


async def test_refill_finds_what_filtering_hid_behind_other_scopes(
    refilled: Memory,
) -> None:
    # 40 session-scoped vectors are nearer than the one agent-scope claim: the first
    # search (2 x 5 hits) sees only them, and every one is filtered out.
    await _fill(refilled, 40)
    recall = await refilled.recall("a", QUERY, query_vector=_query_vector())
    assert [item.text for item in recall.items] == [FAR]
    assert recall.manifest is not None
    assert "candidate_budget_exhausted" not in recall.manifest.degradations


async def test_refill_stops_at_the_cap_and_says_so(tmp_path: Path) -> None:
    async for memory in _open(tmp_path, vector_refill_cap=20):
        await _fill(memory, 40)
        recall = await memory.recall("a", QUERY, query_vector=_query_vector())
        assert recall.items == ()
        assert recall.manifest is not None
        assert "candidate_budget_exhausted" in recall.manifest.degradations


async def test_a_spent_index_ends_the_refill_without_a_degradation(
    refilled: Memory,
) -> None:
    # Fewer live vectors than k: the search returns all there is, nothing to refill.
    await _fill(refilled, 3)
    recall = await refilled.recall("a", QUERY, query_vector=_query_vector(), k=10)
    assert [item.text for item in recall.items] == [FAR]
    assert recall.manifest is not None
    assert recall.manifest.degradations == ()


def test_query_vector_is_nearer_the_session_claims() -> None:
    """The premise of the tests above, checked rather than assumed."""
    embedder = HashingEmbedder()
    query = np.asarray(_query_vector())
    near = float(query @ embedder._embed(f"{NEAR} 7"))
    far = float(query @ embedder._embed(FAR))
    assert near > far
