"""The per-agent exact vector index: a flat matrix searched by brute force.

Why flat and exact: per-agent collections are small (10k-100k vectors), where one SIMD scan
costs milliseconds, needs no training and has recall 1 by construction. An HNSW graph
(``usearch.Index.add``) inserts at about 1.3k vectors/s; appending rows to a matrix sustains
hundreds of thousands per second.

Layout: a C-contiguous ``(capacity, dimension)`` matrix that doubles when full, an int64
``keys`` column, a boolean ``live`` column and, for float32 storage, row norms. Rows past the
row count are spare capacity. Every vector is rounded to float16 on the way in whatever the
storage type, so the in-memory index always equals what the float16 files and blobs hold.

Concurrency contract: exactly one writer thread at a time (the caller guarantees it) and
any number of concurrent reader threads calling :meth:`search`, :meth:`keys`,
:meth:`export`, :meth:`statistics` or ``len()``. There are no locks. Readers read one
immutable :class:`_Snapshot` reference; the writer never changes memory a published
snapshot can see:

* Rows below a snapshot's row count are write-once. Appends go into spare capacity past
  the published row count, and only then is a new snapshot published.
* Replacing a key appends its new vector and marks the old row dead; rows are never
  overwritten, so a reader can never see a torn vector.
* Marking rows dead copies the ``live`` column first (a few hundred kilobytes at 100k
  rows), so the dead count a snapshot carries always matches the mask it carries.
* Growing and compacting build new arrays and swap the reference; old snapshots keep the
  old arrays alive for as long as a reader holds them.

A reader therefore sees the index exactly as of one published write: never a dead key,
never a half-applied batch. Results may be one write stale, which is fine because callers
re-validate candidates against SQLite anyway.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeVar, cast

import attrs
import numpy as np
import numpy.typing as npt

from cairn.errors import InvalidInputError
from cairn.vectors.identity import MAX_DIMENSION, METRICS, Metric
from cairn.vectors.kernels import numpy_topk, usearch_topk

__all__ = ["ExactVectorIndex", "ExportedVectors", "IndexStatistics", "Storage"]

Storage = Literal["f16", "f32"]
"""In-memory row type: ``f16`` halves memory (usearch kernel), ``f32`` uses BLAS."""

_STORAGE_DTYPES: Final[dict[str, type[np.floating[Any]]]] = {
    "f16": np.float16,
    "f32": np.float32,
}

# Smallest allocation: many agents hold a handful of vectors.
_MIN_CAPACITY: Final = 64

# Compact once more than this fraction of rows is dead: searches scan dead rows too.
_MAX_DEAD_FRACTION: Final = 0.25

# float16 exponent bits; all ones means infinity or NaN. Testing bits is faster than
# np.isfinite, which numpy implements for float16 by converting every element.
_F16_EXPONENT: Final = 0x7C00
_FINITE_CHUNK: Final = 1 << 17  # elements per slice of the finiteness check


@attrs.frozen(eq=False)
class _Snapshot:
    """One published state. Readers hold it; nothing it references below ``rows`` changes."""

    matrix: npt.NDArray[Any]
    keys: npt.NDArray[np.int64]
    live: npt.NDArray[np.bool_]
    norms: npt.NDArray[np.float32] | None
    rows: int
    live_count: int
    version: int
    compactions: int

    @property
    def capacity(self) -> int:
        return int(self.matrix.shape[0])


@attrs.frozen
class IndexStatistics:
    """Size of an index: live and dead rows, allocated rows, bytes held, compactions run."""

    live: int
    dead: int
    capacity: int
    bytes: int
    compactions: int


@attrs.frozen(eq=False)
class ExportedVectors:
    """The live contents of one snapshot, as persisted: keys, float16 rows, version.

    Arrays are read-only; they may be views of the index's own write-once rows.
    """

    keys: npt.NDArray[np.int64]
    vectors: npt.NDArray[np.float16]
    version: int


def _check_dimension(dimension: object) -> None:
    if not isinstance(dimension, int) or isinstance(dimension, bool):
        raise InvalidInputError(
            f"dimension must be an int, not {type(dimension).__name__}"
        )
    if not 0 < dimension <= MAX_DIMENSION:
        raise InvalidInputError(
            f"dimension must be in 1..{MAX_DIMENSION}, got {dimension}"
        )


def _as_keys(keys: npt.ArrayLike) -> npt.NDArray[np.int64]:
    array = np.asarray(keys)
    if array.ndim != 1:
        raise InvalidInputError(
            f"keys must be one-dimensional, got shape {array.shape}"
        )
    if array.size == 0:
        return np.empty(0, dtype=np.int64)
    if not np.issubdtype(array.dtype, np.integer):
        raise InvalidInputError(f"keys must be integers, got {array.dtype}")
    if array.dtype == np.uint64 and int(array.max()) > np.iinfo(np.int64).max:
        raise InvalidInputError("keys must fit in int64")
    return array.astype(np.int64, copy=False)


def _finite_f16(half: npt.NDArray[np.float16]) -> bool:
    # In chunks: whole-matrix temporaries (115 MB at 100k x 384) cost more in first-touch
    # page faults than the check itself (measured 320 ms vs 30 ms on a fresh process).
    bits = half.reshape(-1).view(np.uint16)
    for start in range(0, bits.size, _FINITE_CHUNK):
        chunk = bits[start : start + _FINITE_CHUNK]
        if ((chunk & _F16_EXPONENT) == _F16_EXPONENT).any():
            return False
    return True


def _row_norms(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    squared: npt.NDArray[np.float32] = np.einsum("ij,ij->i", matrix, matrix)
    return np.sqrt(squared)


_Scalar = TypeVar("_Scalar", bound=np.generic)


def _readonly(array: npt.NDArray[_Scalar]) -> npt.NDArray[_Scalar]:
    view = array.view()
    view.flags.writeable = False
    return view


class ExactVectorIndex:
    """Exact nearest-neighbour index over int64 keys; see the module docstring.

    ``storage="f16"`` (default) keeps float16 rows and searches them with usearch's SIMD
    brute force. ``storage="f32"`` doubles the memory and searches with BLAS, which is faster
    on some machines and releases the GIL while scanning. Results agree either way because
    vectors are rounded to float16 on the way in.
    """

    __slots__ = ("_dimension", "_dtype", "_metric", "_row_of", "_snapshot", "_storage")

    def __init__(
        self,
        dimension: int,
        metric: Metric = "cos",
        *,
        storage: Storage = "f16",
        capacity: int = 0,
    ) -> None:
        _check_dimension(dimension)
        if metric not in METRICS:
            raise InvalidInputError(
                f"metric must be one of {sorted(METRICS)}, got {metric!r}"
            )
        if storage not in _STORAGE_DTYPES:
            raise InvalidInputError(f"storage must be 'f16' or 'f32', got {storage!r}")
        if capacity < 0:
            raise InvalidInputError(f"capacity must not be negative, got {capacity}")
        self._dimension = dimension
        self._metric: Metric = metric
        self._storage: Storage = storage
        self._dtype = _STORAGE_DTYPES[storage]
        # Writer-only: key -> row of its live vector. Readers never touch it.
        self._row_of: dict[int, int] = {}
        self._snapshot = _Snapshot(
            matrix=np.empty((capacity, dimension), dtype=self._dtype),
            keys=np.empty(capacity, dtype=np.int64),
            live=np.zeros(capacity, dtype=np.bool_),
            norms=self._new_norms(capacity),
            rows=0,
            live_count=0,
            version=0,
            compactions=0,
        )

    @classmethod
    def from_arrays(
        cls,
        keys: npt.ArrayLike,
        vectors: npt.ArrayLike,
        *,
        metric: Metric = "cos",
        storage: Storage = "f16",
        copy: bool = True,
    ) -> ExactVectorIndex:
        """Build an index from unique ``keys`` and their ``(n, dimension)`` ``vectors``.

        With ``copy=False`` a C-contiguous float16 ``vectors`` array is adopted as the
        index's matrix without copying (the loader's fast path): the caller hands over
        ownership and must never write to it again.
        """
        array = np.asarray(vectors)
        if array.ndim != 2:
            raise InvalidInputError(
                f"vectors must be a (n, dimension) matrix, got shape {array.shape}"
            )
        index = cls(int(array.shape[1]), metric, storage=storage)
        key_array = _as_keys(keys)
        matrix = index._prepare_rows(array, len(key_array), copy=copy)
        key_list = key_array.tolist()
        row_of = dict(zip(key_list, range(len(key_list)), strict=True))
        if len(row_of) != len(key_list):
            raise InvalidInputError("keys must be unique")
        count = len(key_list)
        index._row_of = row_of
        index._snapshot = _Snapshot(
            matrix=matrix,
            keys=np.array(key_array, dtype=np.int64, copy=True),
            live=np.ones(count, dtype=np.bool_),
            norms=_row_norms(matrix) if storage == "f32" else None,
            rows=count,
            live_count=count,
            version=0,
            compactions=0,
        )
        return index

    # ------------------------------------------------------------------ reader side

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def metric(self) -> Metric:
        return self._metric

    @property
    def storage(self) -> Storage:
        return self._storage

    @property
    def version(self) -> int:
        """Counts published writes; equal versions mean equal contents (dirty tracking)."""
        return self._snapshot.version

    def __len__(self) -> int:
        return self._snapshot.live_count

    def keys(self) -> npt.NDArray[np.int64]:
        """A copy of the live keys, in no particular order."""
        snap = self._snapshot
        return snap.keys[: snap.rows][snap.live[: snap.rows]]

    def statistics(self) -> IndexStatistics:
        snap = self._snapshot
        held = snap.matrix.nbytes + snap.keys.nbytes + snap.live.nbytes
        if snap.norms is not None:
            held += snap.norms.nbytes
        return IndexStatistics(
            live=snap.live_count,
            dead=snap.rows - snap.live_count,
            capacity=snap.capacity,
            bytes=held,
            compactions=snap.compactions,
        )

    def export(self) -> ExportedVectors:
        """The live keys and float16 rows of the current snapshot, for persistence.

        Without dead rows and with float16 storage this copies nothing: published rows are
        write-once, so views of them stay valid while the writer carries on.
        """
        snap = self._snapshot
        rows = snap.rows
        if snap.live_count == rows:
            keys = snap.keys[:rows]
            matrix = snap.matrix[:rows]
        else:
            chosen = np.flatnonzero(snap.live[:rows])
            keys = snap.keys[chosen]
            matrix = snap.matrix[chosen]
        vectors = cast("npt.NDArray[np.float16]", matrix.astype(np.float16, copy=False))
        return ExportedVectors(
            keys=_readonly(keys), vectors=_readonly(vectors), version=snap.version
        )

    def search(self, query: npt.ArrayLike, k: int) -> list[tuple[int, float]]:
        """The ``k`` live keys most similar to ``query``, best first, as ``(key, similarity)``.

        Exact. Similarity is larger-is-better: cosine similarity for ``cos``, the dot
        product for ``ip``, the negated squared distance for ``l2sq``. Returns fewer than
        ``k`` pairs only when fewer keys are live. Oversampling for later filtering is the
        caller's job. Safe to call from any number of threads while one thread writes.
        """
        if k < 0:
            raise InvalidInputError(f"k must not be negative, got {k}")
        prepared = self._prepare_query(query)
        snap = self._snapshot
        if k == 0 or snap.live_count == 0:
            return []
        rows = snap.rows
        dead = rows - snap.live_count
        # Dead rows stay in the scanned prefix until compaction; asking for k + dead
        # candidates guarantees k live ones survive the filter below.
        count = min(k + dead, rows)
        if snap.norms is None:
            found, similarities = usearch_topk(
                snap.matrix[:rows], prepared, count, self._metric
            )
        else:
            found, similarities = numpy_topk(
                snap.matrix[:rows], snap.norms[:rows], prepared, count, self._metric
            )
        if dead:
            alive = snap.live[found]
            found = found[alive]
            similarities = similarities[alive]
        found = found[:k]
        pairs = list(
            zip(snap.keys[found].tolist(), similarities[:k].tolist(), strict=True)
        )
        # Equal similarities rank by key, not by row position, so a projection rebuilt
        # from blobs or imported (other row order) ranks exactly like the one it replaces.
        pairs.sort(key=lambda pair: (-pair[1], pair[0]))
        return pairs

    # ------------------------------------------------------------------ writer side

    def upsert(self, keys: npt.ArrayLike, vectors: npt.ArrayLike) -> None:
        """Insert or replace ``keys`` with the rows of ``vectors`` (``(n, dimension)``).

        Floating-point input of any width; rounded to float16. When a key repeats within
        the batch the last row wins. Nothing changes if validation fails. Writer only.
        """
        key_array = _as_keys(keys)
        rows_in = self._prepare_rows(np.asarray(vectors), len(key_array), copy=False)
        if len(key_array) == 0:
            return
        key_list = key_array.tolist()
        latest = dict(zip(key_list, range(len(key_list)), strict=True))
        if len(latest) != len(key_list):
            pick = np.fromiter(
                sorted(latest.values()), dtype=np.intp, count=len(latest)
            )
            key_array, rows_in = key_array[pick], rows_in[pick]
            key_list = key_array.tolist()
        row_of = self._row_of
        replaced = [row_of[key] for key in key_list if key in row_of]

        snap = self._snapshot
        start = snap.rows
        end = start + len(key_list)
        live = snap.live
        if replaced:
            live = live.copy()  # never flip bits a published snapshot can see
            live[replaced] = False
        matrix, keys_column, norms = snap.matrix, snap.keys, snap.norms
        if end > snap.capacity:
            matrix, keys_column, live, norms = self._grown(snap, live, end)
        matrix[start:end] = rows_in
        keys_column[start:end] = key_array
        live[start:end] = True
        if norms is not None:
            norms[start:end] = _row_norms(rows_in)
        row_of.update(zip(key_list, range(start, end), strict=True))
        self._publish(
            snap,
            matrix=matrix,
            keys=keys_column,
            live=live,
            norms=norms,
            rows=end,
            live_count=snap.live_count + len(key_list) - len(replaced),
        )
        self._compact_if_sparse()

    def remove(self, keys: npt.ArrayLike) -> int:
        """Remove ``keys`` (absent ones are ignored); return how many were live. Writer only."""
        key_array = _as_keys(keys)
        row_of = self._row_of
        dropped = [
            row_of.pop(key)
            for key in dict.fromkeys(key_array.tolist())
            if key in row_of
        ]
        if not dropped:
            return 0
        snap = self._snapshot
        live = snap.live.copy()  # never flip bits a published snapshot can see
        live[dropped] = False
        self._publish(snap, live=live, live_count=snap.live_count - len(dropped))
        self._compact_if_sparse()
        return len(dropped)

    def compact(self) -> None:
        """Rewrite the live rows into fresh arrays, dropping dead ones. Writer only."""
        snap = self._snapshot
        if snap.rows == snap.live_count:
            return
        chosen = np.flatnonzero(snap.live[: snap.rows])
        count = len(chosen)
        capacity = max(_MIN_CAPACITY, count + count // 4)
        matrix = np.empty((capacity, self._dimension), dtype=self._dtype)
        np.take(snap.matrix, chosen, axis=0, out=matrix[:count])
        keys = np.empty(capacity, dtype=np.int64)
        np.take(snap.keys, chosen, out=keys[:count])
        live = np.zeros(capacity, dtype=np.bool_)
        live[:count] = True
        norms = None
        if snap.norms is not None:
            norms = np.empty(capacity, dtype=np.float32)
            np.take(snap.norms, chosen, out=norms[:count])
        self._row_of = dict(zip(keys[:count].tolist(), range(count), strict=True))
        self._publish(
            snap,
            matrix=matrix,
            keys=keys,
            live=live,
            norms=norms,
            rows=count,
            live_count=count,
            compactions=snap.compactions + 1,
        )

    # ------------------------------------------------------------------ internals

    def _new_norms(self, capacity: int) -> npt.NDArray[np.float32] | None:
        return np.empty(capacity, dtype=np.float32) if self._storage == "f32" else None

    def _prepare_rows(
        self, array: npt.NDArray[Any], count: int, *, copy: bool
    ) -> npt.NDArray[Any]:
        """Validate ``(count, dimension)`` floating rows; return them C-contiguous in storage dtype."""
        if (
            array.ndim != 2
            or array.shape[0] != count
            or array.shape[1] != self._dimension
        ):
            raise InvalidInputError(
                f"expected vectors of shape ({count}, {self._dimension}), got {array.shape}"
            )
        if count and not np.issubdtype(array.dtype, np.floating):
            raise InvalidInputError(
                f"vectors must hold floating-point values, got {array.dtype}"
            )
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
            half = (
                np.array(array, dtype=np.float16, order="C", copy=True)
                if copy
                else np.ascontiguousarray(array, dtype=np.float16)
            )
        if not _finite_f16(half):
            raise InvalidInputError(
                "vectors hold values that are not finite in float16 (NaN, inf or |x| > 65504)"
            )
        if self._storage == "f32":
            return half.astype(np.float32)
        return half

    def _prepare_query(self, query: npt.ArrayLike) -> npt.NDArray[Any]:
        array = np.asarray(query)
        if array.shape != (self._dimension,):
            raise InvalidInputError(
                f"expected a query of shape ({self._dimension},), got {array.shape}"
            )
        if not np.issubdtype(array.dtype, np.floating):
            raise InvalidInputError(
                f"query must hold floating-point values, got {array.dtype}"
            )
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
            prepared = np.ascontiguousarray(array, dtype=self._dtype)
        if not np.isfinite(prepared).all():
            raise InvalidInputError(
                f"query holds values that are not finite in {prepared.dtype}"
            )
        return prepared

    def _grown(
        self, snap: _Snapshot, live: npt.NDArray[np.bool_], needed: int
    ) -> tuple[
        npt.NDArray[Any],
        npt.NDArray[np.int64],
        npt.NDArray[np.bool_],
        npt.NDArray[np.float32] | None,
    ]:
        """Fresh arrays with room for ``needed`` rows and the first ``snap.rows`` copied."""
        rows = snap.rows
        capacity = max(needed, 2 * snap.capacity, _MIN_CAPACITY)
        matrix = np.empty((capacity, self._dimension), dtype=self._dtype)
        matrix[:rows] = snap.matrix[:rows]
        keys = np.empty(capacity, dtype=np.int64)
        keys[:rows] = snap.keys[:rows]
        grown_live = np.zeros(capacity, dtype=np.bool_)
        grown_live[:rows] = live[:rows]
        norms = None
        if snap.norms is not None:
            norms = np.empty(capacity, dtype=np.float32)
            norms[:rows] = snap.norms[:rows]
        return matrix, keys, grown_live, norms

    def _publish(self, previous: _Snapshot, **changes: Any) -> None:
        # One attribute store: readers see the old snapshot or the new one, never a mix.
        self._snapshot = attrs.evolve(previous, version=previous.version + 1, **changes)

    def _compact_if_sparse(self) -> None:
        snap = self._snapshot
        if snap.rows - snap.live_count > _MAX_DEAD_FRACTION * snap.rows:
            self.compact()
