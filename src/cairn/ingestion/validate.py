"""Validation of an extraction proposal before anything of its batch is consumed.

Batch-level rules (a break raises :class:`~cairn.errors.ProposalRejectedError`; the batch
consumes nothing and is retried with backoff):

- every event of the batch is cited or explicitly discarded;
- every cited or discarded event is in the batch;
- every citation is supported: a quote occurs verbatim in its event, offsets lie inside
  it; so assistant text becomes memory only through a cited span of it;
- a preference cites verbatim *user* evidence.

Candidate-level rules (a break drops that candidate only, counted in the receipt): a known
claim kind, non-blank text, a confidence in [0, 1], temporal data that normalises to a
half-open interval, and a recurrence (on ``recurring`` claims only) of the closed set
(tests/ingestion/test_validate.py, tests/ingestion/test_recurrence_extraction.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import attrs

from cairn.domain.claim import ClaimDraft, ClaimKind, SourceSpan
from cairn.domain.evidence import EvidenceEvent, Role
from cairn.domain.ids import EventId
from cairn.errors import ProposalRejectedError
from cairn.ingestion.proposal import CandidateSource
from cairn.ingestion.temporal_candidate import (
    MalformedTemporalError,
    recurrence_window,
    resolve_candidate_recurrence,
    resolve_candidate_time,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from cairn.ingestion.proposal import Candidate, Proposal

__all__ = ["ValidatedBatch", "validate_drafts", "validate_proposal"]

logger = logging.getLogger(__name__)

# Kinds an extractor may propose; persona, working and reflection are maintenance's own.
_EXTRACTABLE = frozenset(ClaimKind) - {
    ClaimKind.PERSONA,
    ClaimKind.WORKING,
    ClaimKind.REFLECTION,
}


@attrs.frozen
class ValidatedBatch:
    """What a batch may commit: claim drafts, directive drafts (texts), and the counts."""

    drafts: tuple[ClaimDraft, ...]
    directive_drafts: tuple[str, ...]
    discarded: tuple[EventId, ...]
    rejected_candidates: int


def _span(
    source: CandidateSource, by_id: Mapping[str, EvidenceEvent]
) -> tuple[SourceSpan, Role]:
    event = by_id.get(source.event_id)
    if event is None:
        raise ProposalRejectedError(
            f"a citation names event {source.event_id!r}, which is not in the batch"
        )
    if source.quote is not None:
        quote = source.quote.strip()
        start = event.text.find(quote) if quote else -1
        if start < 0:
            raise ProposalRejectedError(
                f"a quote is not a verbatim span of event {source.event_id!r}"
            )
        return SourceSpan(event.event_id, start, start + len(quote)), event.role
    if (
        source.start is None
        or source.end is None
        or not 0 <= source.start < source.end <= len(event.text)
    ):
        raise ProposalRejectedError(
            f"a citation of event {source.event_id!r} has no span inside its text"
        )
    return SourceSpan(event.event_id, source.start, source.end), event.role


def _spans(
    sources: Sequence[CandidateSource], by_id: Mapping[str, EvidenceEvent]
) -> tuple[tuple[SourceSpan, ...], set[Role]]:
    if not sources:
        raise ProposalRejectedError("a candidate cites no evidence")
    resolved = [_span(source, by_id) for source in sources]
    return tuple(dict.fromkeys(span for span, _ in resolved)), {
        role for _, role in resolved
    }


def _draft(
    candidate: Candidate,
    spans: tuple[SourceSpan, ...],
    by_id: Mapping[str, EvidenceEvent],
    timezone: str,
) -> ClaimDraft | None:
    """The candidate as a draft, or ``None`` when only this candidate is unusable."""
    try:
        kind = ClaimKind(candidate.kind)
    except ValueError:
        return None
    if kind not in _EXTRACTABLE or not candidate.text.strip():
        return None
    if not 0.0 <= candidate.confidence <= 1.0:
        return None
    reference = by_id[spans[0].event_id].occurred_at
    try:
        temporal = resolve_candidate_time(candidate, reference, timezone)
        recurrence = resolve_candidate_recurrence(candidate, reference, timezone)
    except (MalformedTemporalError, OverflowError) as error:
        # OverflowError: a bound at the edge of the calendar (9999-12-31 in a zone west
        # of UTC) has no UTC instant; the candidate is unusable, not the batch.
        logger.info("dropped a candidate: %s: %s", type(error).__name__, error)
        return None
    if recurrence is not None and temporal is None:
        temporal = recurrence_window(recurrence)
    return ClaimDraft(
        kind=kind,
        text=candidate.text.strip(),
        spans=spans,
        confidence=candidate.confidence,
        temporal=temporal,
        subject=candidate.subject or None,
        predicate=candidate.predicate or None,
        recurrence=recurrence,
    )


def validate_proposal(
    proposal: Proposal, events: Sequence[EvidenceEvent], timezone: str
) -> ValidatedBatch:
    """Check ``proposal`` against its batch; raise on a batch-level break."""
    by_id: dict[str, EvidenceEvent] = {event.event_id: event for event in events}
    cited: set[str] = set()
    drafts: list[ClaimDraft] = []
    rejected = 0
    for candidate in proposal.candidates:
        spans, roles = _spans(candidate.sources, by_id)
        cited.update(span.event_id for span in spans)
        if candidate.kind == ClaimKind.PREFERENCE.value and Role.USER not in roles:
            raise ProposalRejectedError(
                "a preference does not cite verbatim user evidence"
            )
        draft = _draft(candidate, spans, by_id, timezone)
        if draft is None:
            rejected += 1
        else:
            drafts.append(draft)
    directives: list[str] = []
    for directive in proposal.directive_drafts:
        spans, roles = _spans(directive.sources, by_id)
        cited.update(span.event_id for span in spans)
        # A standing instruction comes from the user, never from the assistant or a tool.
        if Role.USER in roles and directive.text.strip():
            directives.append(directive.text.strip())
        else:
            rejected += 1
    for event_id in proposal.discarded:
        if event_id not in by_id:
            raise ProposalRejectedError(
                f"a discard names event {event_id!r}, which is not in the batch"
            )
    uncovered = set(by_id) - cited - set(proposal.discarded)
    if uncovered:
        raise ProposalRejectedError(
            f"{len(uncovered)} event(s) of the batch are neither cited nor discarded"
        )
    if rejected:
        logger.info("dropped %d invalid candidates", rejected)
    return ValidatedBatch(
        tuple(drafts), tuple(directives), tuple(proposal.discarded), rejected
    )


def validate_drafts(
    drafts: Sequence[ClaimDraft], events: Sequence[EvidenceEvent]
) -> list[ClaimDraft]:
    """The drafts that pass the citation rules on their own, each against ``events``
    (claims arriving outside a batch, e.g. an import): non-blank text, every span inside
    its event, a preference with user evidence. The others are dropped."""
    by_id: dict[str, EvidenceEvent] = {event.event_id: event for event in events}
    valid = []
    for draft in drafts:
        sources = tuple(
            CandidateSource(span.event_id, start=span.start, end=span.end)
            for span in draft.spans
        )
        try:
            _, roles = _spans(sources, by_id)
        except ProposalRejectedError:
            continue
        if not draft.text.strip():
            continue
        if draft.kind is ClaimKind.PREFERENCE and Role.USER not in roles:
            continue
        valid.append(draft)
    return valid
