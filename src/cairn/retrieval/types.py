"""What recall returns: ranked items, two rendered blocks and a manifest."""

from __future__ import annotations

import enum

import attrs

from cairn.domain.degradation import Degradation

__all__ = [
    "Allocation",
    "Degradation",
    "Manifest",
    "Recall",
    "RecallItem",
    "RecallStatus",
]


class RecallStatus(enum.StrEnum):
    OK = "ok"
    """The complete result."""
    PARTIAL = "partial"
    """Missed the wait budget: ranked from what was ready (the lexical lists), the
    manifest says what is missing; ``fetch_recall(request_id)`` returns the complete one."""
    PENDING = "pending"
    """Missed the wait budget with nothing ready: only ``request_id``; fetch it later."""


@attrs.frozen
class RecallItem:
    """One recalled memory: a claim, or a piece of evidence (``kind == "evidence"``)."""

    id: str
    kind: str
    text: str
    score: float
    source_refs: tuple[str, ...]
    at: str | None = None
    qualifier: str | None = None


@attrs.frozen
class Allocation:
    """How the byte budget was split (architecture §4: one allocator, a hard ceiling)."""

    total_bytes: int
    directive_bytes: int
    memory_bytes: int
    borrowed_bytes: int


@attrs.frozen
class Manifest:
    selected_ids: tuple[str, ...]
    dropped_ids: tuple[str, ...]
    dropped_directive_ids: tuple[str, ...]
    allocation: Allocation
    degradations: tuple[Degradation, ...]
    candidates: int


@attrs.frozen
class Recall:
    """A recall answer. ``pending`` carries only ``request_id``: fetch the rest later;
    ``partial`` carries what was ready on time, and its complete result is fetched later."""

    status: RecallStatus
    request_id: str
    items: tuple[RecallItem, ...] = ()
    memory_block: str = ""
    directive_block: str = ""
    manifest: Manifest | None = None
