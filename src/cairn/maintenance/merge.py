"""The near-duplicate merge pass: two claims saying the same thing become one.

``plan`` (on a snapshot) looks at each dirty seed's same-scope neighbours (the
:class:`Work`'s, or a bounded lexical query of its own) and keeps the pairs that may
merge: same agent, scope and scope key, same kind family, the same temporal reading,
compatible attributes (both keyed: the same subject, and the same predicate or the same
one up to intensifiers and light verbs), and the near-duplicate rule of
:mod:`cairn.maintenance.duplicates` with the claims' own vectors when both have them.

The survivor is the more trusted claim (a user's explicit add, then what a user's turn
said, then the assistant's words, then a model's remember), so a user's statement is never
merged into a model's guess; at equal trust, the keyed one, the current one, the older one.
A merge that would lose an attribute (the survivor unkeyed, the absorbed keyed) or change
a history (values between them in their chain) is not made.

``apply`` decides every pair again on the rows as they are in the write transaction (a
claim forgotten, archived, superseded or re-sourced since the snapshot is no longer the
claim planned on) and merges through :func:`cairn.store.merge.merge_into`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from cairn.domain.scope import Scope, ScopeKind
from cairn.maintenance.duplicates import (
    best_cosine,
    near_duplicates,
    same_wording,
    wording,
)
from cairn.maintenance.passes import PassResult, SeedOutcome, Work
from cairn.store.clear_jobs import pending_clear
from cairn.store.merge import (
    MergeRow,
    adjacent_in_chain,
    claim_vectors,
    lexical_neighbours,
    load_merge_rows,
    merge_into,
    sole_in_chain,
)
from cairn.vectors.codec import decode_vector

if TYPE_CHECKING:
    from collections.abc import Mapping

    import apsw

    from cairn.domain.ids import AgentId
    from cairn.maintenance.passes import ProviderQuestion

__all__ = ["MergePass", "MergePlan"]

# Kinds that may merge with each other: a state is a fact that can change.
_FAMILY = {"state": "fact"}


@attrs.frozen
class MergePlan:
    pairs: tuple[tuple[int, int], ...]
    """(survivor, absorbed) rowids, in the order planned."""
    stale: tuple[int, ...]
    """Seeds whose claim is gone."""


def _trust(row: MergeRow) -> int:
    if row.origin == "user":
        return 3
    if row.origin == "extracted":
        return 1 if row.assistant_only else 2
    return 0


def _preference(row: MergeRow) -> tuple[int, bool, bool, int]:
    return (_trust(row), row.keyed, row.lifecycle == "active", -row.rowid)


def _predicates_agree(a: MergeRow, b: MergeRow) -> bool:
    if (a.subject or "").casefold() != (b.subject or "").casefold():
        return False
    if a.predicate == b.predicate:
        return True
    left, _, left_value = (a.predicate or "").partition(":")
    right, _, right_value = (b.predicate or "").partition(":")
    return (
        left == right
        and bool(left_value)
        and bool(right_value)
        and same_wording(wording(left_value), wording(right_value))
    )


def _cosine(
    vectors: Mapping[int, Mapping[str, tuple[bytes, int]]], a: int, b: int
) -> float | None:
    left, right = vectors.get(a, {}), vectors.get(b, {})
    best: float | None = None
    for key in left.keys() & right.keys():
        cosine = best_cosine(
            [decode_vector(*left[key]).astype("float32")],
            [decode_vector(*right[key]).astype("float32")],
        )
        if cosine is not None:
            best = cosine if best is None else max(best, cosine)
    return best


def _decide(
    connection: apsw.Connection,
    agent_id: AgentId,
    a: MergeRow,
    b: MergeRow,
    vectors: Mapping[int, Mapping[str, tuple[bytes, int]]],
) -> tuple[int, int] | None:
    """``(survivor, absorbed)`` if ``a`` and ``b`` merge, else ``None``. The row checks
    and the text rule come first; the chain queries only for a pair that passed them."""
    if a.rowid == b.rowid or (a.scope, a.scope_key) != (b.scope, b.scope_key):
        return None
    if _FAMILY.get(a.kind, a.kind) != _FAMILY.get(b.kind, b.kind):
        return None
    if a.temporal != b.temporal:
        return None
    survivor, absorbed = sorted((a, b), key=_preference, reverse=True)
    if absorbed.keyed and not survivor.keyed:
        return None  # the attribute would be lost
    if a.keyed and b.keyed and not _predicates_agree(a, b):
        return None
    lifecycles = {a.lifecycle, b.lifecycle}
    restated = (
        lifecycles == {"active", "superseded"}
        and a.keyed
        and b.keyed
        and a.predicate == b.predicate
    )
    if lifecycles != {"active"} and not restated:
        return None
    if not near_duplicates(a.text, b.text, _cosine(vectors, a.rowid, b.rowid)):
        return None
    if restated:
        # A value said again after itself: the two ends of one link of its chain.
        return (
            (survivor.rowid, absorbed.rowid)
            if adjacent_in_chain(connection, agent_id, a, b)
            else None
        )
    if (
        absorbed.keyed
        and absorbed.predicate != survivor.predicate
        and not sole_in_chain(connection, agent_id, absorbed)
    ):
        return None  # its chain's older values would lose what superseded them
    return survivor.rowid, absorbed.rowid


def _scope(row: MergeRow) -> Scope:
    return Scope(ScopeKind(row.scope), row.scope_key)


@attrs.define
class MergePass:
    name: ClassVar[str] = "merge"
    neighbour_limit: int = 16
    """Neighbours looked at per seed."""

    def plan(self, connection: apsw.Connection, work: Work) -> MergePlan | None:
        agent_id = work.agent_id
        seeds = [seed.claim_rowid for seed in work.seeds]
        rows = load_merge_rows(connection, agent_id, seeds)
        stale = tuple(rowid for rowid in seeds if rowid not in rows)
        neighbours: dict[int, list[int]] = {}
        for rowid, row in rows.items():
            if row.lifecycle not in {"active", "superseded"}:
                continue
            found = work.neighbours.get(rowid) or lexical_neighbours(
                connection, agent_id, _scope(row), row.text, self.neighbour_limit + 1
            )
            neighbours[rowid] = [n for n in found if n != rowid][: self.neighbour_limit]
        wanted = {n for found in neighbours.values() for n in found} - rows.keys()
        rows |= load_merge_rows(connection, agent_id, wanted)
        vectors = claim_vectors(connection, rows)
        pairs: list[tuple[int, int]] = []
        absorbed: set[int] = set()
        survivors: set[int] = set()
        for seed, found in neighbours.items():
            for other in found:
                if seed in absorbed:
                    break
                if other in absorbed or other not in rows:
                    continue
                pair = _decide(connection, agent_id, rows[seed], rows[other], vectors)
                if pair is None or pair[1] in survivors:
                    continue
                pairs.append(pair)
                survivors.add(pair[0])
                absorbed.add(pair[1])
        if not pairs:
            return None  # a stale seed settles as a done one does: nothing to write
        return MergePlan(tuple(pairs), stale)

    def question(self, plan: MergePlan) -> ProviderQuestion | None:
        return None

    def answered(
        self, plan: MergePlan, answer: Mapping[str, Any] | None
    ) -> MergePlan | None:
        return plan

    def apply(
        self, connection: apsw.Connection, work: Work, plan: MergePlan
    ) -> PassResult:
        agent_id = work.agent_id
        outcomes = dict.fromkeys(plan.stale, SeedOutcome.STALE)
        if pending_clear(connection, agent_id) is not None:
            return PassResult(outcomes=outcomes)
        changed: list[int] = []
        removed: list[int] = []
        for survivor, absorbed in plan.pairs:
            rows = load_merge_rows(connection, agent_id, (survivor, absorbed))
            if len(rows) < 2:
                continue
            vectors = claim_vectors(connection, rows)
            again = _decide(
                connection, agent_id, rows[survivor], rows[absorbed], vectors
            )
            if again != (survivor, absorbed):
                continue  # changed since the snapshot: looked at again when dirty
            merge_into(connection, agent_id, survivor, absorbed, work.now)
            changed.append(survivor)
            removed.append(absorbed)
        return PassResult(
            outcomes=outcomes,
            changed=tuple(dict.fromkeys(changed)),
            removed=tuple(removed),
            counts={"merged": len(removed)},
        )
