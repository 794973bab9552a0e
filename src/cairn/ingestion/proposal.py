"""Extraction proposals: what an extractor says about one batch, before validation.

Both extractors produce a :class:`Proposal`: the rule extractor from its drafts (events it
drew nothing from are discarded), a text model from its JSON answer
(:mod:`cairn.ingestion.extraction_schema`). Nothing here is trusted yet:
:func:`cairn.ingestion.validate.validate_proposal` decides what, if anything, is consumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from cairn.domain.ids import EventId
from cairn.domain.temporal import Recurrence, TemporalSpan

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.domain.claim import ClaimDraft
    from cairn.domain.evidence import EvidenceEvent

__all__ = [
    "Candidate",
    "CandidateSource",
    "DirectiveCandidate",
    "Proposal",
    "proposal_from_drafts",
]


@attrs.frozen
class CandidateSource:
    """A cited event and the support in it: a verbatim ``quote`` (text models) or
    ``[start, end)`` offsets (the rule extractor)."""

    event_id: EventId
    quote: str | None = None
    start: int | None = None
    end: int | None = None


@attrs.frozen
class Candidate:
    """A proposed claim. ``role`` says what the extractor meant it as: a plain claim, a
    correction of an earlier one (same subject and predicate) or a relation."""

    kind: str
    text: str
    sources: tuple[CandidateSource, ...]
    subject: str | None = None
    predicate: str | None = None
    confidence: float = 0.8
    time_text: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    temporal: TemporalSpan | None = None
    role: str = "claim"
    # A recurring claim's repeat: resolved (the rule extractor) or as a text model stated
    # it, its fields still to be validated (cairn.ingestion.temporal_candidate).
    recurrence: Recurrence | Mapping[str, object] | None = None


@attrs.frozen
class DirectiveCandidate:
    """A proposed standing instruction: stored only as a draft, never active."""

    text: str
    sources: tuple[CandidateSource, ...]


@attrs.frozen
class Proposal:
    candidates: tuple[Candidate, ...] = ()
    directive_drafts: tuple[DirectiveCandidate, ...] = ()
    discarded: tuple[EventId, ...] = ()


def proposal_from_drafts(
    drafts: Sequence[ClaimDraft], events: Sequence[EvidenceEvent]
) -> Proposal:
    """The rule extractor's drafts as a proposal; uncited events are discarded."""
    cited: set[str] = set()
    candidates = []
    for draft in drafts:
        sources = tuple(
            CandidateSource(span.event_id, start=span.start, end=span.end)
            for span in draft.spans
        )
        cited.update(source.event_id for source in sources)
        candidates.append(
            Candidate(
                kind=draft.kind.value,
                text=draft.text,
                sources=sources,
                subject=draft.subject,
                predicate=draft.predicate,
                confidence=draft.confidence,
                temporal=draft.temporal,
                recurrence=draft.recurrence,
            )
        )
    discarded = tuple(
        EventId(event.event_id) for event in events if event.event_id not in cited
    )
    return Proposal(tuple(candidates), (), discarded)
