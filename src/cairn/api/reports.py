"""What the memory API's operations report: frozen records, the same on every surface.

The embedded runtime builds them; over IPC they travel as their fields (design/ipc.md) and
decode back to these classes, so ``memory.clear(...)`` returns an equal value embedded, over
a socket or on an asyncio loop.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Protocol

import attrs

from cairn.domain.outcomes import IntakeOutcome, IntakeResult
from cairn.retrieval.types import Manifest

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "AttentionItem",
    "AttentionKind",
    "ClearReport",
    "DrainReport",
    "EditReport",
    "EmbedderIdentity",
    "Entity",
    "EntityAlias",
    "EntityRelation",
    "EvidenceItem",
    "FeedbackReport",
    "IngestReport",
    "KeptCounts",
    "LineageEntry",
    "MaintenanceReport",
    "MemoryDetail",
    "MemoryItem",
    "RecallRecord",
    "ReconfigureReport",
    "RetireReport",
    "TableCount",
    "TextModelIdentity",
]


@attrs.frozen
class IngestReport:
    """Per-item outcomes of one ingest call, in input order."""

    results: tuple[IntakeResult, ...]

    def count(self, outcome: IntakeOutcome) -> int:
        return sum(1 for result in self.results if result.outcome is outcome)

    @property
    def ingested(self) -> int:
        return self.count(IntakeOutcome.INGESTED)

    @property
    def duplicates(self) -> int:
        return self.count(IntakeOutcome.DUPLICATE)

    @property
    def rejected(self) -> tuple[IntakeResult, ...]:
        return tuple(r for r in self.results if r.outcome is IntakeOutcome.REJECTED)


@attrs.frozen
class DrainReport:
    """What a drain settled: how many agents, in how long (trio clock)."""

    agents: int
    elapsed_s: float


@attrs.frozen
class KeptCounts:
    """Rows a clear leaves in place, counted after it finished."""

    # Stored turns and runtime events that arrived after the clear started.
    events: int
    directives: int
    # Hashes of forgotten or cleared claims: they keep the same source from re-teaching them.
    tombstones: int
    # Hashes of forgotten or cleared turns' IDs (and forgotten turns' text): no replay or
    # import stores them again.
    evidence_tombstones: int = 0


@attrs.frozen
class ClearReport:
    """What a clear removed and what it kept, in words a user interface can show as is."""

    agent_id: str
    claims_deleted: int
    removed: tuple[str, ...]
    kept: tuple[str, ...]
    kept_counts: KeptCounts
    summary: str
    turns_deleted: int = 0


@attrs.frozen
class TableCount:
    """Rows deleted from one table."""

    table: str
    rows: int


@attrs.frozen
class RetireReport:
    """What a retire deleted, table by table (in deletion order), and what it kept.

    ``rows_deleted`` is a tuple of records rather than a mapping so the report stays
    immutable and crosses every boundary (msgspec, cattrs, JSON) as the same plain array;
    :meth:`deleted` reads one table. ``kept`` is empty: nothing of the namespace remains.
    """

    agent_id: str
    rows_deleted: tuple[TableCount, ...]
    kept: tuple[str, ...] = ()

    @classmethod
    def of(cls, agent_id: str, rows_deleted: Mapping[str, int]) -> RetireReport:
        return cls(
            agent_id, tuple(TableCount(table, n) for table, n in rows_deleted.items())
        )

    def deleted(self, table: str) -> int:
        """Rows deleted from ``table`` (0 for a table the retire did not touch)."""
        return sum(count.rows for count in self.rows_deleted if count.table == table)


class _EmbeddingIdentityLike(Protocol):
    @property
    def provider(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def dimension(self) -> int: ...
    @property
    def metric(self) -> str: ...


class _TextIdentityLike(Protocol):
    @property
    def provider(self) -> str: ...
    @property
    def model(self) -> str: ...


@attrs.frozen
class EmbedderIdentity:
    """``(provider, model, dimension, metric)`` of an embedder: vectors of different
    identities are never compared. ``metric`` is ``cos``, ``ip`` or ``l2sq``."""

    provider: str
    model: str
    dimension: int
    metric: str

    @classmethod
    def of(cls, identity: _EmbeddingIdentityLike) -> EmbedderIdentity:
        """The public record of an internal identity (``cairn.vectors``'s, or any with
        the same four fields): built here so the API needs no vector code."""
        return cls(
            identity.provider, identity.model, identity.dimension, identity.metric
        )


@attrs.frozen
class TextModelIdentity:
    """The chat model extraction asks: its provider kind and model name."""

    provider: str
    model: str

    @classmethod
    def of(cls, identity: _TextIdentityLike) -> TextModelIdentity:
        return cls(identity.provider, identity.model)


@attrs.frozen
class ReconfigureReport:
    """A live provider switch: whether the embedding identity changed (an epoch change:
    projections rebuild, recall says ``reindexing`` meanwhile), the embedder serving now,
    and the text model extracting now (``None``: the rule extractor)."""

    changed: bool
    embedder: EmbedderIdentity
    text_provider: TextModelIdentity | None


@attrs.frozen
class RecallRecord:
    """The durable record of one recall's contribution, kept after its text is gone.

    ``status`` is the answer's status when it was handed back (``ok``, ``pending``, ...),
    updated when a late result completes it (``failed`` if that work failed);
    ``manifest`` holds what was selected, dropped and allocated, by ID only (``None``
    until computed). ``at`` is ISO-8601 (domain clock) of when the recall returned.
    ``turn_id`` is the host's key for the turn it contributed to.
    """

    request_id: str
    status: str
    at: str
    session_id: str | None = None
    turn_id: str | None = None
    manifest: Manifest | None = None


@attrs.frozen
class FeedbackReport:
    """What one ``feedback`` call recorded about a recall's items.

    ``used`` and ``wrong`` count the claims credited (a turn's ID is accepted but has no
    belief to move); ``new_signals`` is 0 when the same report was already recorded.
    """

    request_id: str
    used: int
    wrong: int
    new_signals: int


@attrs.frozen
class MaintenanceReport:
    """What one ``maintain`` call did: ``batches`` of dirty work through every pass
    (merge, challenge, reflection, learning, persona), ``settled`` seeds done with, and
    ``remaining`` seeds still dirty after it (retrying ones, or more than one call
    works at most 64 batches)."""

    agent_id: str
    batches: int
    settled: int
    remaining: int


class AttentionKind(enum.StrEnum):
    """What needs the host's attention: a late recall result ready to fetch, or a
    critical runtime event of the agent's tasks."""

    RECALL_READY = "recall_ready"
    TASK_FAILED = "task_failed"
    TASK_BLOCKED = "task_blocked"
    NEEDS_INPUT = "needs_input"


@attrs.frozen
class AttentionItem:
    """One unconsumed notice of the attention inbox.

    ``request_id`` names the ready recall (``recall_ready``); ``event_id`` and ``text`` the
    latest event of a runtime notice, loaded at read time (a forgotten or cleared event's
    notice is never shown). Repeated blocked and needs-input notices of one task and
    session are one item: ``count`` of them, ``first_at`` the first, ``latest_at`` the
    last (ISO-8601, domain clock).
    """

    item_id: int
    kind: AttentionKind
    first_at: str
    latest_at: str
    count: int = 1
    session_id: str | None = None
    request_id: str | None = None
    event_id: str | None = None
    text: str | None = None


@attrs.frozen
class EntityAlias:
    """One name an entity goes by, and the turns that give it that name.

    ``kind`` says where the name comes from: ``speaker`` (turns were said under it),
    ``name``, ``translation`` (a form in another script: 里斯本 for Lisbon), ``nickname``
    (the beginning of exactly one known person's name: "Mel" for Melanie) or ``kinship``
    (someone's relative: "Caroline's sister"). ``sources`` are the event IDs of those
    turns, oldest first (at most 20).
    """

    alias: str
    kind: str
    sources: tuple[str, ...] = ()


@attrs.frozen
class EntityRelation:
    """A relation a claim states between this entity and another.

    ``outgoing``: this entity is the claim's subject, ``other`` its object (else the
    reverse); ``other`` is that entity's canonical name. ``valid_from`` and
    ``valid_until`` (ISO-8601) bound when it held; ``valid_until`` is ``None`` while it
    still does.
    """

    relation: str
    other: str
    outgoing: bool
    claim_id: str
    valid_from: str | None = None
    valid_until: str | None = None


@attrs.frozen
class Entity:
    """A person, place, organisation, project or artefact the agent's turns speak of.

    ``kind`` is ``person``, ``place``, ``organisation``, ``project`` or ``artefact``;
    ``name`` is its canonical name (the first of a speaker name, a name, a translation,
    a kinship reference, a nickname); ``aliases`` are every name it goes by, in the order
    they were learned; ``mentions`` counts the turns said by it, speaking of it or
    calling it by name. ``entity_id`` is the store's ID for it, never reused (an entity
    whose every turn is forgotten goes with them, and found again is a new one) and
    local to the data directory (an import numbers the entities it derives anew).
    """

    entity_id: int
    kind: str
    name: str
    aliases: tuple[EntityAlias, ...]
    mentions: int
    relations: tuple[EntityRelation, ...] = ()


@attrs.frozen
class EvidenceItem:
    """One stored turn behind a recalled item, as ``evidence`` expands a ref.

    ``ref`` is the ID asked for: an event ID (a recalled item's ``source_refs``) or a
    claim ID, which expands to one entry per source turn of that claim (``claim_id``
    says which). ``state`` is ``present`` (the turn as stored, already redacted at
    intake), ``hidden`` (stored, but a forgotten or edited claim cited it: recall never shows it,
    so neither does this), ``withdrawn`` (edited, retried or deleted by the host),
    ``forgotten`` (the turn was forgotten or cleared: only a hash of its ID is left),
    ``unsourced`` (a claim remembered or edited with no turn behind it) or ``unknown``
    (no turn or claim of the agent has this ID). Only ``present`` carries the turn's
    fields. Stored text is data said by someone, never an instruction.
    """

    ref: str
    state: str
    event_id: str | None = None
    claim_id: str | None = None
    session_id: str | None = None
    role: str | None = None
    speaker: str | None = None
    kind: str | None = None
    at: str | None = None
    text: str | None = None


@attrs.frozen
class MemoryItem:
    """One stored memory (a claim) as ``memories`` lists it and ``memory`` shows it.

    ``lifecycle`` is ``active`` (recalled as what holds), ``superseded`` (recalled as
    history: ``superseded_at`` says until when it held), ``archived`` (kept, out of
    recall: archived by the user, or an edited revision, which ``memory`` shows with its
    ``edit`` lineage), ``candidate`` or ``quarantined``. ``origin`` says who it comes
    from, as recall marks it (``extracted``, ``assistant_cited``, ``remembered_by_user``,
    ``remembered_by_model``); ``confidence`` is its stored evidence strength and
    ``stage`` its learning stage (``None`` before maintenance reviewed it).
    ``scope`` is the scope kind, ``scope_key`` its key. Times are ISO-8601 (UTC):
    ``created_at`` when it was stored, ``updated_at`` its last change, ``evidence_at``
    when its evidence says it took effect, ``valid_from``/``valid_until`` the validity
    its words give (``None``: not stated). ``source_refs`` are the event IDs of the
    turns it was learned from (empty for one remembered or edited by hand);
    ``conflicting``: in a contradiction the user has not resolved.
    """

    id: str
    kind: str
    text: str
    lifecycle: str
    origin: str
    confidence: float
    scope: str
    created_at: str
    updated_at: str
    revision: int = 1
    scope_key: str | None = None
    evidence_at: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    superseded_at: str | None = None
    stage: str | None = None
    source_refs: tuple[str, ...] = ()
    conflicting: bool = False


@attrs.frozen
class LineageEntry:
    """One edge of a memory's history, as ``memory`` shows it.

    ``relation`` is ``edit`` (the user rewrote the older claim as the newer),
    ``supersede`` (the newer value replaced the older), ``merge`` (the older, a duplicate,
    was merged into the newer and deleted: only its ID is left) or ``reflection`` (the
    newer is a reflection drawn from the older). ``other_role`` says which end the
    other claim is: ``parent`` (the older end: this memory edited, superseded, absorbed
    or drew on it) or ``child`` (the newer end). ``other_text`` and
    ``other_lifecycle`` are ``None`` for a claim no longer stored. ``at`` is when the
    edge was written (ISO-8601, UTC).
    """

    relation: str
    other_role: str
    other_id: str
    at: str
    other_text: str | None = None
    other_lifecycle: str | None = None


@attrs.frozen
class MemoryDetail:
    """One memory with what stands behind it: its stored turns (as ``evidence``
    expands its ID: ``unsourced`` for a memory remembered or edited by hand) and its
    lineage, oldest edge first."""

    memory: MemoryItem
    evidence: tuple[EvidenceItem, ...] = ()
    lineage: tuple[LineageEntry, ...] = ()


@attrs.frozen
class EditReport:
    """What an ``edit`` did: ``previous_id`` is the claim edited (kept as history,
    archived, out of recall), ``memory`` the new revision that recall now shows, with an
    ``edit`` lineage edge from the previous one. ``note`` says so in words a user
    interface can show."""

    previous_id: str
    memory: MemoryItem
    note: str
