"""Persona and working projections: which agent-scope claims each section shows.

A projection is derived data (architecture §1): rebuilt from the authoritative claims,
never a source of truth. ``projection_entries`` (schema 0013) holds one row per shown
claim: its section, its position, its claim rowid. No text: recall renders each entry
from its claim, re-validated in the same snapshot as the other candidates, so an entry
whose claim was forgotten, cleared or retired is gone with it (``ON DELETE CASCADE``),
and one whose claim was since archived or superseded is simply not shown.

The sections, in the order a contribution shows them (:data:`SECTION_ORDER`), and the
claim kinds that feed each (:data:`SECTION_KINDS`):

- current state: ``state`` and ``working`` claims, newest evidence first;
- stable preferences and facts (the persona): ``preference``, ``fact``, ``persona`` and
  ``decision``, the most confident first, then the newest evidence, then the newest row;
- recent events: ``event`` claims, the latest happening first (an event is history by
  nature: the only section that shows what is over);
- plans and recurring items: dated plans soonest first, then undated plans, then
  recurring items by their next occurrence;
- reflections: ``reflection`` claims, newest first.

Only ``active`` claims of agent scope are shown: superseded, archived, quarantined and
candidate claims, and every narrower scope, never are. Each section is bounded
(:class:`SectionLimits`), and a text already shown (normalised) is not shown twice.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import unicodedata
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from cairn.domain.claim import Claim, ClaimKind, Lifecycle
from cairn.domain.scope import Scope
from cairn.domain.temporal import next_occurrence
from cairn.store.claims import load_claims

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    "SECTION_KINDS",
    "SECTION_ORDER",
    "ProjectionPlan",
    "Section",
    "SectionLimits",
    "agent_scope_changed",
    "load_projection",
    "plan_projection",
    "replace_projection",
]


class Section(enum.StrEnum):
    """A section of the persona and working projection (stored as its value)."""

    CURRENT_STATE = "current_state"
    STABLE = "stable"
    RECENT_EVENTS = "recent_events"
    PLANS = "plans"
    REFLECTIONS = "reflections"


# The order a contribution shows them in: what holds now, who the user is, what just
# happened, what is ahead, what was concluded.
SECTION_ORDER: tuple[Section, ...] = (
    Section.CURRENT_STATE,
    Section.STABLE,
    Section.RECENT_EVENTS,
    Section.PLANS,
    Section.REFLECTIONS,
)

SECTION_KINDS: Mapping[Section, frozenset[ClaimKind]] = {
    Section.CURRENT_STATE: frozenset({ClaimKind.STATE, ClaimKind.WORKING}),
    Section.STABLE: frozenset(
        {ClaimKind.PREFERENCE, ClaimKind.FACT, ClaimKind.PERSONA, ClaimKind.DECISION}
    ),
    Section.RECENT_EVENTS: frozenset({ClaimKind.EVENT}),
    Section.PLANS: frozenset({ClaimKind.PLAN, ClaimKind.RECURRING}),
    Section.REFLECTIONS: frozenset({ClaimKind.REFLECTION}),
}
_SECTION_OF = {
    kind: section for section, kinds in SECTION_KINDS.items() for kind in kinds
}


@attrs.frozen
class SectionLimits:
    """How many claims each section holds at most, and how many of each kind's newest
    claims a rebuild reads to choose them from (``window`` times the section's size)."""

    current_state: int = 6
    stable: int = 12
    recent_events: int = 6
    plans: int = 6
    reflections: int = 4
    window: int = 4

    def of(self, section: Section) -> int:
        size: int = getattr(self, section.value)
        return size


@attrs.frozen
class ProjectionPlan:
    """The claims each section should show, in order (claim rowids)."""

    sections: Mapping[Section, tuple[int, ...]]

    @property
    def rowids(self) -> tuple[int, ...]:
        return tuple(
            rowid
            for section in SECTION_ORDER
            for rowid in self.sections.get(section, ())
        )


_AGENT = (Scope.agent(),)
_NEVER = dt.datetime.min.replace(tzinfo=dt.UTC)


def agent_scope_changed(
    connection: apsw.Connection, agent_id: AgentId, claim_rowids: Iterable[int]
) -> bool:
    """Whether any of the claims is an agent-scope claim of the agent (of any lifecycle:
    one that just became superseded or archived leaves its section), or is gone (a
    deleted claim's entries went by cascade: its section has room for the next one)."""
    return any(
        row[0] is None or row[0] == "agent"
        for row in connection.execute(
            "SELECT c.scope FROM json_each(?) AS wanted LEFT JOIN claims c"
            " ON c.rowid = wanted.value AND c.agent_id = ?",
            (json.dumps(sorted(set(claim_rowids))), agent_id),
        )
    )


def _newest(
    connection: apsw.Connection, agent_id: AgentId, kind: ClaimKind, limit: int
) -> list[int]:
    # Literally the partial index's condition (claims_projection, 0013), so the planner
    # walks it backwards instead of sorting the agent's claims.
    return [
        int(row[0])
        for row in connection.execute(
            "SELECT rowid FROM claims WHERE agent_id = ? AND kind = ?"
            " AND scope = 'agent' AND lifecycle = 'active'"
            " ORDER BY evidence_at DESC, rowid DESC LIMIT ?",
            (agent_id, kind.value, limit),
        )
    ]


def _normal(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _evidence(claim: Claim) -> dt.datetime:
    return claim.evidence_at or _NEVER


def _happened(claim: Claim) -> dt.datetime:
    temporal = claim.temporal
    if temporal is not None and temporal.valid_from is not None:
        return temporal.valid_from
    return _evidence(claim)


def _ahead(claim: Claim, now: dt.datetime) -> tuple[int, float, int] | None:
    """A plan or recurring item's place in "plans": dated plans by date, then undated
    plans (newest first), then recurring items by next occurrence; ``None`` when it is
    over (an ended window, a plan whose time has passed)."""
    temporal = claim.temporal
    if (
        temporal is not None
        and temporal.valid_until is not None
        and temporal.valid_until <= now
    ):
        return None
    if claim.kind is ClaimKind.RECURRING:
        following = (
            None if claim.recurrence is None else next_occurrence(claim.recurrence, now)
        )
        if claim.recurrence is not None and following is None:
            return None
        at = following.timestamp() if following is not None else float("inf")
        return (2, at, -claim.rowid)
    if temporal is not None and temporal.valid_from is not None:
        return (0, temporal.valid_from.timestamp(), -claim.rowid)
    return (1, -_evidence(claim).timestamp(), -claim.rowid)


def _current(claim: Claim, now: dt.datetime) -> bool:
    """A state that has ended (or not begun) is not the current state."""
    temporal = claim.temporal
    return (
        temporal is None or claim.kind is not ClaimKind.STATE or temporal.contains(now)
    )


def _ordered(
    section: Section, claims: Sequence[Claim], now: dt.datetime
) -> list[Claim]:
    if section is Section.PLANS:
        placed = [
            (key, claim) for claim in claims if (key := _ahead(claim, now)) is not None
        ]
        return [claim for _, claim in sorted(placed, key=lambda pair: pair[0])]
    if section is Section.STABLE:
        return sorted(
            claims,
            key=lambda c: (-c.confidence, -_evidence(c).timestamp(), -c.rowid),
        )
    if section is Section.RECENT_EVENTS:
        return sorted(claims, key=lambda c: (-_happened(c).timestamp(), -c.rowid))
    current = [claim for claim in claims if _current(claim, now)]
    return sorted(current, key=lambda c: (-_evidence(c).timestamp(), -c.rowid))


def plan_projection(
    connection: apsw.Connection,
    agent_id: AgentId,
    now: dt.datetime,
    limits: SectionLimits | None = None,
) -> ProjectionPlan:
    """The sections as the claims stand in this snapshot, each bounded and in order."""
    limits = limits or SectionLimits()
    wanted: list[int] = []
    for section in SECTION_ORDER:
        for kind in sorted(SECTION_KINDS[section]):
            wanted.extend(
                _newest(connection, agent_id, kind, limits.of(section) * limits.window)
            )
    claims = load_claims(connection, agent_id, wanted, _AGENT, (Lifecycle.ACTIVE,))
    by_section: dict[Section, list[Claim]] = {section: [] for section in SECTION_ORDER}
    for claim in claims.values():
        by_section[_SECTION_OF[claim.kind]].append(claim)
    seen: set[str] = set()
    sections: dict[Section, tuple[int, ...]] = {}
    for section in SECTION_ORDER:
        chosen: list[int] = []
        for claim in _ordered(section, by_section[section], now):
            if len(chosen) >= limits.of(section):
                break
            fingerprint = _normal(claim.text)
            if fingerprint in seen:
                continue
            seen.add(fingerprint)
            chosen.append(claim.rowid)
        if chosen:
            sections[section] = tuple(chosen)
    return ProjectionPlan(sections)


def replace_projection(
    connection: apsw.Connection, agent_id: AgentId, plan: ProjectionPlan
) -> int:
    """Replace the agent's projection with ``plan`` (the caller owns the transaction).

    Re-validated against the rows as they are now: an entry whose claim was forgotten,
    archived, superseded or moved out of its section's kinds since the plan was read is
    left out. Returns how many entries were written.
    """
    kinds = {
        int(row[0]): ClaimKind(str(row[1]))
        for row in connection.execute(
            "SELECT c.rowid, c.kind FROM json_each(?) AS wanted CROSS JOIN claims c"
            " ON c.rowid = wanted.value WHERE c.agent_id = ? AND c.scope = 'agent'"
            " AND c.lifecycle = 'active'"
            " AND NOT EXISTS (SELECT 1 FROM clear_jobs j WHERE j.agent_id = c.agent_id"
            "  AND j.phase <> 'done' AND c.rowid <= j.rowid_cutoff)",
            (json.dumps(sorted(set(plan.rowids))), agent_id),
        )
    }
    connection.execute("DELETE FROM projection_entries WHERE agent_id = ?", (agent_id,))
    rows = [
        (agent_id, section.value, position, rowid)
        for section in SECTION_ORDER
        for position, rowid in enumerate(
            rowid
            for rowid in plan.sections.get(section, ())
            if rowid in kinds and kinds[rowid] in SECTION_KINDS[section]
        )
    ]
    connection.executemany(
        "INSERT INTO projection_entries (agent_id, section, position, claim_rowid)"
        " VALUES (?, ?, ?, ?)",
        rows,
    )
    return len(rows)


def load_projection(
    connection: apsw.Connection, agent_id: AgentId
) -> list[tuple[Section, int]]:
    """The agent's entries as ``(section, claim rowid)``, in section order then position
    (one primary-key range read; the claims are re-validated by the caller)."""
    stored = [
        (Section(str(row[0])), int(row[1]), int(row[2]))
        for row in connection.execute(
            "SELECT section, position, claim_rowid FROM projection_entries"
            " WHERE agent_id = ?",
            (agent_id,),
        )
    ]
    rank = {section: index for index, section in enumerate(SECTION_ORDER)}
    stored.sort(key=lambda entry: (rank[entry[0]], entry[1]))
    return [(section, rowid) for section, _, rowid in stored]
