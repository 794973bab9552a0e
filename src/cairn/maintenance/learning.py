"""The learning pass: a signal ledger and a belief per claim, derived from the record.

Nothing else has to call it. Each pass it reads what happened from durable rows and
records it as signals (idempotent by source, cairn.store.beliefs):

- **repeated evidence**: every source turn of a claim after its first (restatements
  merged into it, a merge pass's union of sources; for a remembered claim, every turn
  saying it again), keyed by the turn;
- **retrieval support**: each recall record that selected the claim, keyed by request;
- **feedback**: what a host reported through ``feedback`` (recorded by that call);
- **correction**: the claim is the old end of a ``supersede`` or ``edit`` edge;
- **contradiction**: the claim replaced a value that had at least as many sources as it
  has (the newer value wins by time, but its evidence is contested);
- **stale decay**: no evidence (the claim stored, a source turn received, a ``used``
  report) for :data:`STALE_AFTER` of domain time, one signal per period.

Then it recomputes the belief, a deterministic function of the claim's prior, its
origin and its signal totals (:func:`compute_belief`):

- *confidence* is a Beta posterior: ``alpha = PRIOR_STRENGTH * prior + repeated +
  used / 2`` and ``beta = PRIOR_STRENGTH * (1 - prior) + wrong + contradiction +
  correction`` (weights as recorded: a source 1, a ``used`` report 1, a ``wrong`` report
  4, a contradiction or correction 1); ``prior`` is the claim's stored confidence, which
  never changes (and its temporal confidence is not involved at all);
- *usefulness* is Beta(1, 1) updated by ``used`` reports and retrieval support (a
  quarter each) as successes and ``wrong`` reports as failures;
- *contradiction risk* is ``k / (k + 2)`` for ``k`` contradictions, corrections and
  wrong reports; *stability* is ``support / (support + 2) * (1 - risk)`` with
  ``support`` the evidence (extra sources and ``used`` reports), halved per stale
  period; *use count* counts the recalls that selected it and the ``used`` reports.

Retrieval support counts only in usefulness and use count: a recall selecting a claim is
ranking's own opinion, not evidence, so it moves neither the score (cairn.retrieval.rank)
nor the stage nor the stale clock, and what recall answers does not depend on how often
it was asked.

The stage follows with thresholds and hysteresis (:func:`next_stage`): a claim's level is
its origin's base (remembered by the user 2, a claim from the user's own turns 1, a
model's remember or the assistant's words 0) plus its evidence (extra sources and
``used`` reports); level 1 is ``probationary``, 2 ``active`` (entered at
confidence :data:`ACTIVE_ENTER`, kept down to :data:`ACTIVE_KEEP`), below ``candidate``;
confidence under :data:`QUARANTINE_BELOW` quarantines, which is final. How the stage
meets the stored lifecycle: a superseded claim's stage is ``superseded``; a quarantined
claim's lifecycle becomes ``quarantined`` (out of recall, kept for audit, like archived);
every other stage is an ``active`` claim, recalled with the belief in its score
(cairn.retrieval.rank); an archived claim keeps the stage it had.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from cairn.domain.belief import LADDER, Belief, SignalKind, Stage, base_level
from cairn.domain.claim import ClaimKind, Lifecycle, Origin
from cairn.maintenance.passes import PassResult, ProviderQuestion, SeedOutcome, Work
from cairn.store.beliefs import (
    ClaimFacts,
    Signal,
    SignalTotal,
    advance_cursors,
    claim_facts,
    claim_rowids,
    claims_after,
    derivations_of,
    learning_cursors,
    load_beliefs,
    quarantine_claim,
    recall_selections,
    record_signals,
    retract_evidence_signals,
    review_due,
    save_belief,
    signal_totals,
)
from cairn.store.requests import drop_late_results

if TYPE_CHECKING:
    from collections.abc import Mapping

    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    "ACTIVE_ENTER",
    "ACTIVE_KEEP",
    "PRIOR_STRENGTH",
    "QUARANTINE_BELOW",
    "STALE_AFTER",
    "LearningPass",
    "compute_belief",
    "next_stage",
]

PRIOR_STRENGTH = 4.0
"""How many observations the stored confidence counts for in the posterior."""
ACTIVE_ENTER = 0.6
ACTIVE_KEEP = 0.5
QUARANTINE_BELOW = 0.3
STALE_AFTER = dt.timedelta(days=90)
RETRIEVAL_WEIGHT = 0.25
"""A recall that selected a claim is weak support: it matched, nobody said it helped."""
REVIEW_EVERY = dt.timedelta(days=1)
"""A belief nothing touched is looked at again after this long (stale decay)."""

# Bounds per pass, so one pass never holds the writer long: the seeds (at most the
# actor's batch) plus at most a few hundred claims. Recall records past the bound wait for
# the next pass (retention may prune some first: retrieval support is the weakest signal).
RECALLS_PER_PASS = 16
REVIEWS_PER_PASS = 32
BACKFILL_PER_PASS = 64
WALK_DONE = 2**63 - 1
"""The walk's cursor once it has given every claim stored before it a belief."""


def _parse(stamp: str) -> dt.datetime | None:
    """A stored time; ``None`` for one that is not ISO-8601 (it supports nothing)."""
    try:
        moment = dt.datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _weight(totals: Mapping[SignalKind, SignalTotal], kind: SignalKind) -> float:
    total = totals.get(kind)
    return 0.0 if total is None else total.weight


def _count(totals: Mapping[SignalKind, SignalTotal], kind: SignalKind) -> int:
    total = totals.get(kind)
    return 0 if total is None else total.count


def support_level(facts: ClaimFacts, totals: Mapping[SignalKind, SignalTotal]) -> float:
    """Evidence for the claim: its extra sources and ``used`` reports. Retrieval support
    is not evidence (a recall selecting the claim is ranking's own opinion), so it
    moves neither the stage nor the stale clock, and recall's answer does not depend
    on how often it was asked."""
    return _weight(totals, SignalKind.REPEATED_EVIDENCE) + _weight(
        totals, SignalKind.FEEDBACK_USED
    )


def compute_belief(
    facts: ClaimFacts, totals: Mapping[SignalKind, SignalTotal], stage: Stage
) -> Belief:
    """The belief's numbers from the prior and the signal totals (module docstring)."""
    prior = min(max(facts.prior, 0.0), 1.0)
    repeated = _weight(totals, SignalKind.REPEATED_EVIDENCE)
    used = _weight(totals, SignalKind.FEEDBACK_USED)
    wrong = _weight(totals, SignalKind.FEEDBACK_WRONG)
    against = _weight(totals, SignalKind.CONTRADICTION) + _weight(
        totals, SignalKind.CORRECTION
    )
    alpha = PRIOR_STRENGTH * prior + repeated + used / 2
    beta = PRIOR_STRENGTH * (1 - prior) + wrong + against
    confidence = alpha / (alpha + beta) if alpha + beta > 0 else prior
    retrieved = _weight(totals, SignalKind.RETRIEVAL_SUPPORT)
    wrong_reports = _count(totals, SignalKind.FEEDBACK_WRONG)
    usefulness = (1 + used + retrieved) / (2 + used + retrieved + wrong_reports)
    contested = (
        _count(totals, SignalKind.CONTRADICTION)
        + _count(totals, SignalKind.CORRECTION)
        + wrong_reports
    )
    risk = contested / (contested + 2)
    support = support_level(facts, totals)
    stale = _count(totals, SignalKind.STALE_DECAY)
    stability = support / (support + 2) * (1 - risk) * 0.5**stale
    uses = _count(totals, SignalKind.RETRIEVAL_SUPPORT) + _count(
        totals, SignalKind.FEEDBACK_USED
    )
    return Belief(facts.rowid, confidence, usefulness, stability, risk, uses, stage)


def next_stage(
    facts: ClaimFacts,
    belief: Belief,
    level: float,
    previous: Stage | None,
    stale: bool,
) -> Stage:
    """The stage after this review (module docstring: thresholds and hysteresis)."""
    if facts.lifecycle is Lifecycle.SUPERSEDED:
        return Stage.SUPERSEDED
    if facts.lifecycle is Lifecycle.QUARANTINED or previous is Stage.QUARANTINED:
        return Stage.QUARANTINED
    if facts.lifecycle is Lifecycle.ARCHIVED and previous is not None:
        return previous
    if belief.confidence < QUARANTINE_BELOW and facts.lifecycle is Lifecycle.ACTIVE:
        return Stage.QUARANTINED
    ladder = LADDER[min(int(level + base_level(facts.origin, facts.from_assistant)), 2)]
    if ladder is Stage.ACTIVE:
        keep = previous in (Stage.ACTIVE, Stage.DECAYING)
        if belief.confidence < (ACTIVE_KEEP if keep else ACTIVE_ENTER):
            ladder = Stage.PROBATIONARY
    return Stage.DECAYING if stale else ladder


@attrs.frozen
class LearningPlan:
    claim_rowids: tuple[int, ...]
    retrievals: tuple[Signal, ...]
    recall_seq: int
    backfill_rowid: int


@attrs.define
class LearningPass:
    """Signals and beliefs for the seeds, the claims new recalls selected, beliefs due
    for review and (a bounded walk) claims that have none yet."""

    name: ClassVar[str] = "learning"
    sweeps: ClassVar[bool] = True
    """Runs without seeds too: recalls, reviews and the walk find their own work."""

    def plan(self, connection: apsw.Connection, work: Work) -> LearningPlan | None:
        agent_id = work.agent_id
        recall_seq, backfill = learning_cursors(connection, agent_id)
        plan_start = backfill
        rowids: dict[int, None] = dict.fromkeys(seed.claim_rowid for seed in work.seeds)
        retrievals: list[Signal] = []
        selections = recall_selections(
            connection, agent_id, recall_seq, RECALLS_PER_PASS
        )
        for selection in selections:
            recall_seq = selection.seq
            found = claim_rowids(connection, agent_id, selection.selected_ids)
            for rowid in found.values():
                rowids[rowid] = None
                retrievals.append(
                    Signal(
                        rowid,
                        SignalKind.RETRIEVAL_SUPPORT,
                        f"request:{selection.request_id}",
                        RETRIEVAL_WEIGHT,
                        selection.created_at,
                    )
                )
        walked: list[int] = []
        if backfill != WALK_DONE:
            walked = claims_after(connection, agent_id, backfill, BACKFILL_PER_PASS)
            unbelieved = set(walked) - set(load_beliefs(connection, walked))
            rowids.update(dict.fromkeys(sorted(unbelieved)))
            # Every claim stored from now on is dirty work when it arrives (so is an
            # imported one): the walk is needed once, and a finished one costs nothing.
            backfill = walked[-1] if walked else WALK_DONE
        rowids.update(
            dict.fromkeys(
                review_due(
                    connection, agent_id, work.now - REVIEW_EVERY, REVIEWS_PER_PASS
                )
            )
        )
        if not rowids and not selections and not walked and backfill == plan_start:
            return None
        return LearningPlan(tuple(rowids), tuple(retrievals), recall_seq, backfill)

    def question(self, plan: LearningPlan) -> ProviderQuestion | None:
        return None

    def answered(
        self, plan: LearningPlan, answer: Mapping[str, Any] | None
    ) -> LearningPlan | None:
        return plan

    def apply(
        self, connection: apsw.Connection, work: Work, plan: LearningPlan
    ) -> PassResult:
        agent_id = work.agent_id
        counts = {"signals": record_signals(connection, agent_id, plan.retrievals)}
        advance_cursors(connection, agent_id, plan.recall_seq, plan.backfill_rowid)
        seeds = {seed.claim_rowid for seed in work.seeds}
        outcomes: dict[int, SeedOutcome] = {}
        changed: list[int] = []
        previous = load_beliefs(connection, plan.claim_rowids)
        for rowid in plan.claim_rowids:
            try:
                facts = claim_facts(connection, agent_id, rowid)
            except ValueError:  # a malformed row: never learnable
                if rowid in seeds:
                    outcomes[rowid] = SeedOutcome.TERMINAL
                continue
            if facts is None:  # forgotten or cleared since the snapshot
                if rowid in seeds:
                    outcomes[rowid] = SeedOutcome.STALE
                continue
            if facts.kind in _PROJECTIONS:
                continue  # rebuilt from other claims: their trust is those claims'
            counts["signals"] += self._derive(connection, agent_id, facts, work.now)
            before = previous.get(rowid)
            after = self._review(connection, agent_id, facts, before, work.now)
            counts["signals"] += after[1]
            stage = after[0].stage
            if before is not None and stage is not before.stage:
                key = "promoted" if _rank(stage) > _rank(before.stage) else "demoted"
                counts[key] = counts.get(key, 0) + 1
            if stage is Stage.QUARANTINED and quarantine_claim(
                connection, agent_id, rowid, work.now
            ):
                changed.append(rowid)
                counts["quarantined"] = counts.get("quarantined", 0) + 1
            counts["beliefs"] = counts.get("beliefs", 0) + 1
        if changed:
            drop_late_results(connection, agent_id)
        return PassResult(outcomes=outcomes, changed=tuple(changed), counts=counts)

    def _derive(
        self,
        connection: apsw.Connection,
        agent_id: AgentId,
        facts: ClaimFacts,
        now: dt.datetime,
    ) -> int:
        """Record the evidence, correction and contradiction signals the rows show."""
        # A remembered claim was stated by its remember: each turn saying it again is a
        # repetition; an extracted claim's first turn is its statement.
        repeats = (
            facts.sources if facts.origin is not Origin.EXTRACTED else facts.sources[1:]
        )
        signals = [
            Signal(facts.rowid, SignalKind.REPEATED_EVIDENCE, f"event:{event}", 1.0, at)
            for event, at in repeats
        ]
        retract_evidence_signals(
            connection, facts.rowid, [signal.source_key for signal in signals]
        )
        for edge in derivations_of(connection, agent_id, facts.rowid):
            key = f"derivation:{edge.rowid}"
            if edge.parent_rowid == facts.rowid:
                signals.append(
                    Signal(
                        facts.rowid, SignalKind.CORRECTION, key, 1.0, edge.created_at
                    )
                )
            elif edge.relation == "supersede" and edge.parent_sources >= max(
                edge.child_sources, 1
            ):
                signals.append(
                    Signal(
                        facts.rowid, SignalKind.CONTRADICTION, key, 1.0, edge.created_at
                    )
                )
        return record_signals(connection, agent_id, signals)

    def _review(
        self,
        connection: apsw.Connection,
        agent_id: AgentId,
        facts: ClaimFacts,
        before: Belief | None,
        now: dt.datetime,
    ) -> tuple[Belief, int]:
        """Stale decay, then the belief and stage; promotion and demotion are recorded as
        signals of their own (weight 0: they are outcomes, not evidence)."""
        totals = signal_totals(connection, facts.rowid)
        supported = [facts.created_at, *(at for _, at in facts.sources)]
        last = totals.get(SignalKind.FEEDBACK_USED)
        if last is not None and last.last_at is not None:
            supported.append(last.last_at)
        times = [moment for moment in map(_parse, supported) if moment is not None]
        last_support = max(times, default=now)
        periods = math.floor((now - last_support) / STALE_AFTER)
        added = 0
        if periods >= 1 and facts.lifecycle is Lifecycle.ACTIVE:
            since = last_support.isoformat()
            added += record_signals(
                connection,
                agent_id,
                [
                    Signal(
                        facts.rowid,
                        SignalKind.STALE_DECAY,
                        f"since:{since}:{period}",
                        1.0,
                        (last_support + STALE_AFTER * period).isoformat(),
                    )
                    for period in range(1, periods + 1)
                ],
            )
            if added:
                totals = signal_totals(connection, facts.rowid)
        # Hysteresis: a decaying claim stays so until support is fresh again.
        stale = periods >= 1 or (
            before is not None
            and before.stage is Stage.DECAYING
            and now - last_support >= STALE_AFTER / 2
        )
        interim = compute_belief(facts, totals, Stage.CANDIDATE)
        stage = next_stage(
            facts,
            interim,
            support_level(facts, totals),
            None if before is None else before.stage,
            stale,
        )
        belief = attrs.evolve(interim, stage=stage)
        if before is not None and before.stage is not stage:
            kind = (
                SignalKind.PROMOTION
                if _rank(stage) > _rank(before.stage)
                else SignalKind.DEMOTION
            )
            added += record_signals(
                connection,
                agent_id,
                [
                    Signal(
                        facts.rowid,
                        kind,
                        f"{before.stage.value}->{stage.value}@{now.isoformat()}",
                        0.0,
                        now.astimezone(dt.UTC).isoformat(),
                    )
                ],
            )
        save_belief(connection, agent_id, belief, now)
        return belief, added


_PROJECTIONS = frozenset({ClaimKind.PERSONA, ClaimKind.WORKING})

_ORDER = {
    Stage.QUARANTINED: 0,
    Stage.SUPERSEDED: 1,
    Stage.DECAYING: 2,
    Stage.CANDIDATE: 3,
    Stage.PROBATIONARY: 4,
    Stage.ACTIVE: 5,
}


def _rank(stage: Stage) -> int:
    return _ORDER[stage]
