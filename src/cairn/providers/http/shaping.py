"""Turning provider JSON rows into cairn's vector contract: float32, (n, d), unit length.

Shared by every HTTP embedder so the checks are identical: a wrong row count, a wrong
dimension, a non-finite value or a zero vector is the provider breaking its contract, not
something to retry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cairn.errors import ProviderContractError

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from cairn.providers.embedding import Vectors

__all__ = ["batches", "to_unit_rows"]


def batches(texts: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """Consecutive slices of at most ``size`` texts, in order."""
    for start in range(0, len(texts), size):
        yield texts[start : start + size]


def to_unit_rows(
    rows: Sequence[Sequence[float]],
    *,
    expected_rows: int,
    dimension: int,
    endpoint: str,
) -> Vectors:
    """Validate and L2-normalise ``rows`` into a float32 ``(expected_rows, dimension)`` array.

    Raises:
        ProviderContractError: wrong count, wrong dimension, non-finite or zero vectors.
    """
    if len(rows) != expected_rows:
        raise ProviderContractError(
            f"{endpoint}: expected {expected_rows} embeddings, got {len(rows)}"
        )
    for row in rows:
        if len(row) != dimension:
            raise ProviderContractError(
                f"{endpoint}: expected dimension {dimension}, got {len(row)}"
            )
    matrix = np.asarray(rows, dtype=np.float32).reshape(expected_rows, dimension)
    if not np.isfinite(matrix).all():
        raise ProviderContractError(f"{endpoint}: embedding holds non-finite values")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ProviderContractError(f"{endpoint}: embedding is the zero vector")
    unit: Vectors = (matrix / norms).astype(np.float32, copy=False)
    return unit
