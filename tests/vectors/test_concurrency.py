"""Invariant: searches running concurrently with one writer (upserts, replacements,
removals, compactions) never crash, never return a dead key, never return a torn row, and
always return min(k, live) distinct keys best first, because readers only ever see one
published snapshot.

Two tests: real threads hammering the index, and a deterministic one that runs a search
at every line the writer executes inside cairn/vectors/index.py and requires the exact top
k of the state before or after that write, so a write that exposes a half-applied state
fails every time rather than when the scheduler happens to switch.
"""

import itertools
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import cairn.vectors.index as index_module
from cairn.vectors import ExactVectorIndex, Storage

DIM = 16
K = 10
TOLERANCE = 2e-3

Model = dict[int, npt.NDArray[np.float16]]


class Harness:
    """An "ip" index, the state it should hold, and every version each key ever had.

    Stable keys (short vectors, never removed) keep at least K keys live. Churned keys get
    long vectors, so under "ip" they crowd the top k and every removal or replacement lands
    inside the readers' candidate lists.
    """

    def __init__(self, storage: Storage, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.index = ExactVectorIndex(DIM, "ip", storage=storage)
        self.versions: dict[int, list[npt.NDArray[np.float16]]] = {}
        self.model: Model = {}
        self.before_write: Callable[[Model, Model], None] | None = None
        self.upsert(list(range(200)), scale=1.0)

    def upsert(self, keys: list[int], scale: float) -> None:
        rows = [
            (scale * self.rng.standard_normal(DIM)).astype(np.float16) for _ in keys
        ]
        for key, row in zip(keys, rows, strict=True):
            # Recorded before publishing, so a reader can always find the version it saw.
            self.versions.setdefault(key, []).append(row)
        after = {**self.model, **dict(zip(keys, rows, strict=True))}
        self._write(after, lambda: self.index.upsert(np.array(keys), np.stack(rows)))

    def remove(self, keys: list[int]) -> None:
        gone = set(keys)
        after = {key: row for key, row in self.model.items() if key not in gone}
        self._write(after, lambda: self.index.remove(np.array(keys)))

    def churn(self, iterations: int) -> None:
        """Per iteration append 8 keys and replace 4; every other one remove 10 for good."""
        live: list[int] = []
        next_key = 10_000
        for iteration in range(iterations):
            fresh = list(range(next_key, next_key + 8))
            next_key += 8
            self.upsert(fresh + live[-4:], scale=8.0)
            live.extend(fresh)
            if iteration % 2:
                gone, live = live[:10], live[10:]
                self.remove(gone)

    def _write(self, after: Model, write: Callable[[], object]) -> None:
        if self.before_write is not None:
            self.before_write(self.model, after)
        write()
        self.model = after


def _query(rng: np.random.Generator) -> npt.NDArray[np.float32]:
    return rng.standard_normal(DIM).astype(np.float16).astype(np.float32)


def _check_against_versions(
    harness: Harness, query: npt.NDArray[np.float32], dead: set[int]
) -> list[str]:
    got = harness.index.search(query, K)
    problems = []
    keys = [key for key, _ in got]
    if len(got) != K or len(set(keys)) != K:
        problems.append(f"expected {K} distinct keys, got {keys}")
    if dead & set(keys):
        problems.append(f"dead keys returned: {dead & set(keys)}")
    sims = [similarity for _, similarity in got]
    if any(a < b - TOLERANCE for a, b in itertools.pairwise(sims)):
        problems.append(f"not best first: {sims}")
    for key, similarity in got:
        rows = harness.versions.get(key, [])
        if not any(
            abs(similarity - float(row.astype(np.float64) @ query)) <= TOLERANCE
            for row in rows
        ):
            problems.append(
                f"key {key}: similarity {similarity} matches no version (torn row?)"
            )
    return problems


@pytest.mark.parametrize("storage", ["f16", "f32"])
def test_threaded_readers_hammer_one_writer(storage: Storage) -> None:
    harness = Harness(storage, seed=2024)
    doomed = list(range(1000, 1100))
    harness.upsert(doomed, scale=8.0)
    harness.remove(doomed)  # dead before any reader starts: must never appear
    failures: list[str] = []
    start = threading.Barrier(4)

    def writer() -> None:
        start.wait()
        harness.churn(300)

    def reader(seed: int) -> None:
        rng = np.random.default_rng(seed)
        start.wait()
        for _ in range(400):
            try:
                failures.extend(
                    _check_against_versions(harness, _query(rng), set(doomed))
                )
            except Exception as error:  # noqa: BLE001 - a dying thread would hide it
                failures.append(f"search raised {error!r}")
                return

    threads = [threading.Thread(target=writer)]
    threads += [threading.Thread(target=reader, args=(seed,)) for seed in range(3)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often so reads land mid-write
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)

    assert failures == []
    stats = harness.index.statistics()
    assert stats.compactions >= 1  # the hammer crossed compactions too
    assert (
        stats.live
        == len(harness.index)
        == len(harness.model)
        == 200 + 300 * 8 - 150 * 10
    )


def _scores(
    model: Model, queries: list[npt.NDArray[np.float32]]
) -> list[dict[int, float]]:
    keys = list(model)
    matrix = np.stack([model[key] for key in keys]).astype(np.float64)
    return [
        dict(zip(keys, (matrix @ query).tolist(), strict=True)) for query in queries
    ]


def _is_top_k_of(got: list[tuple[int, float]], reference: dict[int, float]) -> bool:
    if len(got) != min(K, len(reference)):
        return False
    kth = sorted(reference.values(), reverse=True)[len(got) - 1]
    return all(
        key in reference
        and abs(similarity - reference[key]) <= TOLERANCE
        and reference[key] >= kth - TOLERANCE
        for key, similarity in got
    )


@pytest.mark.parametrize("storage", ["f16", "f32"])
def test_search_between_any_two_lines_of_a_write(storage: Storage) -> None:
    harness = Harness(storage, seed=99)
    rng = np.random.default_rng(5)
    queries = [_query(rng) for _ in range(4)]
    states: list[list[dict[int, float]]] = []
    failures: list[str] = []
    probes = itertools.count()

    def before_write(before: Model, after: Model) -> None:
        states[:] = [_scores(before, queries), _scores(after, queries)]

    def tracer(frame: FrameType, event: str, _: object) -> Any:
        if frame.f_code.co_filename != index_module.__file__:
            return None
        if event == "line":  # tracing is off while a trace function runs: no recursion
            which = next(probes) % len(queries)
            got = harness.index.search(queries[which], K)
            if not any(_is_top_k_of(got, state[which]) for state in states):
                failures.append(f"query {which}: {got} is the top k of neither state")
        return tracer

    harness.before_write = before_write
    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        harness.churn(60)
    finally:
        sys.settrace(previous)

    assert failures == []
    assert next(probes) > 1000
    assert harness.index.statistics().compactions >= 1
