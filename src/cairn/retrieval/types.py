"""What recall returns: ranked items, two rendered blocks and a manifest."""

from __future__ import annotations

import enum

import attrs

from cairn.domain.degradation import Degradation

__all__ = [
    "Allocation",
    "Degradation",
    "ItemOrigin",
    "Manifest",
    "Recall",
    "RecallItem",
    "RecallStatus",
    "Standing",
]


class RecallStatus(enum.StrEnum):
    OK = "ok"
    """The complete result."""
    PARTIAL = "partial"
    """Missed the wait budget: ranked from what was ready (the lexical lists), the
    manifest says what is missing; ``fetch_recall(request_id)`` returns the complete one."""
    PENDING = "pending"
    """Missed the wait budget with nothing ready: only ``request_id``; fetch it later."""


class Standing(enum.StrEnum):
    """Whether an item says what holds now (or at the recall's ``as_of``) or what held
    before: a superseded claim, or a turn stating a superseded value."""

    CURRENT = "current"
    HISTORY = "history"


class ItemOrigin(enum.StrEnum):
    """Where an item comes from, so a reader knows how much to trust it."""

    USER_SAID = "user_said"
    """A user's turn, verbatim."""
    ASSISTANT_SAID = "assistant_said"
    """An assistant's turn, verbatim."""
    RUNTIME = "runtime"
    """A tool result or runtime event."""
    EXTRACTED = "extracted"
    """A claim extracted from the user's turns."""
    ASSISTANT_CITED = "assistant_cited"
    """A claim extracted from the assistant's own turns, with a cited supporting span."""
    REMEMBERED_BY_USER = "remembered_by_user"
    """A claim the user asked to store."""
    REMEMBERED_BY_MODEL = "remembered_by_model"
    """A claim a model stored through ``remember``."""


@attrs.frozen
class RecallItem:
    """One recalled memory: a claim, or a piece of evidence (``kind == "evidence"``).

    ``standing`` is ``current`` or ``history`` for a claim, and for a turn that states a
    claim's value (``None`` for a turn that backs no claim); a ``history`` item carries
    ``valid_until``, when the value it states stopped holding. ``lifecycle`` is the claim's
    and ``stage`` its learning stage (candidate, probationary, active, decaying,
    superseded: cairn.maintenance.learning); both ``None`` for evidence.
    """

    id: str
    kind: str
    text: str
    score: float
    source_refs: tuple[str, ...]
    at: str | None = None
    qualifier: str | None = None
    origin: ItemOrigin | None = None
    lifecycle: str | None = None
    standing: Standing | None = None
    valid_until: str | None = None
    stage: str | None = None


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
