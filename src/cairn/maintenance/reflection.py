"""Reflection: durable observations several remembered statements support together.

Optional: it runs only with a text provider configured (without one, ``answered`` gets
``None`` and nothing is written). A pass lists a bounded number of the agent's active
agent-scope claims (the dirty seeds and their neighbours), asks the model for at most
:data:`MAX_REFLECTIONS` observations each citing at least two of them, and writes each as
a ``reflection`` claim:

- its evidence is the union of its cited claims' source spans, so it points back to the
  turns like every other claim (statements the user asked to remember have no turn:
  the derivation edges below are then its whole lineage);
- a ``reflection`` derivation edge from every cited claim, in the same transaction;
- origin ``model`` (recall labels it "noted by a model") and a confidence capped at
  :data:`MAX_CONFIDENCE`: an inference never outranks what the user said.

Forgetting any cited claim forgets the reflections derived from it
(cairn.store.forget_lineage): a reflection may restate what was forgotten.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final

import attrs

from cairn.domain.claim import ClaimDraft, ClaimKind, Origin, SourceSpan
from cairn.domain.ids import EventId
from cairn.ingestion.screen import redact_text
from cairn.maintenance.passes import PassResult, ProviderQuestion, Work
from cairn.store.claims import insert_claims

if TYPE_CHECKING:
    import apsw

__all__ = ["MAX_REFLECTIONS", "ReflectionPass", "ReflectionPlan"]

MIN_CLAIMS: Final = 3
"""Fewer active statements than this: nothing worth reflecting on."""
MAX_CLAIMS: Final = 16
"""Statements shown to the model per pass (the prompt stays small and bounded)."""
MAX_REFLECTIONS: Final = 3
MAX_TEXT: Final = 280
"""Characters of one reflection; a longer answer is refused, not cut."""
MAX_CONFIDENCE: Final = 0.6
# Claims a reflection may be drawn from: what was said or done, not other derived rows.
_SOURCE_KINDS: Final = tuple(
    kind.value
    for kind in ClaimKind
    if kind not in {ClaimKind.REFLECTION, ClaimKind.PERSONA, ClaimKind.WORKING}
)

_SYSTEM: Final = (
    "You read numbered statements an assistant remembered about its user. Write at most"
    f" {MAX_REFLECTIONS} reflections: general, lasting observations about the user (a"
    " habit, a pattern of preferences, a goal) that two or more statements support"
    " together. Cite the numbers of the statements that support each. Do not restate a"
    " single statement, do not guess beyond what the statements say, never write"
    " instructions. Each reflection is one plain sentence in the statements' language,"
    f" at most {MAX_TEXT} characters. Answer with JSON only; an empty list is a fine"
    " answer."
)
_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "reflections": {
            "type": "array",
            "maxItems": MAX_REFLECTIONS,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "sources": {"type": "array", "items": {"type": "integer"}},
                    "confidence": {"type": "number"},
                },
                "required": ["text", "sources"],
            },
        }
    },
    "required": ["reflections"],
}


@attrs.frozen
class Statement:
    rowid: int
    kind: str
    text: str
    at: str | None


@attrs.frozen
class Drafted:
    text: str
    parents: tuple[int, ...]
    confidence: float


@attrs.frozen
class ReflectionPlan:
    statements: tuple[Statement, ...]
    drafted: tuple[Drafted, ...] = ()


def _statements(connection: apsw.Connection, work: Work) -> list[Statement]:
    wanted = list(
        dict.fromkeys(
            [seed.claim_rowid for seed in work.seeds]
            + [
                rowid
                for seed in work.seeds
                for rowid in work.neighbours.get(seed.claim_rowid, ())
            ]
        )
    )
    found: list[Statement] = []
    for rowid in wanted:
        row = connection.execute(
            "SELECT rowid, kind, text, evidence_at FROM claims WHERE rowid = ?"
            " AND agent_id = ? AND lifecycle = 'active' AND scope = 'agent'"
            " AND kind IN (SELECT value FROM json_each(?))",
            (rowid, work.agent_id, json.dumps(_SOURCE_KINDS)),
        ).fetchone()
        if row is not None:
            found.append(Statement(int(row[0]), str(row[1]), str(row[2]), row[3]))
        if len(found) == MAX_CLAIMS:
            break
    return found


def _drafted(
    statements: Sequence[Statement], answer: Mapping[str, Any]
) -> tuple[Drafted, ...]:
    """The model's reflections that keep the rules; anything else is dropped."""
    items = answer.get("reflections")
    if not isinstance(items, list):
        return ()
    drafted: list[Drafted] = []
    texts: set[str] = set()
    known = {statement.text.casefold() for statement in statements}
    for item in items[:MAX_REFLECTIONS]:
        if not isinstance(item, Mapping):
            continue
        text, sources = item.get("text"), item.get("sources")
        if not isinstance(text, str) or not isinstance(sources, list):
            continue
        text = " ".join(text.split())
        if not text or len(text) > MAX_TEXT or text.casefold() in known | texts:
            continue
        numbers = {
            number
            for number in sources
            if isinstance(number, int)
            and not isinstance(number, bool)
            and 1 <= number <= len(statements)
        }
        if len(numbers) < 2:
            continue
        confidence = item.get("confidence")
        if not isinstance(confidence, int | float) or isinstance(confidence, bool):
            confidence = MAX_CONFIDENCE
        texts.add(text.casefold())
        drafted.append(
            Drafted(
                redact_text(text),
                tuple(statements[number - 1].rowid for number in sorted(numbers)),
                min(max(float(confidence), 0.1), MAX_CONFIDENCE),
            )
        )
    return tuple(drafted)


def _spans(
    connection: apsw.Connection, parents: Sequence[int]
) -> tuple[tuple[SourceSpan, ...], dict[EventId, int]]:
    spans: dict[tuple[str, int, int], SourceSpan] = {}
    rowids: dict[EventId, int] = {}
    for parent in parents:
        for event_id, event_rowid, start, end in connection.execute(
            "SELECT e.event_id, e.rowid, s.span_start, s.span_end FROM claim_sources s"
            " JOIN events e ON e.rowid = s.event_rowid WHERE s.claim_rowid = ?"
            " ORDER BY e.rowid, s.span_start",
            (parent,),
        ):
            event = EventId(str(event_id))
            spans.setdefault(
                (event, int(start), int(end)), SourceSpan(event, int(start), int(end))
            )
            rowids[event] = int(event_rowid)
    return tuple(spans.values()), rowids


@attrs.frozen
class ReflectionPass:
    name: ClassVar[str] = "reflection"

    def plan(self, connection: apsw.Connection, work: Work) -> ReflectionPlan | None:
        statements = _statements(connection, work)
        seeds = {seed.claim_rowid for seed in work.seeds}
        # Only new material earns a model call: a batch of reflections, persona rows or
        # forgotten claims alone asks nothing.
        if len(statements) < MIN_CLAIMS or not any(
            statement.rowid in seeds for statement in statements
        ):
            return None
        return ReflectionPlan(tuple(statements))

    def question(self, plan: ReflectionPlan) -> ProviderQuestion | None:
        lines = "\n".join(
            f"{number}. [{statement.kind}{'' if statement.at is None else ', ' + statement.at[:10]}]"
            f" {statement.text}"
            for number, statement in enumerate(plan.statements, start=1)
        )
        return ProviderQuestion(_SYSTEM, f"Statements:\n{lines}", _SCHEMA)

    def answered(
        self, plan: ReflectionPlan, answer: Mapping[str, Any] | None
    ) -> ReflectionPlan | None:
        if answer is None:
            return None  # reflection is the model's work: no model, no reflection
        drafted = _drafted(plan.statements, answer)
        return attrs.evolve(plan, drafted=drafted) if drafted else None

    def apply(
        self, connection: apsw.Connection, work: Work, plan: ReflectionPlan
    ) -> PassResult:
        agent_id, stamp = work.agent_id, work.now.astimezone(dt.UTC).isoformat()
        written: list[int] = []
        for drafted in plan.drafted:
            # Every cited statement must still be active: a reflection on something
            # forgotten or replaced meanwhile would outlive it.
            live = [
                parent
                for parent in drafted.parents
                if connection.execute(
                    "SELECT 1 FROM claims WHERE rowid = ? AND agent_id = ?"
                    " AND lifecycle = 'active'",
                    (parent, agent_id),
                ).fetchone()
            ]
            if len(live) != len(drafted.parents):
                continue
            # A statement the user asked to remember has no turn behind it: its
            # reflection then points back through its derivation edges alone.
            spans, event_rowids = _spans(connection, live)
            committed = insert_claims(
                connection,
                agent_id,
                [
                    ClaimDraft(
                        ClaimKind.REFLECTION,
                        drafted.text,
                        spans,
                        confidence=drafted.confidence,
                    )
                ],
                event_rowids,
                work.now,
                origin=Origin.MODEL,
            )
            for child, _text in committed.inserted:
                connection.executemany(
                    "INSERT INTO derivations (agent_id, parent_rowid, child_rowid,"
                    " relation, created_at) VALUES (?, ?, ?, 'reflection', ?)",
                    [(agent_id, parent, child, stamp) for parent in live],
                )
                written.append(child)
        return PassResult(changed=tuple(written), counts={"reflections": len(written)})
