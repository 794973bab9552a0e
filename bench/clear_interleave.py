"""Ingest latency of one agent while ANOTHER agent's large clear runs.

Agent ``A`` holds ``--claims`` synthetic claims (with stored claim vectors, so the vector
phase of the clear has work), bulk-loaded through the store functions as
bench/clear_under_load.py does (the runtime closed meanwhile); agent ``B`` has
``--b-turns`` turns ingested through the API. After a reopen, single turns are ingested
into ``B`` at a steady pace (one every ``--interval-s``, each in its own task, so a slow
call does not delay the next), measured so:

* ``ingest_call_ms``: the ``ingest`` call (the turn is stored);
* ``settle_ms``: ingest call → extracted and embedded, taken by one ``wait_idle("B")``
  at a time: a turn is settled when the first wait begun after its ingest returned comes
  back (an upper bound; one waiter per turn would add polling load when turns pile up);
* ``cursor_settle_ms``: ingest call → the session cursor (``session_cursor``, polled
  every ``--poll-s``) passes the turn: per turn, even while later turns keep the agent
  from ever being idle;
* ``stored_turns_per_s``: ingest calls returning per second while the pacing runs,
  against ``offered_turns_per_s``: when it is lower, turns queue and latency grows with
  the phase's length;

first with no clear running (``--baseline-s``), then while ``clear("A")`` runs, with the
clear's duration and the event-loop lag (a 1 ms trio sleep's lateness) in both phases.
Only the public API is measured; embeddings come from the hashing test embedder in a
worker thread (under the runtime's CPU limiters when it exposes them).

    python bench/clear_interleave.py [--claims 100000] [--interval-s 0.05]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import trio
from bench_support import ThreadedHashing, load, pick, summary

from cairn import MemoryConfig, Turn, open_memory
from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.domain.ids import AgentId
from cairn.store.agents import ensure_agent
from cairn.store.claims import insert_claims
from cairn.store.connection import open_connection
from cairn.store.embeddings import store_embeddings
from cairn.testing import FixedDomainClock
from cairn.vectors.codec import encode_vector
from cairn.vectors.keys import EmbedTarget

if TYPE_CHECKING:
    from collections.abc import Callable

    from cairn.vectors.identity import EmbeddingIdentity

A, B = "A", "B"
CHUNK = 5_000
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TOPICS = ["tea", "hiking", "cello", "Lisbon", "bonsai", "ramen", "chess", "sailing"]


def vocabulary(rng: np.random.Generator, size: int = 8_000) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters, rng.integers(3, 10))))
    return sorted(words)


def sentence(rng: np.random.Generator, words: list[str], length: int) -> str:
    ranks = np.minimum(rng.zipf(1.3, length), len(words)) - 1
    return " ".join(words[r] for r in ranks)


def database_file(directory: str) -> Path:
    """The runtime's SQLite file (``cairn.db`` today; the one ``*.db`` otherwise)."""
    default = Path(directory) / "cairn.db"
    if default.exists():
        return default
    (found,) = Path(directory).glob("*.db")
    return found


def bulk_load_claims(
    path: Path, n: int, identity: EmbeddingIdentity, seed: int
) -> None:
    """N claims of agent A, with claim vectors, in large transactions on a connection of
    its own (the runtime is closed meanwhile)."""
    rng = np.random.default_rng(seed)
    words = vocabulary(rng)
    agent = AgentId(A)
    connection = open_connection(path, synchronous_full=False)
    try:
        for start in range(0, n, CHUNK):
            drafts = [
                ClaimDraft(ClaimKind.FACT, f"{sentence(rng, words, 12)} #{i}", ())
                for i in range(start, min(n, start + CHUNK))
            ]
            vectors = rng.standard_normal((len(drafts), identity.dimension)).astype(
                np.float32
            )
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            with connection:
                ensure_agent(connection, agent, NOW)
                committed = insert_claims(connection, agent, drafts, {}, NOW)
                store_embeddings(
                    connection,
                    agent,
                    identity,
                    [
                        (EmbedTarget.CLAIM, rowid, encode_vector(vector))
                        for (rowid, _), vector in zip(
                            committed.inserted, vectors, strict=True
                        )
                    ],
                )
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        connection.close()


def b_turn(event_id: str, index: int, session: str | None = None) -> Turn:
    topic = TOPICS[index % len(TOPICS)]
    return Turn(
        event_id,
        session or f"s{index // 50}",
        "user",
        f"I tried {topic} again today, round {index}, and liked it.",
        NOW,
        "Bo",
    )


class Lag:
    """Lateness of a 1 ms trio sleep while ``active``: the loop's responsiveness."""

    def __init__(self) -> None:
        self.samples_ms: list[float] = []
        self.active = False

    async def run(self) -> None:
        while True:
            started = time.perf_counter()
            await trio.sleep(0.001)
            if self.active:
                self.samples_ms.append((time.perf_counter() - started - 0.001) * 1000)


class Settler:
    """One ``wait_idle("B")`` at a time: a turn is settled when the first wait that began
    after its ingest returned comes back (an upper bound, at most one wait too late).
    One waiter instead of one per turn, so waiters polling the pending work do not add
    load of their own when turns pile up."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.waiting: list[float] = []  # start times of stored, not yet settled turns
        self.settles_ms: list[float] = []
        self.arrived = trio.Event()
        self.closed = False

    def stored(self, started: float) -> None:
        self.waiting.append(started)
        self.arrived.set()

    def close(self) -> None:
        self.closed = True
        self.arrived.set()

    async def run(self) -> None:
        while self.waiting or not self.closed:
            if not self.waiting:
                self.arrived = trio.Event()
                await self.arrived.wait()
                continue
            batch, self.waiting = self.waiting, []
            await self.memory.wait_idle(B)
            now = time.perf_counter()
            self.settles_ms.extend((now - started) * 1000 for started in batch)


class CursorWatch:
    """Per-turn settle from ``session_cursor`` (the session's last event whose extraction
    and embedding are done), polled every ``poll_s``: the paced turns share one session,
    stored in index order, so the cursor at turn ``i`` settles turns ``0..i``."""

    def __init__(self, memory: Any, session: str, poll_s: float) -> None:
        self.memory, self.session, self.poll_s = memory, session, poll_s
        self.started: dict[int, float] = {}
        self.settles_ms: dict[int, float] = {}
        self.upto = -1

    async def poll(self) -> None:
        cursor = await self.memory.session_cursor(B, self.session)
        now = time.perf_counter()
        if cursor is None:
            return
        index = int(cursor.rsplit("-", 1)[1])
        for earlier in range(self.upto + 1, index + 1):
            if earlier in self.started:
                self.settles_ms[earlier] = (now - self.started[earlier]) * 1000
        self.upto = max(self.upto, index)

    async def run(self) -> None:
        while True:
            await self.poll()
            await trio.sleep(self.poll_s)


async def paced_ingests(
    memory: Any,
    prefix: str,
    interval_s: float,
    keep_going: Callable[[int], bool],
    poll_s: float,
) -> dict[str, Any]:
    """Start one ingest of B every ``interval_s`` (trio clock) while ``keep_going(i)``;
    each task times its ingest call, the settler and the cursor watch their settle."""
    calls: dict[int, float] = {}
    returned: list[float] = []
    settler = Settler(memory)
    session = f"paced-{prefix}"
    watch = CursorWatch(memory, session, poll_s)

    async def one(index: int) -> None:
        started = watch.started[index] = time.perf_counter()
        await memory.ingest(B, [b_turn(f"{prefix}-{index}", index, session)])
        returned.append(time.perf_counter())
        calls[index] = (returned[-1] - started) * 1000
        settler.stored(started)

    began, began_wall = trio.current_time(), time.perf_counter()
    index = 0
    async with trio.open_nursery() as outer:
        outer.start_soon(watch.run)
        async with trio.open_nursery() as settling:
            settling.start_soon(settler.run)
            async with trio.open_nursery() as nursery:
                while keep_going(index):
                    nursery.start_soon(one, index)
                    index += 1
                    await trio.sleep_until(began + index * interval_s)
                stopped, stopped_wall = trio.current_time(), time.perf_counter()
            settler.close()
        await watch.poll()  # everything has settled: the last turns are seen now
        outer.cancel_scope.cancel()
    pacing_s = stopped - began
    return {
        "turns": index,
        "ingest_call_ms": summary(list(calls.values())),
        "settle_ms": summary(settler.settles_ms),
        "cursor_settle_ms": summary(list(watch.settles_ms.values())),
        "pacing_s": round(pacing_s, 2),
        "offered_turns_per_s": round(index / pacing_s, 1),
        # Ingest calls that returned while the pacing ran: B's write throughput meanwhile.
        "stored_turns_per_s": round(
            sum(began_wall <= at <= stopped_wall for at in returned) / pacing_s, 1
        ),
        "first_ingest_call_ms": round(calls[0], 2) if 0 in calls else None,
        "tail_s": round(trio.current_time() - stopped, 3),
    }


async def prepare(
    directory: str,
    config: MemoryConfig,
    clock: FixedDomainClock,
    hashing: ThreadedHashing,
    arguments: argparse.Namespace,
) -> dict[str, Any]:
    """B's turns through the API, then A's claims straight into the closed database."""
    result: dict[str, Any] = {}
    async with open_memory(
        directory, config, clock=clock, embedder=hashing.embedder
    ) as memory:
        hashing.memory = memory
        started = time.perf_counter()
        turns = [b_turn(f"seed-{i}", i) for i in range(arguments.b_turns)]
        for start in range(0, len(turns), 100):
            await memory.ingest(B, turns[start : start + 100])
        await memory.wait_idle(B)
        result["b_load_s"] = round(time.perf_counter() - started, 2)
    started = time.perf_counter()
    await trio.to_thread.run_sync(  # noqa: TID251 - the runtime is closed here
        bulk_load_claims,
        database_file(directory),
        arguments.claims,
        hashing.embedder.identity,
        arguments.seed,
    )
    result["a_bulk_load_s"] = round(time.perf_counter() - started, 2)
    return result


async def interleave(
    memory: Any, nursery: trio.Nursery, arguments: argparse.Namespace
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    lag = Lag()
    nursery.start_soon(lag.run)
    for index in range(10):  # warm B's path once
        await memory.ingest(B, [b_turn(f"warm-{index}", index)])
        await memory.wait_idle(B)

    interval = arguments.interval_s
    ticks = max(1, round(arguments.baseline_s / interval))
    lag.active = True
    result["no_clear"] = await paced_ingests(
        memory, "base", interval, lambda index: index < ticks, arguments.poll_s
    )
    lag.active = False
    result["no_clear"]["loop_lag_ms"] = summary(lag.samples_ms)

    lag.samples_ms = []
    finished = trio.Event()
    clear: dict[str, Any] = {}

    async def run_clear() -> None:
        started = time.perf_counter()
        try:
            report = await memory.clear(A)
        finally:
            finished.set()  # the pacing stops even if the clear fails
        clear["clear_s"] = round(time.perf_counter() - started, 2)
        clear["claims_deleted"] = pick(report, "claims_deleted")

    lag.active = True
    nursery.start_soon(run_clear)
    await trio.lowlevel.checkpoint()  # let the clear start first
    result["during_clear"] = await paced_ingests(
        memory,
        "during",
        interval,
        lambda _: not finished.is_set(),
        arguments.poll_s,
    )
    lag.active = False
    await finished.wait()
    result["during_clear"]["loop_lag_ms"] = summary(lag.samples_ms)
    result.update(clear)
    if clear.get("claims_deleted"):
        result["clear_claims_per_s"] = round(clear["claims_deleted"] / clear["clear_s"])
    return result


async def measure(arguments: argparse.Namespace) -> dict[str, Any]:
    config = MemoryConfig(recall_wait_s=60.0, maintenance_interval_s=3600)
    hashing = ThreadedHashing()
    clock = FixedDomainClock(NOW)
    with (
        trio.fail_after(arguments.timeout_s),
        tempfile.TemporaryDirectory(prefix="cairn-interleave-") as directory,
    ):
        result = await prepare(directory, config, clock, hashing, arguments)
        async with (
            open_memory(
                directory, config, clock=clock, embedder=hashing.embedder
            ) as memory,
            trio.open_nursery() as nursery,
        ):
            hashing.memory = memory
            result["embedder_runner"] = hashing.runner
            started = time.perf_counter()
            await memory.wait_idle(A)  # starts A: its projection loads (warm-up)
            await memory.wait_idle(B)
            result["warm_up_s"] = round(time.perf_counter() - started, 2)
            result.update(await interleave(memory, nursery, arguments))
            nursery.cancel_scope.cancel()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--b-turns", type=int, default=300)
    parser.add_argument("--interval-s", type=float, default=0.05)
    parser.add_argument(
        "--baseline-s", type=float, default=5.0, help="pacing time with no clear"
    )
    parser.add_argument(
        "--poll-s", type=float, default=0.02, help="session cursor poll interval"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--timeout-s", type=float, default=1800.0, help="bound of the whole run"
    )
    arguments = parser.parse_args()
    result: dict[str, Any] = {
        "bench": "clear_interleave",
        "claims": arguments.claims,
        "b_turns": arguments.b_turns,
        "interval_s": arguments.interval_s,
        "cpus": os.cpu_count(),
        "loadavg_start": load(),
    }
    result.update(trio.run(measure, arguments))
    result["loadavg_end"] = load()
    json.dump(result, sys.stdout)
    print(flush=True)


if __name__ == "__main__":
    main()
