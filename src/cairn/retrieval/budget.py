"""The one budget allocator: a pure function from demands to a byte split.

The directive block has a ceiling (a share of the total); whatever it does not use, the
memory block may borrow. The sum never exceeds the total
(tests/retrieval/test_budget.py::test_contribution_never_exceeds_budget).
"""

from __future__ import annotations

from cairn.retrieval.types import Allocation

__all__ = ["allocate"]


def allocate(
    total_bytes: int, directive_share: float, directive_demand: int
) -> Allocation:
    """Split ``total_bytes`` between the directive block and the memory block."""
    if total_bytes <= 0:
        raise ValueError("the budget must be positive")
    share = min(max(directive_share, 0.0), 1.0)
    directive_ceiling = int(total_bytes * share)
    directive_bytes = min(directive_demand, directive_ceiling)
    borrowed = directive_ceiling - directive_bytes
    memory_bytes = total_bytes - directive_bytes
    return Allocation(
        total_bytes=total_bytes,
        directive_bytes=directive_bytes,
        memory_bytes=memory_bytes,
        borrowed_bytes=borrowed,
    )
