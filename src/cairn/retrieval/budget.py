"""The one budget allocator: a pure function from demands to a byte split.

A contribution has three parts: the directive block, the persona and working sections,
and the items recalled for the message. The contract (architecture §4):

- the **directive block** gets at most its ceiling (``directive`` share of the total);
  it never borrows, so standing instructions can never crowd out memory;
- the **persona and working sections** get their floor whenever they have something to
  show (the floor is theirs, whatever the other parts want) and never more than their
  ceiling, borrowing included;
- **query recall** gets the rest of the total as its own share, of which the
  reservation can never go to the sections: the persona ceiling is held below
  ``total - reservation``;
- what a part does not use of its own share, the others may **borrow**, each at most
  ``borrow`` share of the total; query recall borrows first (it is what the message
  asked for), the sections then, up to their ceiling;
- the sum never exceeds the total (the **hard ceiling**).

The memory block's container (its opening and closing tags) is a fixed cost, paid once
before the shares are taken when the block has anything to show (``Demand.container``):
the shares divide what is left, so a floor is a floor of lines, not of markup.

Every amount is in the :class:`~cairn.retrieval.types.Allocation` the manifest carries,
the limits too, so a reader sees the contract as it was applied
(tests/retrieval/test_budget.py, tests/retrieval/test_budget_properties.py).
"""

from __future__ import annotations

import attrs

from cairn.retrieval.types import Allocation

__all__ = ["Demand", "Shares", "allocate"]


def _share(value: float) -> float:
    return min(max(value, 0.0), 1.0)


@attrs.frozen
class Shares:
    """The parts' shares of the total, each from 0 to 1 (out-of-range values are held
    to the range; :class:`cairn.config.MemoryConfig` refuses them earlier)."""

    directive: float = 0.25
    persona_floor: float = 0.10
    persona_ceiling: float = 0.35
    recall_reserve: float = 0.40
    # At the defaults, as much as the directive ceiling and the persona floor hold: when
    # neither has anything to show, query recall can still fill the whole budget.
    borrow: float = 0.35


@attrs.frozen
class Demand:
    """How many bytes each part would use if it had them all (its rendered size), and
    the memory block's container, paid once if either memory part has demand."""

    directive: int = 0
    persona: int = 0
    recall: int = 0
    container: int = 0


def allocate(
    total_bytes: int, demand: Demand, shares: Shares | None = None
) -> Allocation:
    """Split ``total_bytes`` between the directive block, the sections and query recall."""
    if total_bytes <= 0:
        raise ValueError("the budget must be positive")
    shares = shares or Shares()
    want_directive = max(demand.directive, 0)
    want_persona = max(demand.persona, 0)
    want_recall = max(demand.recall, 0)
    container = 0
    if want_persona or want_recall:
        container = max(demand.container, 0)
        if container >= total_bytes:
            # Not even the empty block fits: the memory block shows nothing.
            container = want_persona = want_recall = 0
    total = total_bytes - container  # what the shares divide

    directive_ceiling = int(total * _share(shares.directive))
    # The reservation and the floor fit beside the directive ceiling, whatever the shares.
    reserved = min(
        int(total * _share(shares.recall_reserve)), total - directive_ceiling
    )
    floor = min(
        int(total * _share(shares.persona_floor)), total - directive_ceiling - reserved
    )
    ceiling = min(
        max(floor, int(total * _share(shares.persona_ceiling))), total - reserved
    )
    limit = int(total * _share(shares.borrow))

    # Each part's own share first.
    directive = min(want_directive, directive_ceiling)
    persona = min(want_persona, floor)
    recall = min(want_recall, total - directive_ceiling - floor)
    # Then the unused shares, bounded per borrower.
    unused = total - directive - persona - recall
    recall_borrowed = min(want_recall - recall, limit, unused)
    recall += recall_borrowed
    unused -= recall_borrowed
    persona_borrowed = min(want_persona - persona, limit, ceiling - persona, unused)
    persona += persona_borrowed

    return Allocation(
        total_bytes=total_bytes,
        directive_bytes=directive,
        memory_bytes=container + persona + recall,
        borrowed_bytes=recall_borrowed + persona_borrowed,
        directive_ceiling=directive_ceiling,
        persona_floor=floor,
        persona_ceiling=ceiling,
        persona_bytes=persona,
        recall_reserved=reserved,
        recall_bytes=recall,
        borrow_limit=limit,
        container_bytes=container,
    )
