"""What recall returns: ranked items, two rendered blocks and a manifest."""

from __future__ import annotations

import enum

import attrs

from cairn.domain.degradation import Degradation
from cairn.domain.metadata import Metadata

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
    superseded: cairn.maintenance.learning); both ``None`` for evidence. ``metadata`` is
    what the caller said about it (a claim's own and its source turns',
    cairn.domain.metadata), ``None`` when nothing was.
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
    metadata: Metadata | None = None


@attrs.frozen
class Allocation:
    """How the byte budget was split (architecture §4: one allocator, a hard ceiling;
    cairn.retrieval.budget).

    ``total_bytes`` is the hard ceiling: ``directive_bytes + memory_bytes`` never exceeds
    it. ``memory_bytes`` is the memory block's: its container's ``container_bytes``
    (the tags, paid first), the persona and working sections' ``persona_bytes`` and
    query recall's ``recall_bytes``. ``borrowed_bytes`` is what the parts took of others'
    unused shares, each at most ``borrow_limit``. The limits the split obeyed (shares of
    the total less the container): ``directive_ceiling``, ``persona_floor`` and
    ``persona_ceiling``, ``recall_reserved`` (never lent to the sections). The later
    fields default to 0 so a manifest recorded before them still reads.
    """

    total_bytes: int
    directive_bytes: int
    memory_bytes: int
    borrowed_bytes: int
    directive_ceiling: int = 0
    persona_floor: int = 0
    persona_ceiling: int = 0
    persona_bytes: int = 0
    recall_reserved: int = 0
    recall_bytes: int = 0
    borrow_limit: int = 0
    container_bytes: int = 0


@attrs.frozen
class Manifest:
    selected_ids: tuple[str, ...]
    dropped_ids: tuple[str, ...]
    dropped_directive_ids: tuple[str, ...]
    allocation: Allocation
    degradations: tuple[Degradation, ...]
    candidates: int
    # The claims the persona and working sections showed, in the block's order, and
    # those they left out for the budget (a claim shown there is not repeated as an item
    # line: it may be in ``selected_ids`` too, when the query found it).
    section_ids: tuple[str, ...] = ()
    dropped_section_ids: tuple[str, ...] = ()


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
