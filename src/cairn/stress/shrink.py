"""The shortest history that still shows a failure: delta debugging over the workload's
operations (drop chunks, halving their size, while the failure keeps showing), within a
budget of re-runs. Concurrent runs are not perfectly repeatable, so the result is the
shortest *found*; every candidate is a real re-run on a fresh directory."""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from cairn.stress.workload import without

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from cairn.stress.runner import RunResult
    from cairn.stress.workload import Workload

__all__ = ["shrink"]


async def shrink(
    run: Callable[[Workload], Awaitable[RunResult]],
    failing: RunResult,
    *,
    attempts: int,
    budget_s: float,
) -> RunResult:
    """Re-run smaller workloads while one shows a failure of the same invariant."""
    wanted = {invariant for invariant, _ in failing.findings}
    best = failing
    deadline = trio.current_time() + budget_s
    chunk = max(1, len(best.workload.operations()) // 2)
    while chunk >= 1 and attempts > 0 and trio.current_time() < deadline:
        operations = best.workload.operations()
        progressed = False
        for start in range(0, len(operations), chunk):
            if attempts <= 0 or trio.current_time() >= deadline:
                break
            candidate = without(best.workload, operations[start : start + chunk])
            if not candidate.operations():
                continue
            attempts -= 1
            result = await run(candidate)
            if wanted & {invariant for invariant, _ in result.findings}:
                best = result
                progressed = True
                break
        if not progressed:
            chunk //= 2
    return best
