"""Candidate keys: one claim or event row proposed to recall, in every ranked list.

The lexical lists, the vector lists, validation, suppression and fusion all speak of
candidates as :class:`CandidateKey` values; the text form ``c:<rowid>`` / ``e:<rowid>`` is
for logs and tools and is read back only by :meth:`CandidateKey.parse`.
"""

from __future__ import annotations

import enum
from typing import Final

import attrs

from cairn.vectors.keys import EmbedTarget, VectorKey

__all__ = ["CandidateKey", "CandidateKind"]


class CandidateKind(enum.StrEnum):
    """What a candidate is; the value is the prefix of its text form."""

    CLAIM = "c"
    EVENT = "e"


_FROM_TARGET: Final = {
    EmbedTarget.CLAIM: CandidateKind.CLAIM,
    EmbedTarget.EVENT: CandidateKind.EVENT,
}


@attrs.frozen
class CandidateKey:
    kind: CandidateKind
    rowid: int

    @classmethod
    def claim(cls, rowid: int) -> CandidateKey:
        return cls(CandidateKind.CLAIM, rowid)

    @classmethod
    def event(cls, rowid: int) -> CandidateKey:
        return cls(CandidateKind.EVENT, rowid)

    @classmethod
    def from_vector(cls, key: VectorKey) -> CandidateKey:
        return cls(_FROM_TARGET[key.target], key.rowid)

    @classmethod
    def parse(cls, text: str) -> CandidateKey:
        """Read the text form back; :class:`ValueError` if it is not one."""
        prefix, _, rowid = text.partition(":")
        kinds = {kind.value: kind for kind in CandidateKind}
        if prefix not in kinds or not rowid.isascii() or not rowid.isdigit():
            raise ValueError(f"{text!r} is not a candidate key")
        return cls(kinds[prefix], int(rowid))

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.rowid}"
