"""Helpers the benches share: the load average, result fields of either shape, latency
summaries, and the hashing embedder run on the runtime's own threads."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import trio

from cairn.runtime.core import runtime_core
from cairn.testing import HashingEmbedder

__all__ = ["ThreadedHashing", "load", "pick", "summary"]


def load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def pick(value: Any, *path: str) -> Any:
    """``value[a][b]…`` or ``value.a.b…``: results may be dicts or records."""
    for name in path:
        if value is None:
            return None
        if isinstance(value, Mapping):
            value = value.get(name)
        else:
            value = getattr(value, name, None)
    return value


def summary(values_ms: list[float]) -> dict[str, float]:
    ordered = sorted(values_ms)
    if not ordered:
        return {"n": 0}

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 2)

    return {
        "n": len(ordered),
        "p50": at(0.5),
        "p95": at(0.95),
        "p99": at(0.99),
        "max": at(1.0),
    }


class ThreadedHashing:
    """The hashing test embedder, run in a worker thread under the runtime's CPU and
    background limiters (as the local model's document batches are). Bound to its
    memory after ``open_memory``; before that it uses a limiter of its own.

    ``cost_s_per_text`` simulates a slower model without using CPU: the worker thread
    sleeps that long per document while it holds the limiters, as a model would."""

    def __init__(self, dimension: int = 384, cost_s_per_text: float = 0.0) -> None:
        self.memory: Any = None
        self.cost_s_per_text = cost_s_per_text
        self.own = (trio.CapacityLimiter(1), None)
        self.embedder = HashingEmbedder(dimension=dimension, run_in_thread=self.run)

    @property
    def runner(self) -> str:
        return "own-limiter" if self.limiters() is self.own else "runtime-limiters"

    def limiters(self) -> tuple[trio.CapacityLimiter, Any]:
        if self.memory is None:
            return self.own
        limiters = runtime_core(self.memory).limiters
        return limiters.cpu, limiters.background

    async def run(self, function: Callable[[], Any]) -> Any:
        cpu, background = self.limiters()

        def work() -> Any:
            vectors = function()
            if self.cost_s_per_text:
                time.sleep(len(vectors) * self.cost_s_per_text)  # noqa: TID251
            return vectors

        # Directly on trio, holding the runtime's fair background slot in this agent's
        # turn, as the embedded model's document batches do.
        if background is None:
            return await trio.to_thread.run_sync(work, limiter=cpu)  # noqa: TID251
        async with background.slot():
            return await trio.to_thread.run_sync(work, limiter=cpu)  # noqa: TID251
