"""The persona pass: rebuild the persona and working projections when agent-scope claims
changed.

The projection (cairn.store.projections) is a list of claim rowids per section, so a
rebuild is a handful of index reads on the snapshot (each kind's newest active
agent-scope claims) and one replace in the write transaction, re-validated there against
the rows as they are now. Seeds of narrower scopes never change it: only agent-scope
claims feed the persona. A claim changed after the snapshot gets a newer dirty
generation, stays dirty, and the next pass rebuilds again; so the projection always
catches up with the last change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from cairn.maintenance.passes import PassResult, ProviderQuestion, Work
from cairn.store.projections import (
    ProjectionPlan,
    SectionLimits,
    agent_scope_changed,
    plan_projection,
    replace_projection,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    import apsw

__all__ = ["PersonaPass"]


@attrs.frozen
class PersonaPass:
    """Rebuilds the agent's persona and working sections from its agent-scope claims."""

    name: ClassVar[str] = "persona"
    limits: SectionLimits = attrs.field(factory=SectionLimits)

    def plan(self, connection: apsw.Connection, work: Work) -> ProjectionPlan | None:
        rowids = [seed.claim_rowid for seed in work.seeds]
        if not agent_scope_changed(connection, work.agent_id, rowids):
            return None
        return plan_projection(connection, work.agent_id, work.now, self.limits)

    def question(self, plan: ProjectionPlan) -> ProviderQuestion | None:
        return None  # rules only: the sections are chosen by kind, time and confidence

    def answered(
        self, plan: ProjectionPlan, answer: Mapping[str, Any] | None
    ) -> ProjectionPlan | None:
        return plan

    def apply(
        self, connection: apsw.Connection, work: Work, plan: ProjectionPlan
    ) -> PassResult:
        written = replace_projection(connection, work.agent_id, plan)
        return PassResult(
            counts={"projection_rebuilt": 1, "projection_entries": written}
        )
