"""The only door from the trio loop to worker threads.

SQLite, usearch and embedding all block, so they run here, each behind a *named* capacity
limiter so one kind of work cannot starve another. Thread calls are not abandoned on
cancellation: a write either finishes (and commits or rolls back its transaction) or never
started, and only then does ``Cancelled`` surface (tests/runtime/test_cancellation.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import attrs
import trio

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Limiters", "run_in_thread"]

T = TypeVar("T")


@attrs.frozen
class Limiters:
    """Named limiters: writes are serialised; reads, vector scans and CPU work are bounded."""

    store_write: trio.CapacityLimiter = attrs.field(
        factory=lambda: trio.CapacityLimiter(1)
    )
    store_read: trio.CapacityLimiter = attrs.field(
        factory=lambda: trio.CapacityLimiter(2)
    )
    # Vector projections allow one writer at a time (cairn.vectors); searches run in the
    # reader threads, so this limiter serialises writers only.
    index: trio.CapacityLimiter = attrs.field(factory=lambda: trio.CapacityLimiter(1))
    cpu: trio.CapacityLimiter = attrs.field(factory=lambda: trio.CapacityLimiter(1))
    # Exact vector scans for recall: read-only, so as many as cores are worth.
    vector_search: trio.CapacityLimiter = attrs.field(
        factory=lambda: trio.CapacityLimiter(2)
    )


async def run_in_thread(
    function: Callable[[], T], *, limiter: trio.CapacityLimiter
) -> T:
    """Run ``function`` in a worker thread under ``limiter``; never abandoned on cancel."""
    return await trio.to_thread.run_sync(function, limiter=limiter)
