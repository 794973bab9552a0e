"""Weighted reciprocal rank fusion.

Measured on LoCoMo (MEASUREMENTS.md, design/recall.md): equal-weight RRF of a lexical and a
dense list is no better than lexical alone, because the dense list is noisier; weighting the
lists by their measured reliability is what makes fusion pay.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["RRF_K", "weighted_rrf"]

RRF_K = 60

K = TypeVar("K", bound=Hashable)


def weighted_rrf(
    ranked_lists: Mapping[str, Sequence[K]],
    weights: Mapping[str, float],
    k: int = RRF_K,
) -> dict[K, float]:
    """Fuse ranked lists of keys: ``score = Σ weight / (k + rank)`` with 1-based ranks."""
    scores: dict[K, float] = {}
    for name, keys in ranked_lists.items():
        weight = weights.get(name, 1.0)
        for rank, key in enumerate(keys, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return scores
