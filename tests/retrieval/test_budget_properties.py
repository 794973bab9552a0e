"""The allocator's contract, as properties over every valid configuration and demand:
the hard ceiling, each part within its ceiling and its demand, the persona floor and the
recall reservation honoured when there is demand, borrowing bounded; and the rendered
memory block within what was allocated."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from cairn import MemoryConfig
from cairn.errors import InvalidInputError
from cairn.retrieval.budget import Demand, Shares, allocate
from cairn.retrieval.render import RECALLED_HEADING, memory_demand, render_contribution
from cairn.retrieval.sections import SectionItems
from cairn.retrieval.types import Allocation, RecallItem
from cairn.store.projections import Section

unit = st.floats(0, 1, allow_nan=False)


@st.composite
def valid_shares(draw: st.DrawFn) -> Shares:
    """Shares MemoryConfig accepts: floor <= ceiling, directive + floor + reserve <= 1,
    ceiling + reserve <= 1."""
    directive = draw(unit)
    reserve = draw(st.floats(0, 1 - directive))
    floor = draw(st.floats(0, 1 - directive - reserve))
    ceiling = draw(st.floats(floor, 1 - reserve))
    assume(floor <= ceiling)
    return Shares(directive, floor, ceiling, reserve, draw(unit))


demands = st.builds(
    Demand,
    directive=st.integers(0, 40_000),
    persona=st.integers(0, 40_000),
    recall=st.integers(0, 40_000),
    container=st.sampled_from([0, 99]),
)
totals = st.integers(1, 20_000)


def _shared(allocation: Allocation) -> int:
    """What the shares divide: the total less the memory block's container."""
    return allocation.total_bytes - allocation.container_bytes


def _borrowed_by_recall(allocation: Allocation, demand: Demand) -> int:
    own = _shared(allocation) - allocation.directive_ceiling - allocation.persona_floor
    return max(0, allocation.recall_bytes - min(demand.recall, own))


def _borrowed_by_persona(allocation: Allocation, demand: Demand) -> int:
    return max(
        0, allocation.persona_bytes - min(demand.persona, allocation.persona_floor)
    )


@given(totals, demands, valid_shares())
def test_the_parts_never_exceed_the_total(
    total: int, demand: Demand, shares: Shares
) -> None:
    allocation = allocate(total, demand, shares)
    assert allocation.memory_bytes == (
        allocation.container_bytes + allocation.persona_bytes + allocation.recall_bytes
    )
    assert allocation.directive_bytes + allocation.memory_bytes <= total
    assert allocation.total_bytes == total
    # The container is paid only for a block that has something to show and fits.
    if allocation.container_bytes:
        assert demand.persona or demand.recall
        assert allocation.container_bytes == demand.container < total


@given(totals, demands, valid_shares())
def test_each_part_stays_within_its_ceiling_and_its_demand(
    total: int, demand: Demand, shares: Shares
) -> None:
    allocation = allocate(total, demand, shares)
    assert allocation.directive_bytes <= min(
        demand.directive, allocation.directive_ceiling
    )
    assert allocation.directive_ceiling <= _shared(allocation) * shares.directive
    assert allocation.persona_bytes <= min(demand.persona, allocation.persona_ceiling)
    assert allocation.persona_ceiling <= max(
        _shared(allocation) * shares.persona_ceiling, allocation.persona_floor
    )
    assert allocation.recall_bytes <= demand.recall


@given(totals, demands, valid_shares())
def test_the_floor_and_the_reservation_hold_whatever_the_others_want(
    total: int, demand: Demand, shares: Shares
) -> None:
    allocation = allocate(total, demand, shares)
    if demand.container >= total:
        # Not even the empty memory block fits: it gets nothing, the directive its share.
        assert allocation.memory_bytes == 0
        return
    # Valid shares fit the total, so the floor is the configured one (in whole bytes,
    # give or take the rounding of a share that exactly fills the total).
    assert (
        allocation.persona_floor >= int(_shared(allocation) * shares.persona_floor) - 1
    )
    assert allocation.persona_bytes >= min(demand.persona, allocation.persona_floor)
    assert allocation.recall_bytes >= min(demand.recall, allocation.recall_reserved)
    # The sections can never reach into query recall's reservation.
    assert (
        allocation.persona_ceiling <= _shared(allocation) - allocation.recall_reserved
    )


@given(totals, demands, valid_shares())
def test_borrowing_is_bounded_and_only_of_unused_shares(
    total: int, demand: Demand, shares: Shares
) -> None:
    allocation = allocate(total, demand, shares)
    by_recall = _borrowed_by_recall(allocation, demand)
    by_persona = _borrowed_by_persona(allocation, demand)
    assert by_recall <= allocation.borrow_limit
    assert by_persona <= allocation.borrow_limit
    assert allocation.borrowed_bytes == by_recall + by_persona
    assert allocation.borrow_limit <= _shared(allocation) * shares.borrow
    # Borrowed bytes come from what the others left: the directive block keeps all it
    # needs within its ceiling, the sections their floor.
    assert allocation.directive_bytes == min(
        demand.directive, allocation.directive_ceiling
    )


@given(totals, valid_shares())
def test_with_no_demand_nothing_is_allocated(total: int, shares: Shares) -> None:
    allocation = allocate(total, Demand(), shares)
    assert allocation.directive_bytes == 0
    assert allocation.memory_bytes == 0
    assert allocation.borrowed_bytes == 0


def test_a_tiny_budget_keeps_the_floor_and_the_ceilings() -> None:
    # 200 bytes at the defaults: directive ceiling 50, persona floor 20 and ceiling 70,
    # reservation 80, borrowing 70 each.
    allocation = allocate(200, Demand(directive=500, persona=500, recall=500))
    assert allocation.directive_bytes == 50
    assert allocation.persona_floor == 20
    assert allocation.persona_ceiling == 70
    assert allocation.recall_reserved == 80
    # Everyone wants more than there is: each takes its own share, nothing is unused.
    assert allocation.persona_bytes == 20
    assert allocation.recall_bytes == 130
    assert allocation.borrowed_bytes == 0
    # With no directives, query recall borrows first, the sections get the rest.
    spare = allocate(200, Demand(directive=0, persona=500, recall=150))
    assert spare.recall_bytes == 150
    assert spare.persona_bytes == 50
    assert spare.borrowed_bytes == 20 + 30


@pytest.mark.parametrize(
    ("knobs", "words"),
    [
        (
            {"persona_floor_share": 0.5, "persona_ceiling_share": 0.4},
            "persona_floor_share",
        ),
        ({"directive_share": 0.5, "recall_reserve_share": 0.45}, "add up to at most 1"),
        (
            {"persona_ceiling_share": 0.7},
            "persona_ceiling_share and recall_reserve_share",
        ),
        ({"borrow_share": 1.5}, "borrow_share must be a share from 0 to 1"),
    ],
)
def test_shares_that_cannot_all_hold_are_refused(
    knobs: dict[str, float], words: str
) -> None:
    with pytest.raises(InvalidInputError, match=words):
        MemoryConfig(**knobs)  # type: ignore[arg-type]


texts = st.text(min_size=1, max_size=200)
recall_items = st.lists(
    st.builds(
        RecallItem,
        id=st.uuids().map(str),
        kind=st.sampled_from(["fact", "preference", "evidence"]),
        text=texts,
        score=st.floats(0, 1),
        source_refs=st.just(("e1",)),
    ),
    max_size=20,
    unique_by=lambda item: item.id,
)
section_parts = st.lists(
    st.tuples(st.sampled_from(list(Section)), recall_items), max_size=5
).map(
    lambda parts: tuple(
        SectionItems(section, tuple(items))
        for section, items in {s: i for s, i in parts if i}.items()
    )
)


@given(section_parts, recall_items, st.integers(1, 6_000), valid_shares())
def test_the_rendered_block_never_exceeds_the_memory_allocation(
    sections: tuple[SectionItems, ...],
    items: list[RecallItem],
    total: int,
    shares: Shares,
) -> None:
    container, persona, recall = memory_demand(sections, items)
    allocation = allocate(
        total, Demand(persona=persona, recall=recall, container=container), shares
    )
    block = render_contribution(
        sections,
        items,
        allocation.persona_bytes,
        allocation.recall_bytes,
        allocation.container_bytes,
    )
    size = len(block.text.encode())
    assert size <= allocation.memory_bytes <= total
    shown = {item.id for part in sections for item in part.items}
    assert set(block.section_ids) | set(block.dropped_section_ids) == shown
    assert set(block.section_ids).isdisjoint(block.dropped_section_ids)
    if block.text:
        body = block.text.splitlines()[1:-1]
        lines = [line for line in body if not line.startswith("## ")]
        assert all(line.startswith("- [") for line in lines)
        headings = [line for line in body if line.startswith("## ")]
        assert len(headings) == len(set(headings))
        # The sections' headings and lines within their share.
        cut = body.index(RECALLED_HEADING) if RECALLED_HEADING in body else len(body)
        if block.section_ids:
            part = sum(len(line.encode()) + 1 for line in body[:cut])
            assert part <= allocation.persona_bytes
