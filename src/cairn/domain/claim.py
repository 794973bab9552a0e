"""Claims: atomic remembered statements, the only authority for remembered facts."""

from __future__ import annotations

import datetime as dt
import enum

import attrs

from cairn.domain.ids import EventId
from cairn.domain.metadata import Metadata
from cairn.domain.scope import Scope
from cairn.domain.temporal import Recurrence, TemporalSpan

__all__ = ["Claim", "ClaimDraft", "ClaimKind", "Lifecycle", "Origin", "SourceSpan"]


class ClaimKind(enum.StrEnum):
    FACT = "fact"
    PREFERENCE = "preference"
    EVENT = "event"
    PLAN = "plan"
    RECURRING = "recurring"
    STATE = "state"
    DECISION = "decision"
    REFLECTION = "reflection"
    PERSONA = "persona"
    WORKING = "working"


class Lifecycle(enum.StrEnum):
    CANDIDATE = "candidate"
    ACTIVE = "active"
    ARCHIVED = "archived"
    SUPERSEDED = "superseded"
    QUARANTINED = "quarantined"


class Origin(enum.StrEnum):
    """Who made the claim: the trust of a claim follows its origin."""

    EXTRACTED = "extracted"
    USER = "user"
    MODEL = "model"


@attrs.frozen
class SourceSpan:
    """A verbatim supporting span ``text[start:end]`` of one evidence event."""

    event_id: EventId
    start: int
    end: int

    def __attrs_post_init__(self) -> None:
        if not 0 <= self.start < self.end:
            raise ValueError("a source span must be non-empty and start at or after 0")


@attrs.frozen
class ClaimDraft:
    """A proposed claim, before validation and commit.

    ``subject`` and ``predicate`` name what the claim is about (``("Ana", "lives_in")``) so a
    newer claim with the same pair can supersede an older one.
    """

    kind: ClaimKind
    text: str
    spans: tuple[SourceSpan, ...]
    confidence: float = 0.8
    temporal: TemporalSpan | None = None
    subject: str | None = None
    predicate: str | None = None
    scope: Scope = attrs.field(factory=Scope.agent)
    # What a recurring claim repeats on ("every Monday 09:00"); None for other kinds.
    recurrence: Recurrence | None = None
    # The caller's metadata of a remember (cairn.domain.metadata); an extracted claim
    # inherits its source turns' at commit instead.
    metadata: Metadata | None = None

    @property
    def source_event_ids(self) -> tuple[EventId, ...]:
        return tuple(dict.fromkeys(span.event_id for span in self.spans))


@attrs.frozen
class Claim:
    """A stored claim as recall sees it after re-validation against its row."""

    rowid: int
    claim_id: str
    kind: ClaimKind
    lifecycle: Lifecycle
    origin: Origin
    text: str
    confidence: float
    temporal: TemporalSpan | None
    scope: Scope
    revision: int
    source_event_ids: tuple[EventId, ...]
    subject: str | None = None
    predicate: str | None = None
    recurrence: Recurrence | None = None
    # When its evidence says the value took effect, and (superseded) until when it held:
    # cairn.store.succession.
    evidence_at: dt.datetime | None = None
    superseded_at: dt.datetime | None = None
    # Every source turn is the assistant's (a claim from its own words, with a cited span).
    from_assistant: bool = False
    # In an open conflict the user has not resolved (cairn.store.conflicts).
    conflicting: bool = False
    # The caller's metadata, its own and inherited from its sources (cairn.domain.metadata).
    metadata: Metadata | None = None
