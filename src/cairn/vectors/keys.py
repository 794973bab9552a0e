"""The key scheme of a vector projection: which claim or event row a vector describes.

Claims and events share one projection per agent, so a key carries both the target and its
rowid: a claim's key is its rowid, an event's key is ``EVENT_KEY_BASE + rowid``. Every
writer (the embedding actor, forget, clear, upkeep) and every reader (recall's vector
candidates) builds and reads keys here and nowhere else. Ties in a search rank by key, so
claims come before events (design/vectors.md).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "EVENT_KEY_BASE",
    "EmbedTarget",
    "VectorKey",
    "is_claim_key",
    "vector_key",
]

# Rowids at or above this would collide with event keys (SQLite hands out rowids in
# order; 2^40 rows is far beyond one file's reach).
EVENT_KEY_BASE: Final = 1 << 40


class EmbedTarget(enum.StrEnum):
    """What a vector describes; stored as ``embeddings.target`` (bound as ``.value``)."""

    CLAIM = "claim"
    EVENT = "event"


_OFFSET: Final = {EmbedTarget.CLAIM: 0, EmbedTarget.EVENT: EVENT_KEY_BASE}


@attrs.frozen
class VectorKey:
    """A decoded projection key."""

    target: EmbedTarget
    rowid: int = attrs.field()

    @rowid.validator
    def _in_range(self, _attribute: attrs.Attribute[int], rowid: int) -> None:
        if not 0 <= rowid < EVENT_KEY_BASE:
            raise ValueError(f"rowid {rowid} is outside the vector key range")

    def encode(self) -> int:
        return _OFFSET[self.target] + self.rowid

    @classmethod
    def decode(cls, key: int) -> VectorKey:
        key = int(key)
        if key < 0 or key >= 2 * EVENT_KEY_BASE:
            raise ValueError(f"{key} is not a vector key")
        if key >= EVENT_KEY_BASE:
            return cls(EmbedTarget.EVENT, key - EVENT_KEY_BASE)
        return cls(EmbedTarget.CLAIM, key)


def vector_key(target: EmbedTarget, rowid: int) -> int:
    """The projection key of ``(target, rowid)``."""
    return VectorKey(target, rowid).encode()


def is_claim_key(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Which of ``keys`` are claim keys (a mask over a projection's key column)."""
    return keys < EVENT_KEY_BASE
