"""Embedding blobs: the float16 bytes the SQLite ``embeddings`` table stores.

The table is the source of truth for vectors, so a lost or corrupt projection file can be
rebuilt without calling the embedder again. Blobs are plain little-endian float16, ``2 *
dimension`` bytes, with no header: the embedding identity is stored beside them in the row,
not repeated in every blob. Normalisation is the embedder's job; this module only encodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from cairn.errors import InvalidInputError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "BLOB_DTYPE",
    "blob_size",
    "decode_vector",
    "decode_vectors",
    "encode_vector",
]

BLOB_DTYPE: Final = np.dtype("<f2")


def blob_size(dimension: int) -> int:
    """Bytes in one blob of ``dimension`` float16 values."""
    return dimension * BLOB_DTYPE.itemsize


def encode_vector(vector: npt.ArrayLike) -> bytes:
    """Encode one vector as little-endian float16 bytes.

    Raises :class:`~cairn.errors.InvalidInputError` unless ``vector`` is one-dimensional,
    non-empty, floating point and finite after rounding to float16 (values beyond ±65504
    overflow to infinity and would poison every similarity they touch).
    """
    array = np.asarray(vector)
    if array.ndim != 1 or array.shape[0] == 0:
        raise InvalidInputError(
            f"a vector must be one-dimensional and non-empty, got shape {array.shape}"
        )
    if not np.issubdtype(array.dtype, np.floating):
        raise InvalidInputError(
            f"a vector must hold floating-point values, got {array.dtype}"
        )
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
        half = array.astype(BLOB_DTYPE)
    if not np.isfinite(half).all():
        raise InvalidInputError(
            "vector has values that are not finite in float16 (NaN, inf or |x| > 65504)"
        )
    return half.tobytes()


def decode_vector(blob: bytes, dimension: int) -> npt.NDArray[np.float16]:
    """Decode one blob into a ``(dimension,)`` float16 array."""
    matrix = decode_vectors([blob], dimension)
    return matrix.reshape(dimension)


def decode_vectors(blobs: Sequence[bytes], dimension: int) -> npt.NDArray[np.float16]:
    """Decode blobs into a writable ``(len(blobs), dimension)`` float16 matrix.

    Raises :class:`~cairn.errors.InvalidInputError` naming the first blob whose length is
    not ``2 * dimension`` bytes or whose values are not finite: such a row was written under
    another identity or damaged, and guessing would put a wrong vector into the projection.
    """
    if dimension <= 0:
        raise InvalidInputError(f"dimension must be positive, got {dimension}")
    expected = blob_size(dimension)
    for position, blob in enumerate(blobs):
        if len(blob) != expected:
            raise InvalidInputError(
                f"embedding blob {position} has {len(blob)} bytes; dimension {dimension} "
                f"needs exactly {expected} (float16)"
            )
    joined = bytearray().join(blobs)
    matrix = np.frombuffer(joined, dtype=BLOB_DTYPE).reshape(len(blobs), dimension)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        raise InvalidInputError(
            f"embedding blob {int(np.argmin(finite))} holds non-finite values"
        )
    return matrix.astype(np.float16, copy=False)
