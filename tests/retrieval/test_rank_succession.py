"""Ranking with succession, on hand-built candidates: a history claim lends its score to
the value that replaced it, a group stating only history is demoted, and every item says
where it comes from."""

from __future__ import annotations

import datetime as dt

from cairn.domain.claim import Claim, ClaimKind, Lifecycle, Origin
from cairn.domain.evidence import EvidenceEvent, Role
from cairn.domain.ids import EventId, SessionId
from cairn.domain.scope import Scope
from cairn.retrieval.candidates import Candidates
from cairn.retrieval.keys import CandidateKey
from cairn.retrieval.rank import HISTORY_WEIGHT, rank_candidates

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
MOVED = dt.datetime(2026, 4, 13, tzinfo=dt.UTC)
WEIGHTS = {"event_fts": 2.0, "claim_fts": 0.5}


def _event(rowid: int, text: str, role: Role = Role.USER) -> EvidenceEvent:
    return EvidenceEvent(
        rowid, EventId(f"e{rowid}"), SessionId("s1"), role, text, NOW, None
    )


def _claim(
    rowid: int,
    text: str,
    source: int,
    *,
    lifecycle: Lifecycle = Lifecycle.ACTIVE,
    superseded_at: dt.datetime | None = None,
    origin: Origin = Origin.EXTRACTED,
    from_assistant: bool = False,
    predicate: str | None = "lives_in",
    evidence_at: dt.datetime | None = None,
) -> Claim:
    return Claim(
        rowid=rowid,
        claim_id=f"c{rowid}",
        kind=ClaimKind.FACT,
        lifecycle=lifecycle,
        origin=origin,
        text=text,
        confidence=0.8,
        temporal=None,
        scope=Scope.agent(),
        revision=1,
        source_event_ids=(EventId(f"e{source}"),),
        subject="Mei",
        predicate=predicate,
        superseded_at=superseded_at,
        evidence_at=evidence_at,
        from_assistant=from_assistant,
    )


def _moved() -> Candidates:
    """The query found only the old turn (e1) and its claim; c2 replaced c1."""
    old = _claim(
        1,
        "Mei lives in Shanghai",
        1,
        lifecycle=Lifecycle.SUPERSEDED,
        superseded_at=MOVED,
    )
    new = _claim(2, "Mei moved to Berlin", 2, evidence_at=MOVED)
    return Candidates(
        claims={1: old, 2: new},
        events={
            1: _event(1, "I live in Shanghai."),
            2: _event(2, "I moved to Berlin."),
        },
        lists={"event_fts": [CandidateKey.event(1)]},
        proposed=1,
        claims_by_event={1: [1]},
        successors={1: 2},
        anchors={2: 2},
    )


def test_the_replacing_value_ranks_first_with_its_evidence() -> None:
    items = rank_candidates(_moved(), NOW, WEIGHTS, 10)
    assert [(item.id, item.standing) for item in items] == [
        ("c2", "current"),
        ("e2", "current"),
        ("c1", "history"),
        ("e1", "history"),
    ]
    assert items[2].qualifier == "previously, until 2026-04-13"
    assert items[2].valid_until == MOVED.isoformat()
    # History ranks at a fraction of what the query gave it; the new value at all of it.
    found = 2.0 / 11
    assert items[0].score == round(found, 6)
    assert items[2].score == round(found * HISTORY_WEIGHT, 6)


def test_without_succession_history_is_only_demoted() -> None:
    candidates = _moved()
    alone = Candidates(
        claims={1: candidates.claims[1]},
        events={1: candidates.events[1]},
        lists=candidates.lists,
        proposed=1,
        claims_by_event={1: [1]},
    )
    items = rank_candidates(alone, NOW, WEIGHTS, 10)
    assert [(item.id, item.standing) for item in items] == [
        ("c1", "history"),
        ("e1", "history"),
    ]


def test_as_of_before_the_move_the_old_value_is_current() -> None:
    candidates = _moved()
    before = Candidates(
        claims={1: candidates.claims[1]},
        events={1: candidates.events[1]},
        lists=candidates.lists,
        proposed=1,
        claims_by_event={1: [1]},
    )
    items = rank_candidates(
        before, dt.datetime(2026, 3, 1, tzinfo=dt.UTC), WEIGHTS, 10, as_of=True
    )
    assert [(item.id, item.standing) for item in items] == [
        ("c1", "current"),
        ("e1", "current"),
    ]


def test_origins_follow_who_said_it() -> None:
    claims = {
        1: _claim(1, "from the user", 1, predicate=None),
        2: _claim(2, "from the assistant", 2, from_assistant=True, predicate=None),
        3: _claim(3, "asked to remember", 1, origin=Origin.USER, predicate=None),
        4: _claim(4, "a model's note", 1, origin=Origin.MODEL, predicate=None),
    }
    candidates = Candidates(
        claims=claims,
        events={
            1: _event(1, "user words"),
            2: _event(2, "assistant words", Role.ASSISTANT),
        },
        lists={"event_fts": [CandidateKey.event(1), CandidateKey.event(2)]},
        proposed=2,
        claims_by_event={1: [1, 3, 4], 2: [2]},
    )
    origins = {
        item.text: item.origin for item in rank_candidates(candidates, NOW, WEIGHTS, 10)
    }
    assert origins == {
        "from the user": "extracted",
        "from the assistant": "assistant_cited",
        "asked to remember": "remembered_by_user",
        "a model's note": "remembered_by_model",
        "user words": "user_said",
        "assistant words": "assistant_said",
    }
