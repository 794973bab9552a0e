"""Proposal validation: batch-level breaks (an event neither cited nor discarded, a source
outside the batch, an unsupported preference or quote) reject the whole proposal; a broken
date drops only its candidate; times normalise in English and Chinese against the event."""

from __future__ import annotations

import datetime as dt

import pytest

from cairn.domain.claim import ClaimKind
from cairn.domain.evidence import EvidenceEvent, Role
from cairn.domain.ids import EventId, SessionId
from cairn.domain.temporal import TimePrecision
from cairn.errors import ProposalRejectedError
from cairn.ingestion.proposal import (
    Candidate,
    CandidateSource,
    DirectiveCandidate,
    Proposal,
)
from cairn.ingestion.validate import validate_proposal

# Monday 5 January 2026, 09:00 UTC.
AT = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)


def event(rowid: int, text: str, role: Role = Role.USER) -> EvidenceEvent:
    return EvidenceEvent(
        rowid, EventId(f"e{rowid}"), SessionId("s1"), role, text, AT, "Ana"
    )


EVENTS = [
    event(1, "I love green tea."),
    event(2, "Noted, you love green tea.", Role.ASSISTANT),
    event(3, "I fly to Oslo next Friday."),
]


def cite(event_id: str, quote: str) -> tuple[CandidateSource, ...]:
    return (CandidateSource(EventId(event_id), quote=quote),)


def preference(**changes: object) -> Candidate:
    fields: dict[str, object] = {
        "kind": "preference",
        "text": "Ana loves green tea",
        "sources": cite("e1", "I love green tea"),
    }
    fields.update(changes)
    return Candidate(**fields)  # type: ignore[arg-type]


def test_a_covered_proposal_validates() -> None:
    proposal = Proposal((preference(),), discarded=(EventId("e2"), EventId("e3")))
    batch = validate_proposal(proposal, EVENTS, "UTC")
    (draft,) = batch.drafts
    assert draft.kind is ClaimKind.PREFERENCE
    span = draft.spans[0]
    assert EVENTS[0].text[span.start : span.end] == "I love green tea"
    assert batch.rejected_candidates == 0


def test_an_uncited_event_rejects_the_proposal() -> None:
    with pytest.raises(ProposalRejectedError, match="neither cited nor discarded"):
        validate_proposal(
            Proposal((preference(),), discarded=(EventId("e2"),)), EVENTS, "UTC"
        )


def test_a_source_outside_the_batch_rejects_the_proposal() -> None:
    outside = preference(sources=cite("e99", "I love green tea"))
    with pytest.raises(ProposalRejectedError, match="not in the batch"):
        validate_proposal(
            Proposal(
                (outside,), discarded=(EventId("e1"), EventId("e2"), EventId("e3"))
            ),
            EVENTS,
            "UTC",
        )
    with pytest.raises(ProposalRejectedError, match="not in the batch"):
        validate_proposal(
            Proposal(
                (preference(),), discarded=(EventId("e2"), EventId("e3"), EventId("e7"))
            ),
            EVENTS,
            "UTC",
        )


def test_a_preference_needs_verbatim_user_evidence() -> None:
    from_assistant = preference(sources=cite("e2", "you love green tea"))
    with pytest.raises(ProposalRejectedError, match="user evidence"):
        validate_proposal(
            Proposal((from_assistant,), discarded=(EventId("e1"), EventId("e3"))),
            EVENTS,
            "UTC",
        )
    invented = preference(sources=cite("e1", "I adore green tea"))
    with pytest.raises(ProposalRejectedError, match="verbatim"):
        validate_proposal(
            Proposal((invented,), discarded=(EventId("e2"), EventId("e3"))),
            EVENTS,
            "UTC",
        )


def test_assistant_text_counts_only_through_a_cited_span() -> None:
    supported = Candidate(
        "fact", "Ana loves green tea", cite("e2", "you love green tea")
    )
    batch = validate_proposal(
        Proposal((supported,), discarded=(EventId("e1"), EventId("e3"))), EVENTS, "UTC"
    )
    assert len(batch.drafts) == 1
    unsupported = Candidate("fact", "Ana hates coffee", cite("e2", "you hate coffee"))
    with pytest.raises(ProposalRejectedError):
        validate_proposal(
            Proposal((unsupported,), discarded=(EventId("e1"), EventId("e3"))),
            EVENTS,
            "UTC",
        )


def test_a_broken_date_drops_only_its_candidate() -> None:
    trip = Candidate(
        "plan",
        "Ana flies to Oslo",
        cite("e3", "I fly to Oslo next Friday"),
        time_text="next Friday",
    )
    broken = [
        Candidate("plan", "Ana flies", cite("e3", "I fly"), valid_from="2026-02-30"),
        Candidate("plan", "Ana flies", cite("e3", "I fly"), time_text="blorp o'clock"),
        Candidate(
            "plan",
            "Ana flies",
            cite("e3", "I fly"),
            valid_from="2026-03-01",
            valid_until="2026-02-01",
        ),
    ]
    batch = validate_proposal(
        Proposal((preference(), trip, *broken), discarded=(EventId("e2"),)),
        EVENTS,
        "UTC",
    )
    assert batch.rejected_candidates == 3
    kinds = sorted(draft.kind.value for draft in batch.drafts)
    assert kinds == ["plan", "preference"]
    (plan,) = [d for d in batch.drafts if d.kind is ClaimKind.PLAN]
    assert plan.temporal is not None
    # Said on Monday 5 January: "next Friday" is the Friday of next week (the
    # normaliser's convention, tests/ingestion/test_temporal.py).
    assert plan.temporal.valid_from == dt.datetime(2026, 1, 16, tzinfo=dt.UTC)
    assert plan.temporal.valid_until == dt.datetime(2026, 1, 17, tzinfo=dt.UTC)
    assert plan.temporal.precision is TimePrecision.DAY


@pytest.mark.parametrize(
    ("expression", "zone", "local_day"),
    [
        ("next Friday", "UTC", dt.date(2026, 1, 16)),
        ("上周三", "Asia/Shanghai", dt.date(2025, 12, 31)),
        ("in two weeks", "UTC", dt.date(2026, 1, 19)),
        ("三天后", "Asia/Shanghai", dt.date(2026, 1, 8)),
    ],
)
def test_time_expressions_normalise_against_the_event(
    expression: str, zone: str, local_day: dt.date
) -> None:
    from zoneinfo import ZoneInfo

    candidate = Candidate(
        "event", "Ana did it", cite("e1", "I love"), time_text=expression
    )
    batch = validate_proposal(
        Proposal((candidate,), discarded=(EventId("e2"), EventId("e3"))), EVENTS, zone
    )
    (draft,) = batch.drafts
    assert draft.temporal is not None
    assert draft.temporal.valid_from is not None
    assert draft.temporal.valid_from.astimezone(ZoneInfo(zone)).date() == local_day
    assert draft.temporal.timezone == zone


def test_unknown_kind_and_maintenance_kinds_are_dropped() -> None:
    odd = Candidate("gossip", "Ana gossips", cite("e1", "I love"))
    persona = Candidate("persona", "Ana is nice", cite("e1", "I love"))
    batch = validate_proposal(
        Proposal(
            (odd, persona, preference()), discarded=(EventId("e2"), EventId("e3"))
        ),
        EVENTS,
        "UTC",
    )
    assert batch.rejected_candidates == 2
    assert len(batch.drafts) == 1


def test_directive_drafts_come_only_from_the_user() -> None:
    proposal = Proposal(
        (preference(),),
        (
            DirectiveCandidate("Always answer in French", cite("e1", "I love")),
            DirectiveCandidate("Obey the assistant", cite("e2", "Noted")),
        ),
        discarded=(EventId("e3"),),
    )
    batch = validate_proposal(proposal, EVENTS, "UTC")
    assert batch.directive_drafts == ("Always answer in French",)
    assert batch.rejected_candidates == 1


def test_dates_the_rules_miss_fall_back_to_dateparser() -> None:
    candidate = Candidate(
        "plan", "Ana has an exam", cite("e1", "I love"), time_text="15.03.2026"
    )
    batch = validate_proposal(
        Proposal((candidate,), discarded=(EventId("e2"), EventId("e3"))), EVENTS, "UTC"
    )
    (draft,) = batch.drafts
    assert draft.temporal is not None
    assert draft.temporal.valid_from == dt.datetime(2026, 3, 15, tzinfo=dt.UTC)
    assert draft.temporal.precision is TimePrecision.DAY
    # Less sure than a parse the rules recognise.
    assert draft.temporal.confidence < 0.8


def test_iso_bounds_keep_the_zone_and_precision() -> None:
    candidate = Candidate(
        "state",
        "Ana is in Oslo",
        cite("e3", "Oslo"),
        valid_from="2026-01-09",
        valid_until="2026-01-12T18:00:00+01:00",
    )
    batch = validate_proposal(
        Proposal((candidate,), discarded=(EventId("e1"), EventId("e2"))),
        EVENTS,
        "Europe/Oslo",
    )
    (draft,) = batch.drafts
    assert draft.temporal is not None
    assert draft.temporal.valid_from == dt.datetime(2026, 1, 8, 23, tzinfo=dt.UTC)
    assert draft.temporal.valid_until == dt.datetime(2026, 1, 12, 17, tzinfo=dt.UTC)
    assert draft.temporal.timezone == "Europe/Oslo"
