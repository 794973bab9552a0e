"""The only door from the trio loop to worker threads.

SQLite, usearch and embedding all block, so they run here, each behind a *named* capacity
limiter so one kind of work cannot starve another. Thread calls are not abandoned on
cancellation: a write either finishes (and commits or rolls back its transaction) or never
started, and only then does ``Cancelled`` surface (tests/runtime/test_cancellation.py).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TypeVar

import attrs
import trio

from cairn.runtime.fairness import FairLimiter

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
    # Query embeddings for recall: their own model instance, so their own limiter.
    query: trio.CapacityLimiter = attrs.field(factory=lambda: trio.CapacityLimiter(1))
    # Exact vector scans for recall: read-only, so as many as cores are worth.
    vector_search: trio.CapacityLimiter = attrs.field(
        factory=lambda: trio.CapacityLimiter(2)
    )
    # Background work (writes, extraction, document embedding) may keep at most this many
    # threads busy together: one core stays free for the trio loop and for recall. With
    # three busy threads on two cores the loop waited for a CPU: event-loop lag p99 during
    # ingest was ~7 ms, 4.6 ms with one core kept free (design/architecture.md).
    # Granted to agents in turn, a user's own writes first (cairn.runtime.fairness).
    background: FairLimiter = attrs.field(
        factory=lambda: FairLimiter(max(1, (os.cpu_count() or 2) - 1))
    )
    # Maintenance reads (dirty seeds, neighbours, pass plans) of every agent together
    # hold at most this many reader connections, granted to agents in turn: however
    # many agents are maintained, recall and ingest always find a reader
    # (cairn.runtime.actors.dirty_work).
    maintenance: FairLimiter = attrs.field(factory=lambda: FairLimiter(1))


async def run_in_thread(
    function: Callable[[], T],
    *,
    limiter: trio.CapacityLimiter,
    background: FairLimiter | None = None,
    abandon_on_cancel: bool = False,
) -> T:
    """Run ``function`` in a worker thread under ``limiter``.

    Not abandoned on cancel unless asked: only pure computations with no effect (a query
    embedding) may be abandoned; the limiter token is still held until the thread ends, so
    an abandoned computation never overlaps the next one under the same limiter. Background
    work also holds a ``background`` token while it runs (taken first, always in that
    order, so two limiters can never deadlock), in its agent's turn (the share the
    calling task declared: cairn.runtime.fairness).
    """
    if background is None:
        return await trio.to_thread.run_sync(
            function, limiter=limiter, abandon_on_cancel=abandon_on_cancel
        )
    async with background.slot():
        return await trio.to_thread.run_sync(
            function, limiter=limiter, abandon_on_cancel=abandon_on_cancel
        )
