"""Invariant: ExactVectorIndex.search returns exactly the top-k live keys of a brute-force
reference over the float16-rounded vectors, best first, through any sequence of upserts,
replacements, removals and compactions, for both storage types and every metric; invalid
input changes nothing."""

from typing import Literal

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.errors import InvalidInputError
from cairn.vectors import ExactVectorIndex, Metric, Storage

DIM = 8
TOLERANCE = 2e-3
RELATIVE = 1e-3

Op = (
    tuple[Literal["upsert"], list[int], int]
    | tuple[Literal["remove"], list[int]]
    | tuple[Literal["search"], int, int]
    | tuple[Literal["compact"]]
)


def f16_query(
    rng: np.random.Generator, dimension: int = DIM
) -> npt.NDArray[np.float32]:
    # Queries exactly representable in float16, so both kernels see the same numbers.
    return rng.standard_normal(dimension).astype(np.float16).astype(np.float32)


def similarities(
    model: dict[int, npt.NDArray[np.float16]],
    query: npt.NDArray[np.float32],
    metric: Metric,
) -> dict[int, float]:
    q = query.astype(np.float64)
    result = {}
    for key, vector in model.items():
        v = vector.astype(np.float64)
        if metric == "ip":
            result[key] = float(v @ q)
        elif metric == "l2sq":
            result[key] = -float((v - q) @ (v - q))
        else:
            denominator = np.linalg.norm(v) * np.linalg.norm(q)
            result[key] = float(v @ q / denominator) if denominator > 0 else 0.0
    return result


def assert_matches_reference(
    got: list[tuple[int, float]],
    model: dict[int, npt.NDArray[np.float16]],
    query: npt.NDArray[np.float32],
    k: int,
    metric: Metric,
) -> None:
    reference = similarities(model, query, metric)
    assert len(got) == min(k, len(model))
    keys = [key for key, _ in got]
    assert len(set(keys)) == len(keys)
    if not got:
        return
    ranked = sorted(reference.values(), reverse=True)
    kth = ranked[len(got) - 1]
    for (key, similarity), (_, following) in zip(got, [*got[1:], got[-1]], strict=True):
        assert key in reference, f"returned key {key} is not live"
        # f16 storage: the error grows with the magnitude (an inner product near 19
        # is off by about 0.003), so the bound is relative as well as absolute.
        assert similarity == pytest.approx(reference[key], abs=TOLERANCE, rel=RELATIVE)
        assert similarity >= following - TOLERANCE
        # Anything not better than the reference k-th best would be a wrong answer,
        # up to ties within the tolerance.
        assert reference[key] >= kth - TOLERANCE


operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("upsert"),
            st.lists(st.integers(0, 40), min_size=1, max_size=12),
            st.integers(0, 2**32 - 1),
        ),
        st.tuples(st.just("remove"), st.lists(st.integers(0, 45), max_size=10)),
        st.tuples(st.just("search"), st.integers(0, 2**32 - 1), st.integers(0, 15)),
        st.tuples(st.just("compact")),
    ),
    max_size=30,
)


@given(
    ops=operations,
    metric=st.sampled_from(["cos", "ip", "l2sq"]),
    storage=st.sampled_from(["f16", "f32"]),
)
def test_matches_brute_force_reference(
    ops: list[Op], metric: Metric, storage: Storage
) -> None:
    index = ExactVectorIndex(DIM, metric, storage=storage)
    model: dict[int, npt.NDArray[np.float16]] = {}
    for op in ops:
        if op[0] == "upsert":
            _, keys, seed = op
            vectors = np.random.default_rng(seed).standard_normal((len(keys), DIM))
            index.upsert(np.array(keys), vectors.astype(np.float32))
            for key, vector in zip(keys, vectors, strict=True):
                model[key] = vector.astype(np.float16)
        elif op[0] == "remove":
            removed = index.remove(np.array(op[1], dtype=np.int64))
            assert removed == len({key for key in op[1] if key in model})
            for key in op[1]:
                model.pop(key, None)
        elif op[0] == "search":
            _, seed, k = op
            query = f16_query(np.random.default_rng(seed))
            assert_matches_reference(index.search(query, k), model, query, k, metric)
        else:
            index.compact()
        assert len(index) == len(model)
        assert sorted(index.keys().tolist()) == sorted(model)
        stats = index.statistics()
        assert stats.dead <= 0.25 * (stats.live + stats.dead)
    query = f16_query(np.random.default_rng(0))
    assert_matches_reference(index.search(query, 50), model, query, 50, metric)


def unit_rows(rng: np.random.Generator, n: int, d: int) -> npt.NDArray[np.float32]:
    rows = rng.standard_normal((n, d)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def test_float16_top10_agrees_with_float32() -> None:
    rng = np.random.default_rng(42)
    data = unit_rows(rng, 5000, 384)
    queries = unit_rows(rng, 50, 384)
    index = ExactVectorIndex(384, "cos")
    index.upsert(np.arange(5000), data)
    hits = 0
    for query in queries:
        exact = set(np.argsort(-(data @ query))[:10].tolist())
        hits += len(exact & {key for key, _ in index.search(query, 10)})
    assert hits / (10 * len(queries)) >= 0.99


def test_empty_index_and_degenerate_k() -> None:
    index = ExactVectorIndex(4)
    assert index.search(np.ones(4), 10) == []
    assert len(index) == 0
    assert index.keys().tolist() == []
    index.upsert(
        np.array([7, 3]), np.array([[1, 0, 0, 0], [0, 1, 0, 0]], dtype=np.float32)
    )
    assert index.search(np.ones(4), 0) == []
    got = index.search(np.array([1, 0.5, 0, 0]), 100)  # k > len
    assert [key for key, _ in got] == [7, 3]
    with pytest.raises(InvalidInputError):
        index.search(np.ones(4), -1)
    index.remove(np.array([7, 3]))
    assert index.search(np.ones(4), 5) == []


def test_replacing_a_key_uses_the_new_vector() -> None:
    index = ExactVectorIndex(3, "ip")
    index.upsert(np.array([1, 2]), np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32))
    index.upsert(np.array([1]), np.array([[0, 0, 2]], dtype=np.float32))
    assert len(index) == 2
    assert index.search(np.array([0, 0, 1.0]), 1) == [(1, 2.0)]
    assert index.search(np.array([0, 1.0, 0]), 2) == [(2, 1.0), (1, 0.0)]


def test_last_duplicate_in_a_batch_wins() -> None:
    index = ExactVectorIndex(2, "ip")
    index.upsert(
        np.array([5, 5, 6]), np.array([[1, 0], [0, 3], [1, 1]], dtype=np.float32)
    )
    assert len(index) == 2
    assert index.search(np.array([0, 1.0]), 1) == [(5, 3.0)]


def test_remove_counts_live_keys_only() -> None:
    index = ExactVectorIndex(2)
    index.upsert(np.arange(4), np.ones((4, 2), dtype=np.float32))
    assert index.remove(np.array([1, 1, 9])) == 1
    assert index.remove(np.array([1])) == 0
    assert index.remove(np.array([], dtype=np.int64)) == 0
    assert sorted(index.keys().tolist()) == [0, 2, 3]


def test_dead_rows_never_surface_and_compaction_keeps_results() -> None:
    rng = np.random.default_rng(3)
    index = ExactVectorIndex(16, "cos")
    index.upsert(np.arange(1000), unit_rows(rng, 1000, 16))
    removed = rng.choice(
        1000, size=240, replace=False
    )  # just under the compaction bound
    assert index.remove(removed) == 240
    stats = index.statistics()
    assert (stats.dead, stats.compactions) == (240, 0)
    queries = [f16_query(rng, 16) for _ in range(20)]
    before = [index.search(query, 25) for query in queries]
    dead = set(removed.tolist())
    assert all(key not in dead for result in before for key, _ in result)
    index.compact()
    stats = index.statistics()
    assert (stats.live, stats.dead, stats.compactions) == (760, 0, 1)
    assert [index.search(query, 25) for query in queries] == before


def test_removing_over_a_quarter_compacts() -> None:
    index = ExactVectorIndex(4)
    index.upsert(np.arange(100), np.ones((100, 4), dtype=np.float32))
    index.remove(np.arange(30))
    stats = index.statistics()
    assert (stats.live, stats.dead, stats.compactions) == (70, 0, 1)


def test_growth_keeps_earlier_rows() -> None:
    rng = np.random.default_rng(5)
    data = unit_rows(rng, 3000, 8)
    index = ExactVectorIndex(8, "ip")
    for start in range(0, 3000, 64):
        index.upsert(np.arange(start, min(start + 64, 3000)), data[start : start + 64])
    assert index.statistics().capacity >= 3000
    for key in (0, 1234, 2999):
        assert index.search(data[key], 1)[0][0] == key


@pytest.mark.parametrize("metric", ["cos", "ip", "l2sq"])
def test_storage_types_agree(metric: Metric) -> None:
    rng = np.random.default_rng(11)
    data = rng.standard_normal((500, 32)).astype(np.float32)
    half = ExactVectorIndex(32, metric, storage="f16")
    full = ExactVectorIndex(32, metric, storage="f32")
    for index in (half, full):
        index.upsert(np.arange(500), data)
        index.remove(np.arange(0, 500, 7))
    assert half.statistics().bytes < full.statistics().bytes
    for _ in range(10):
        query = f16_query(rng, 32)
        a, b = half.search(query, 10), full.search(query, 10)
        assert [key for key, _ in a] == [key for key, _ in b]
        np.testing.assert_allclose(
            [s for _, s in a], [s for _, s in b], rtol=1e-4, atol=1e-3
        )


@pytest.mark.parametrize(
    ("keys", "vectors"),
    [
        (np.array([1, 2]), np.ones((3, 4), dtype=np.float32)),  # count mismatch
        (np.array([1]), np.ones((1, 5), dtype=np.float32)),  # wrong dimension
        (np.array([1]), np.ones(4, dtype=np.float32)),  # not a matrix
        (np.array([1]), np.array([[1, 2, 3, 4]])),  # integers
        (np.array([1]), np.array([[1, np.nan, 0, 0]], dtype=np.float32)),
        (
            np.array([1]),
            np.array([[1, 1e9, 0, 0]], dtype=np.float32),
        ),  # float16 overflow
        (np.array([1.5]), np.ones((1, 4), dtype=np.float32)),  # float keys
        (np.array([[1]]), np.ones((1, 4), dtype=np.float32)),  # 2-D keys
    ],
)
def test_invalid_upserts_change_nothing(keys: np.ndarray, vectors: np.ndarray) -> None:
    index = ExactVectorIndex(4)
    index.upsert(np.array([9]), np.ones((1, 4), dtype=np.float32))
    version = index.version
    with pytest.raises(InvalidInputError):
        index.upsert(keys, vectors)
    assert index.version == version
    assert index.keys().tolist() == [9]


@pytest.mark.parametrize(
    "query",
    [np.ones(5), np.ones((1, 4)), np.array([1, 2, 3, 4]), np.array([np.inf, 0, 0, 0])],
)
def test_invalid_queries_are_refused(query: np.ndarray) -> None:
    index = ExactVectorIndex(4)
    index.upsert(np.array([1]), np.ones((1, 4), dtype=np.float32))
    with pytest.raises(InvalidInputError):
        index.search(query, 1)


def test_invalid_construction_is_refused() -> None:
    for args in ((0,), (4, "dot"), (70_000,)):
        with pytest.raises(InvalidInputError):
            ExactVectorIndex(*args)
    with pytest.raises(InvalidInputError):
        ExactVectorIndex(4, storage="f64")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="unique"):
        ExactVectorIndex.from_arrays(
            np.array([1, 1]), np.ones((2, 4), dtype=np.float32)
        )


def test_export_is_a_read_only_view_of_live_rows() -> None:
    index = ExactVectorIndex(2, storage="f32")
    index.upsert(
        np.array([1, 2, 3]), np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
    )
    index.remove(np.array([2]))
    exported = index.export()
    assert exported.keys.tolist() == [1, 3]
    assert exported.vectors.dtype == np.float16
    np.testing.assert_array_equal(exported.vectors, [[1, 0], [1, 1]])
    assert exported.version == index.version
    with pytest.raises(ValueError, match="read-only"):
        exported.keys[0] = 5


def test_from_arrays_equals_upserts() -> None:
    rng = np.random.default_rng(8)
    data = rng.standard_normal((200, 8)).astype(np.float32)
    built = ExactVectorIndex.from_arrays(np.arange(200) * 3, data, metric="ip")
    grown = ExactVectorIndex(8, "ip")
    grown.upsert(np.arange(200) * 3, data)
    query = f16_query(rng)
    assert built.search(query, 20) == grown.search(query, 20)


@pytest.mark.parametrize("storage", ["f16", "f32"])
def test_equal_similarities_rank_by_key_whatever_the_row_order(
    storage: Storage,
) -> None:
    same = np.ones((1, 8), dtype=np.float32)
    other = np.eye(8, dtype=np.float32)[:1]
    orders = ([7, 3, 11, 5], [5, 11, 3, 7])
    results = []
    for order in orders:
        index = ExactVectorIndex(8, "cos", storage=storage)
        for key in order:
            index.upsert([key], other if key == 5 else same)
        results.append(index.search(np.ones(8), k=4))
    assert results[0] == results[1]
    assert [key for key, _ in results[0]] == [3, 7, 11, 5]
