"""Budget: one allocator, and a contribution that never exceeds its byte ceiling."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cairn.retrieval.budget import Demand, Shares, allocate
from cairn.retrieval.render import memory_demand, render_directives, render_memory
from cairn.retrieval.types import RecallItem

texts = st.text(min_size=1, max_size=300)
items = st.lists(
    st.builds(
        RecallItem,
        id=st.uuids().map(str),
        kind=st.sampled_from(["fact", "preference", "evidence"]),
        text=texts,
        score=st.floats(0, 1),
        source_refs=st.just(("e1",)),
        at=st.none() | st.just("2026-01-05T09:00:00+00:00"),
    ),
    max_size=40,
)
directives = st.lists(st.tuples(st.uuids().map(str), texts), max_size=10)


@given(st.integers(1, 20_000), st.floats(0, 0.6), st.integers(0, 30_000))
def test_memory_may_use_all_the_directive_block_leaves(
    total: int, share: float, demand: int
) -> None:
    allocation = allocate(
        total,
        Demand(directive=demand, recall=10 * total),
        Shares(directive=share, borrow=share + 0.1),
    )
    assert allocation.directive_bytes <= demand
    assert allocation.directive_bytes <= total * share
    # Nothing to show in the sections: query recall borrows all the directive's unused
    # share and the persona floor (the bound allows it) and the whole budget is in use.
    assert allocation.directive_bytes + allocation.memory_bytes >= total - 1
    assert allocation.directive_bytes + allocation.memory_bytes <= total


@given(items, directives, st.integers(1, 8_000), st.floats(0, 1))
def test_contribution_never_exceeds_budget(
    ranked: list[RecallItem], standing: list[tuple[str, str]], total: int, share: float
) -> None:
    demand = len(render_directives(standing, total).text.encode())
    container, _, recall = memory_demand((), ranked)
    allocation = allocate(
        total,
        Demand(directive=demand, recall=recall, container=container),
        Shares(directive=share, persona_floor=0, recall_reserve=0),
    )
    directive_block = render_directives(standing, allocation.directive_bytes)
    memory_block = render_memory(ranked, allocation.memory_bytes)
    used = len(directive_block.text.encode()) + len(memory_block.text.encode())
    assert used <= total
    assert set(memory_block.included) | set(memory_block.dropped) == {
        i.id for i in ranked
    }
    assert set(memory_block.included).isdisjoint(memory_block.dropped)


async def test_recall_respects_budget_end_to_end(memory) -> None:
    from tests.helpers import turn

    await memory.ingest(
        "agent-a",
        [
            turn(f"e{i}", f"I planted tomato variety number {i} in the garden.")
            for i in range(30)
        ],
    )
    await memory.add_directive("agent-a", "Answer in short sentences.")
    await memory.wait_idle("agent-a")
    for budget in (120, 400, 1000, 4000):
        recall = await memory.recall(
            "agent-a", "tomato garden", k=30, budget_bytes=budget
        )
        size = len(recall.memory_block.encode()) + len(recall.directive_block.encode())
        assert size <= budget
        assert recall.manifest is not None
        assert list(recall.manifest.selected_ids) == [item.id for item in recall.items]
    big = await memory.recall("agent-a", "tomato garden", k=30, budget_bytes=400)
    assert big.manifest is not None
    assert big.manifest.dropped_ids
