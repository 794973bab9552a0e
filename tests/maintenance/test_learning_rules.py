"""The belief model on its own: the posterior, the stage thresholds and their hysteresis,
and the bound on what a belief does to a recall score."""

from __future__ import annotations

import datetime as dt

import pytest

from cairn.domain.belief import Belief, SignalKind, Stage, initial_stage
from cairn.domain.claim import Claim, ClaimKind, Lifecycle, Origin
from cairn.domain.scope import Scope
from cairn.maintenance.learning import (
    ACTIVE_ENTER,
    ACTIVE_KEEP,
    QUARANTINE_BELOW,
    compute_belief,
    next_stage,
    support_level,
)
from cairn.retrieval.rank import BELIEF_BOUNDS, belief_factor
from cairn.store.beliefs import ClaimFacts, SignalTotal


def _facts(
    origin: Origin = Origin.EXTRACTED,
    lifecycle: Lifecycle = Lifecycle.ACTIVE,
    prior: float = 0.8,
) -> ClaimFacts:
    return ClaimFacts(
        1,
        "c1",
        ClaimKind.FACT,
        origin,
        lifecycle,
        prior,
        "2026-01-05T09:00:00+00:00",
        False,
        (),
    )


def _totals(**weights: float) -> dict[SignalKind, SignalTotal]:
    totals = {}
    for name, weight in weights.items():
        kind = SignalKind(name)
        per = (
            0.25
            if kind is SignalKind.RETRIEVAL_SUPPORT
            else (4.0 if kind is SignalKind.FEEDBACK_WRONG else 1.0)
        )
        totals[kind] = SignalTotal(round(weight / per), weight, None)
    return totals


def _stage(facts: ClaimFacts, previous: Stage | None = None, **weights: float) -> Stage:
    totals = _totals(**weights)
    belief = compute_belief(facts, totals, Stage.CANDIDATE)
    return next_stage(facts, belief, support_level(facts, totals), previous, False)


def test_a_fresh_belief_is_the_prior() -> None:
    belief = compute_belief(_facts(prior=0.8), {}, Stage.PROBATIONARY)
    assert belief.confidence == pytest.approx(0.8)
    assert belief.usefulness == pytest.approx(0.5)
    assert (belief.contradiction_risk, belief.use_count) == (0.0, 0)


def test_origin_sets_the_starting_stage() -> None:
    assert initial_stage(Origin.MODEL, False) is Stage.CANDIDATE
    assert initial_stage(Origin.EXTRACTED, True) is Stage.CANDIDATE
    assert initial_stage(Origin.EXTRACTED, False) is Stage.PROBATIONARY
    assert initial_stage(Origin.USER, False) is Stage.ACTIVE
    assert _stage(_facts(Origin.MODEL, prior=0.6)) is Stage.CANDIDATE


def test_two_wrong_reports_quarantine_an_extracted_claim_but_not_a_users_remember() -> (
    None
):
    extracted = _facts(prior=0.8)
    assert _stage(extracted, feedback_wrong=4.0) is Stage.PROBATIONARY
    assert _stage(extracted, feedback_wrong=8.0) is Stage.QUARANTINED
    remembered = _facts(Origin.USER, prior=0.95)
    assert _stage(remembered, Stage.ACTIVE, feedback_wrong=8.0) is not Stage.QUARANTINED
    assert _stage(remembered, Stage.ACTIVE, feedback_wrong=12.0) is Stage.QUARANTINED


def test_quarantine_is_final_and_superseded_follows_the_lifecycle() -> None:
    assert (
        _stage(_facts(), Stage.QUARANTINED, repeated_evidence=5.0) is Stage.QUARANTINED
    )
    assert _stage(_facts(lifecycle=Lifecycle.SUPERSEDED)) is Stage.SUPERSEDED
    assert _stage(_facts(lifecycle=Lifecycle.ARCHIVED), Stage.ACTIVE) is Stage.ACTIVE


def test_active_is_entered_and_left_at_different_confidences() -> None:
    # Enough support for active, confidence between the two thresholds.
    facts = _facts(prior=0.5)
    totals = _totals(repeated_evidence=1.0, contradiction=1.0)
    belief = compute_belief(facts, totals, Stage.CANDIDATE)
    assert ACTIVE_KEEP <= belief.confidence < ACTIVE_ENTER
    level = support_level(facts, totals)
    assert next_stage(facts, belief, level, Stage.PROBATIONARY, False) is (
        Stage.PROBATIONARY
    )
    assert next_stage(facts, belief, level, Stage.ACTIVE, False) is Stage.ACTIVE
    assert QUARANTINE_BELOW < ACTIVE_KEEP < ACTIVE_ENTER


def test_stale_moves_any_recalled_stage_to_decaying() -> None:
    facts = _facts()
    belief = compute_belief(facts, {}, Stage.CANDIDATE)
    assert next_stage(facts, belief, 0.0, Stage.ACTIVE, True) is Stage.DECAYING
    superseded = _facts(lifecycle=Lifecycle.SUPERSEDED)
    assert next_stage(superseded, belief, 0.0, Stage.ACTIVE, True) is Stage.SUPERSEDED


def test_the_computation_is_deterministic() -> None:
    facts = _facts()
    totals = _totals(repeated_evidence=2.0, retrieval_support=0.75, feedback_used=1.0)
    assert compute_belief(facts, totals, Stage.ACTIVE) == compute_belief(
        facts, totals, Stage.ACTIVE
    )


def _claim(confidence: float = 0.8) -> Claim:
    return Claim(
        rowid=1,
        claim_id="c1",
        kind=ClaimKind.FACT,
        lifecycle=Lifecycle.ACTIVE,
        origin=Origin.EXTRACTED,
        text="Ana lives in Porto",
        confidence=confidence,
        temporal=None,
        scope=Scope.agent(),
        revision=1,
        source_event_ids=(),
        evidence_at=dt.datetime(2026, 1, 5, tzinfo=dt.UTC),
    )


@pytest.mark.parametrize(
    ("confidence", "usefulness", "stage"),
    [
        (1.0, 1.0, Stage.ACTIVE),
        (0.0, 0.0, Stage.PROBATIONARY),
        (0.0, 0.0, Stage.DECAYING),
        (0.8, 0.5, Stage.DECAYING),
    ],
)
def test_the_belief_factor_is_bounded(
    confidence: float, usefulness: float, stage: Stage
) -> None:
    belief = Belief(1, confidence, usefulness, 0.0, 0.0, 0, stage)
    low, high = BELIEF_BOUNDS
    assert low <= belief_factor(_claim(), belief) <= high


def test_a_claim_nothing_has_confirmed_ranks_as_without_learning() -> None:
    assert belief_factor(_claim(), None) == 1.0
    fresh = Belief(1, 0.8, 0.5, 0.0, 0.0, 0, Stage.PROBATIONARY)
    assert belief_factor(_claim(0.8), fresh) == pytest.approx(1.0)
