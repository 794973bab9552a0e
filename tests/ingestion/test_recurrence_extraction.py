"""Recurrences in English and Chinese: the temporal layer reads "every Monday at 9am" and
"每周四" into the closed set (and nothing out of it), the rule extractor turns the clause
into a recurring claim carrying it, and a text model's recurrence is validated per
candidate."""

from __future__ import annotations

import datetime as dt

import msgspec
import pytest

from cairn.domain.claim import ClaimKind
from cairn.domain.evidence import EvidenceEvent, Role
from cairn.domain.ids import EventId, SessionId
from cairn.domain.temporal import RecurrenceKind, TimePrecision
from cairn.ingestion.extract import ExtractionInput, RuleExtractor
from cairn.ingestion.extraction_schema import ExtractionAnswer, proposal_from_answer
from cairn.ingestion.proposal import Proposal, proposal_from_drafts
from cairn.ingestion.temporal_recurrence import find_recurrence
from cairn.ingestion.validate import validate_proposal

# Wednesday 2 December 2026, 10:00 UTC.
AT = dt.datetime(2026, 12, 2, 10, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("text", "described"),
    [
        ("I have a standup at 9am every day.", "every day 09:00 (Europe/Berlin)"),
        ("Every day at 7:30 pm I read.", "every day 19:30 (Europe/Berlin)"),
        ("I go to the gym every Monday.", "every Monday (Europe/Berlin)"),
        ("On Mondays I play chess.", "every Monday (Europe/Berlin)"),
        ("I work from home every weekday.", "every weekday (Europe/Berlin)"),
        ("We hike every weekend.", "every weekend (Europe/Berlin)"),
        (
            "I swim each Tuesday and Thursday at noon.",
            "every Tuesday and Thursday 12:00 (Europe/Berlin)",
        ),
        (
            "I pay rent on the 15th of every month.",
            "every month on the 15th (Europe/Berlin)",
        ),
        ("Every year on May 3 I call Gran.", "every year on May 3 (Europe/Berlin)"),
        ("I run each morning.", "every day (Europe/Berlin)"),
        (
            "I take Spanish every Monday until June.",
            "every Monday (Europe/Berlin) until 2027-05-31",
        ),
        (
            "I take Spanish every Monday until May 5.",
            "every Monday (Europe/Berlin) until 2027-05-05",
        ),
        ("我每天跑步。", "every day (Europe/Berlin)"),
        ("我每天早上9点开会。", "every day 09:00 (Europe/Berlin)"),
        ("我每周四下午去游泳。", "every Thursday (Europe/Berlin)"),
        ("我每周四下午三点半去游泳。", "every Thursday 15:30 (Europe/Berlin)"),
        ("我每个周末去爬山。", "every weekend (Europe/Berlin)"),
        ("我每月15号交房租。", "every month on the 15th (Europe/Berlin)"),
        ("我每年5月3日去看奶奶。", "every year on May 3 (Europe/Berlin)"),
        ("我工作日每天跑步。", "every weekday (Europe/Berlin)"),
        (
            "我每周一、三、五晚上七点练琴。",
            "every Monday, Wednesday and Friday 19:00 (Europe/Berlin)",
        ),
        ("我每周四去游泳，到年底。", "every Thursday (Europe/Berlin) until 2026-12-31"),
    ],
)
def test_recurrences_are_read(text: str, described: str) -> None:
    found = find_recurrence(text, AT, "Europe/Berlin")
    assert found is not None
    assert found.recurrence.describe() == described
    assert found.recurrence.starts == AT  # the window opens at the evidence
    assert text[found.start : found.end] == found.text


@pytest.mark.parametrize(
    "text",
    [
        # Not recurrences at all.
        "Every time I try, it burns.",
        "Each of my kids has a bike.",
        "I went there on Monday.",
        "我每次都迟到。",
        "每个人都有梦想。",
        "我每周三次健身。",  # three times a week, not Wednesday
        "我们每周一起吃饭。",  # together, not Monday
        # Intervals outside the closed set: not a wrong weekly recurrence.
        "I call my parents every other week.",
        "I see the dentist every two months.",
        "We meet biweekly on Mondays.",
        "我隔周去看牙医。",
        "我每两周开一次会。",
        "我每隔一天跑步。",
    ],
)
def test_lookalikes_and_unsupported_intervals_are_not_recurrences(text: str) -> None:
    assert find_recurrence(text, AT, "Europe/Berlin") is None


def _extract(text: str, speaker: str | None = "Ana") -> list[object]:
    event = ExtractionInput(EventId("e1"), Role.USER, text, AT, speaker, SessionId("s"))
    return list(RuleExtractor().extract([event], timezone="Asia/Shanghai"))


def test_a_recurring_clause_becomes_a_recurring_claim() -> None:
    (draft,) = RuleExtractor().extract(
        [
            ExtractionInput(
                EventId("e1"),
                Role.USER,
                "Oh, I have a standup at 9am every day.",
                AT,
                "Ana",
                SessionId("s"),
            )
        ],
        timezone="Europe/Berlin",
    )
    assert draft.kind is ClaimKind.RECURRING
    assert draft.text == "Ana has a standup at 9am every day"
    assert draft.recurrence is not None
    assert draft.recurrence.kind is RecurrenceKind.DAILY
    assert draft.recurrence.time == dt.time(9)
    assert draft.recurrence.timezone == "Europe/Berlin"
    # The claim's validity is the recurrence's window, opened by the evidence.
    assert draft.temporal is not None
    assert (draft.temporal.valid_from, draft.temporal.valid_until) == (AT, None)
    assert draft.temporal.precision is TimePrecision.MINUTE
    (span,) = draft.spans
    said = "Oh, I have a standup at 9am every day."
    assert said[span.start : span.end] == "I have a standup at 9am every day"


def test_a_chinese_recurring_clause_becomes_a_recurring_claim() -> None:
    (draft,) = RuleExtractor().extract(
        [
            ExtractionInput(
                EventId("e1"),
                Role.USER,
                "我每周四下午去游泳，到年底。",
                AT,
                "王磊",
                SessionId("s"),
            )
        ],
        timezone="Asia/Shanghai",
    )
    assert (draft.kind, draft.text) == (ClaimKind.RECURRING, "王磊每周四下午去游泳")
    assert draft.recurrence is not None
    assert draft.recurrence.weekdays == (3,)
    assert draft.recurrence.until == dt.datetime(2026, 12, 31, 16, tzinfo=dt.UTC)
    assert draft.temporal is not None
    assert draft.temporal.valid_until == draft.recurrence.until


@pytest.mark.parametrize(
    "text",
    [
        "Do you run every morning?",
        "Maybe I should swim every Friday.",
        "I'm exhausted every single day.",
        "I don't go to the gym every Monday.",
        "She said she runs every day.",
        "你每天几点起床？",
        "我每天都很累。",
        "我想每周去游泳。",
        "Every time I try to bake bread, it burns.",
    ],
)
def test_questions_hedges_states_and_reports_are_not_recurring_claims(
    text: str,
) -> None:
    assert _extract(text) == []


def test_a_preference_with_a_repeat_stays_a_preference() -> None:
    drafts = RuleExtractor().extract(
        [
            ExtractionInput(
                EventId("e1"),
                Role.USER,
                "I love running every morning.",
                AT,
                "Ana",
                SessionId("s"),
            )
        ]
    )
    assert [draft.kind for draft in drafts] == [ClaimKind.PREFERENCE]


def _event(text: str) -> EvidenceEvent:
    return EvidenceEvent(1, EventId("e1"), SessionId("s1"), Role.USER, text, AT, "Ana")


def _answer(*recurrences: object, kind: str = "recurring") -> ExtractionAnswer:
    claims = [
        {
            "kind": kind,
            "text": f"Ana swims ({index})",
            "sources": [{"event_id": "e1", "quote": "I swim every Monday at 7"}],
            "recurrence": recurrence,
        }
        for index, recurrence in enumerate(recurrences)
    ]
    payload = {
        "claims": claims,
        "corrections": [],
        "relations": [],
        "directive_drafts": [],
        "discarded_event_ids": [],
    }
    return msgspec.json.decode(msgspec.json.encode(payload), type=ExtractionAnswer)


def test_a_text_models_recurrence_is_validated_per_candidate() -> None:
    events = [_event("I swim every Monday at 7 until June.")]
    answer = _answer(
        {"kind": "weekly", "weekdays": [0], "time": "07:00", "until": "2027-06-01"},
        {"kind": "weekly", "weekdays": [7]},  # no such weekday
        {"kind": "monthly", "day": 32},  # no such day
        {"kind": "fortnightly"},  # out of the closed set
        {"kind": "daily", "time": "7am"},  # not HH:MM
        {"kind": "yearly", "month": 2, "day": 30},
    )
    batch = validate_proposal(proposal_from_answer(answer), events, "Europe/Berlin")
    assert batch.rejected_candidates == 5
    (draft,) = batch.drafts
    recurrence = draft.recurrence
    assert recurrence is not None
    assert (
        recurrence.describe() == "every Monday 07:00 (Europe/Berlin) until 2027-05-31"
    )
    assert recurrence.starts == AT  # the cited evidence, in the agent's zone
    assert draft.temporal is not None
    assert draft.temporal.valid_until == recurrence.until


def test_a_recurrence_on_a_claim_that_is_not_recurring_drops_that_candidate() -> None:
    events = [_event("I swim every Monday at 7.")]
    answer = _answer({"kind": "weekly", "weekdays": [0]}, kind="fact")
    batch = validate_proposal(proposal_from_answer(answer), events, "UTC")
    assert (batch.drafts, batch.rejected_candidates) == ((), 1)


def test_rule_drafts_keep_their_recurrence_through_validation() -> None:
    text = "I go to the gym every Monday."
    drafts = RuleExtractor().extract(
        [ExtractionInput(EventId("e1"), Role.USER, text, AT, "Ana", SessionId("s"))]
    )
    events = [_event(text)]
    batch = validate_proposal(proposal_from_drafts(drafts, events), events, "UTC")
    (draft,) = batch.drafts
    assert draft.recurrence == drafts[0].recurrence is not None
    assert isinstance(proposal_from_drafts(drafts, events), Proposal)


def test_each_clause_keeps_its_own_recurrence() -> None:
    drafts = RuleExtractor().extract(
        [
            ExtractionInput(
                EventId("e1"),
                Role.USER,
                "I swim every Monday and I run every Friday at 6pm.",
                AT,
                "Ana",
                SessionId("s"),
            )
        ],
        timezone="Europe/Berlin",
    )
    assert [
        (draft.text, draft.recurrence and draft.recurrence.describe())
        for draft in drafts
    ] == [
        ("Ana swims every Monday", "every Monday (Europe/Berlin)"),
        ("Ana runs every Friday at 6pm", "every Friday 18:00 (Europe/Berlin)"),
    ]


@pytest.mark.parametrize(
    ("text", "claim", "described"),
    [
        (
            "Every day at 7:30 am I walk the dog.",
            "Ana walks the dog every day at 7:30 am",
            "every day 07:30 (UTC)",
        ),
        ("我每天早上7:30跑步。", "Ana每天早上7:30跑步", "every day 07:30 (UTC)"),
    ],
)
def test_a_clock_time_does_not_split_the_clause(
    text: str, claim: str, described: str
) -> None:
    (draft,) = RuleExtractor().extract(
        [ExtractionInput(EventId("e1"), Role.USER, text, AT, "Ana", SessionId("s"))]
    )
    assert draft.text == claim
    assert draft.recurrence is not None
    assert draft.recurrence.describe() == described
