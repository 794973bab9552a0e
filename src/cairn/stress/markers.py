"""Marker words: the unique, searchable tokens every write of the harness carries.

A marker is ``q`` and nine letters from an alphabet without vowels or ``s``: no English
word, one lexical token, and stable under the Porter stemmer (no rule fires on a word
without vowels that does not end in ``s``), so a recall for the marker finds exactly the
memories that carry it, and a scan of the files for its tail finds every stored copy
(FTS5 stores a term prefix-compressed against its neighbour: only the tail is sure to be
written out). Each marker belongs to one agent: finding it anywhere else is a
cross-agent read.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import random

__all__ = ["MARKER_PATTERN", "MarkerSource", "holds_marker", "marker_tail"]

_ALPHABET = "bcdfghjklmnpqrtvwxz"
MARKER_PATTERN = re.compile(r"\bq[" + _ALPHABET + r"]{9}\b")


class MarkerSource:
    """Fresh markers from a seeded generator, never the same one twice in a run."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._issued: set[str] = set()

    def __call__(self) -> str:
        while True:
            marker = "q" + "".join(self._rng.choice(_ALPHABET) for _ in range(9))
            if marker not in self._issued:
                self._issued.add(marker)
                return marker


def marker_tail(marker: str) -> str:
    """The part of a marker a file scan looks for (see the module docstring)."""
    return marker[-6:]


def holds_marker(blob: bytes, marker: str) -> bool:
    """Whether raw file bytes hold a copy of ``marker``: its tail, at the end of a word.

    The end matters: another marker may hold the same six letters inside it (two seeded
    sources a draw apart give markers shifted by one letter), and that is not a copy.
    """
    tail = re.escape(marker_tail(marker).encode())
    return re.search(tail + rb"(?![a-z])", blob.lower()) is not None
