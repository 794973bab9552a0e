"""Challenge and supersede: contradictions succession at insert does not settle.

Succession (cairn.store.succession) already orders the claims of one attribute (same
subject, predicate and scope) by evidence time when they are written. This pass looks at
what that leaves:

* a claim without a predicate key (a remembered "The user lives in Lisbon") that states
  a value of a known attribute: the rule extractor's lexicons read its key, and the claim
  joins that attribute's chain, so the newer value wins with lineage;
* a model's claim against the user's (or what was extracted from the user's turns) with
  another value: the user's word stands, the model's claim is superseded by it;
* two values of one attribute the rules cannot order: stated at the same moment by
  equally strong sources, or a hedged newer value against a plainly stated older one.
  Those become a ``conflicts`` row for the user (cairn.store.conflicts); both claims stay
  recallable, marked ``conflicting``;
* with a text provider configured, claims without a readable key and their same-scope
  neighbours: the model says whether they contradict and which holds.

Who wins, in order: never across scopes (a contradiction in another scope changes
nothing); a claim whose validity ended (``valid_until`` past) is history, not a
contradiction; then the newer evidence time; at equal time the stronger origin (user,
then extracted, then model) and then the higher confidence; a model's claim never
overturns a user's or an extracted one whatever its time; a hedged newer value (confidence
below :data:`HEDGED_BELOW`) against a confident older one (at least
:data:`CONFIDENT_FROM`) is for the user; so is a tie on all of these.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING, Any, ClassVar

import apsw
import attrs
import msgspec

from cairn.domain.claim import ClaimKind, Lifecycle, Origin
from cairn.domain.evidence import Role
from cairn.domain.ids import AgentId, EventId, SessionId
from cairn.domain.values import same_value
from cairn.ingestion.extract import ExtractionInput, RuleExtractor
from cairn.maintenance.passes import PassResult, ProviderQuestion, SeedOutcome, Work
from cairn.store.claims import claim_fts_body
from cairn.store.conflicts import (
    ConflictPair,
    conflicted_pairs,
    open_conflict,
    record_decision,
    supersede,
)
from cairn.store.succession import order_succession

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "CONFIDENT_FROM",
    "HEDGED_BELOW",
    "ChallengeAnswer",
    "ChallengePass",
    "ChallengePlan",
    "PairVerdict",
    "inferred_attribute",
    "same_value",
]

HEDGED_BELOW = 0.5
"""A claim less sure than this is hedged ("I think I might…")."""
CONFIDENT_FROM = 0.7
"""A claim at least this sure is stated plainly."""
MAX_QUESTION_PAIRS = 8
"""Pairs one provider question asks about (bounded like every other step)."""
NEIGHBOURS_ASKED = 3
"""Neighbours of one seed put to the provider."""
_SUBJECTS_READ = 50

# Identity, lifecycle and projection rows: never challenged.
_UNCHALLENGED_KINDS = frozenset(
    {ClaimKind.PERSONA, ClaimKind.WORKING, ClaimKind.REFLECTION}
)
_ORIGIN_RANK = {Origin.MODEL: 0, Origin.EXTRACTED: 1, Origin.USER: 2}

SAME_TIME = "same_time"
HEDGED_NEWER = "hedged_newer"
PROVIDER_UNDECIDED = "provider_undecided"


# -- reading claims --------------------------------------------------------------------
@attrs.frozen
class _Row:
    rowid: int
    kind: ClaimKind
    lifecycle: Lifecycle
    origin: Origin
    text: str
    subject: str | None
    predicate: str | None
    scope: str
    scope_key: str | None
    confidence: float
    evidence_at: dt.datetime | None
    valid_until: dt.datetime | None
    revision: int

    @property
    def keyed(self) -> bool:
        return self.subject is not None and self.predicate is not None

    @property
    def strength(self) -> tuple[int, float]:
        return (_ORIGIN_RANK[self.origin], self.confidence)

    def ended(self, now: dt.datetime) -> bool:
        """Valid only in the past: history, not a contradiction."""
        return self.valid_until is not None and self.valid_until <= now


_COLUMNS = (
    "SELECT c.rowid, c.kind, c.lifecycle, c.origin, c.text, c.subject, c.predicate,"
    " c.scope, c.scope_key, c.confidence, c.evidence_at, c.valid_until, c.revision"
    " FROM claims c"
)
# A pending clear hides every claim it covers: maintenance must not look at them either.
_NOT_CLEARED = (
    " AND NOT EXISTS (SELECT 1 FROM clear_jobs j WHERE j.agent_id = c.agent_id"
    "  AND j.phase <> 'done' AND c.rowid <= j.rowid_cutoff)"
)


def _time(value: object) -> dt.datetime | None:
    return None if value is None else dt.datetime.fromisoformat(str(value))


def _row(values: Sequence[object]) -> _Row:
    return _Row(
        rowid=int(str(values[0])),
        kind=ClaimKind(str(values[1])),
        lifecycle=Lifecycle(str(values[2])),
        origin=Origin(str(values[3])),
        text=str(values[4]),
        subject=None if values[5] is None else str(values[5]),
        predicate=None if values[6] is None else str(values[6]),
        scope=str(values[7]),
        scope_key=None if values[8] is None else str(values[8]),
        confidence=float(str(values[9])),
        evidence_at=_time(values[10]),
        valid_until=_time(values[11]),
        revision=int(str(values[12])),
    )


def _load(
    connection: apsw.Connection, agent_id: AgentId, rowids: Iterable[int]
) -> dict[int, _Row]:
    rows: dict[int, _Row] = {}
    for rowid in sorted(set(rowids)):
        found = connection.execute(
            _COLUMNS + " WHERE c.rowid = ? AND c.agent_id = ?" + _NOT_CLEARED,
            (rowid, agent_id),
        ).fetchone()
        if found is not None:
            rows[rowid] = _row(found)
    return rows


def _chain(
    connection: apsw.Connection,
    agent_id: AgentId,
    subject: str,
    predicate: str,
    scope: str,
    scope_key: str | None,
) -> list[_Row]:
    """The attribute's chain as succession orders it (oldest first)."""
    return [
        _row(values)
        for values in connection.execute(
            _COLUMNS  # noqa: S608 - our SQL
            + " WHERE c.agent_id = ? AND c.subject = ? AND c.predicate = ?"
            " AND c.scope = ? AND c.scope_key IS ?"
            " AND c.lifecycle IN ('active', 'superseded')"
            " AND c.rowid NOT IN (SELECT superseded_rowid FROM conflicts k"
            "  WHERE k.agent_id = c.agent_id AND k.superseded_rowid IS NOT NULL)"
            + _NOT_CLEARED
            + " ORDER BY c.evidence_at,"
            " CASE c.origin WHEN 'user' THEN 2 WHEN 'extracted' THEN 1 ELSE 0 END,"
            " c.confidence, c.rowid",
            (agent_id, subject, predicate, scope, scope_key),
        )
    ]


def _subjects(
    connection: apsw.Connection, agent_id: AgentId, scope: str, scope_key: str | None
) -> tuple[str, ...]:
    """Named subjects of the scope's keyed claims (speakers), longest first."""
    names = [
        str(row[0])
        for row in connection.execute(
            "SELECT DISTINCT subject FROM claims WHERE agent_id = ? AND scope = ?"
            " AND scope_key IS ? AND subject IS NOT NULL AND predicate IS NOT NULL"
            " AND subject <> 'user' LIMIT ?",
            (agent_id, scope, scope_key, _SUBJECTS_READ),
        )
    ]
    return tuple(sorted(names, key=len, reverse=True))


# -- reading an attribute from a claim's words ------------------------------------------
_EXTRACTOR = RuleExtractor()
_CJK = re.compile(r"[\u3400-\u9fff]")
_THIRD_PERSON = re.compile(r"^(?:the user|user)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|my|me)\b", re.IGNORECASE)
_IRREGULAR = {"is": "am", "has": "have", "was": "was", "does": "do", "doesn't": "don't"}
_SIBILANT = ("ches", "shes", "sses", "xes", "zes")
_REFERENCE = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)


def _first_person_verb(rest: str) -> str:
    """``lives in Lisbon`` → ``live in Lisbon`` (after "I"); "no longer" kept."""
    words = rest.split(" ")
    at = 2 if words[:2] == ["no", "longer"] and len(words) > 2 else 0
    if at >= len(words):
        return rest
    word = words[at]
    lowered = word.lower()
    if lowered in _IRREGULAR:
        words[at] = _IRREGULAR[lowered]
    elif lowered.endswith("ies") and len(lowered) > 4:
        words[at] = word[:-3] + "y"
    elif lowered.endswith(_SIBILANT):
        words[at] = word[:-2]
    elif lowered.endswith("s") and not lowered.endswith("ss") and len(lowered) > 2:
        words[at] = word[:-1]
    return " ".join(words)


def _as_first_person(text: str, subjects: Sequence[str]) -> tuple[str, str] | None:
    """The claim said by its subject (the extractor reads first-person turns), with
    the subject; ``None`` when the text names no subject the pass can tell."""
    text = " ".join(text.split())
    if _CJK.search(text):
        for name in ("用户", *subjects):
            if text.startswith(name):
                return "我" + text[len(name) :], "user" if name == "用户" else name
        return (text, "user") if text.startswith("我") else None
    if _FIRST_PERSON.match(text):
        return text, "user"
    named = [(match.end(), "user")] if (match := _THIRD_PERSON.match(text)) else []
    named += [(len(name), name) for name in subjects if text.startswith(name + " ")]
    named += [(len(name), name) for name in subjects if text.startswith(name + "'s ")]
    if not named:
        return None
    end, subject = named[0]
    rest = text[end:]
    if rest.startswith("'s "):
        return "My " + rest[3:], subject
    return "I " + _first_person_verb(rest.strip()), subject


def inferred_attribute(
    text: str, subjects: Sequence[str] = ()
) -> tuple[str, str] | None:
    """``(subject, predicate)`` of the one attribute value ``text`` states, read by the
    rule extractor's lexicons (English and Chinese), or ``None``."""
    said = _as_first_person(text, subjects)
    if said is None:
        return None
    sentence, subject = said
    event = ExtractionInput(
        event_id=EventId("challenge"),
        role=Role.USER,
        text=sentence,
        occurred_at=_REFERENCE,
        speaker=None,
        session_id=SessionId("challenge"),
    )
    keys = {
        draft.predicate
        for draft in _EXTRACTOR.extract([event])
        if draft.predicate is not None
    }
    if len(keys) != 1:
        return None
    return subject, keys.pop()


# -- the plan ---------------------------------------------------------------------------
@attrs.frozen
class _Key:
    """Give a claim the attribute key its words state; succession orders it."""

    seed: int
    rowid: int
    revision: int
    subject: str
    predicate: str


@attrs.frozen
class _Supersede:
    """``loser`` becomes history of ``winner``, with lineage."""

    seed: int
    loser: int
    winner: int
    revisions: tuple[int, int]
    reason: str
    # Recorded as a decided conflict, so succession keeps the loser out of its chain.
    record: bool = False


@attrs.frozen
class _Raise:
    """A contradiction for the user."""

    seed: int
    pair: ConflictPair
    reason: str


@attrs.frozen
class _Ask:
    seed: int
    first: _Row
    second: _Row


_Action = _Key | _Supersede | _Raise


@attrs.frozen
class ChallengePlan:
    actions: tuple[_Action, ...] = ()
    asks: tuple[_Ask, ...] = ()


class PairVerdict(msgspec.Struct, forbid_unknown_fields=True):
    """The provider's answer about one numbered pair."""

    pair: int
    contradict: bool
    holds: str
    """``first``, ``second`` or ``unknown`` (which statement holds now)."""


class ChallengeAnswer(msgspec.Struct, forbid_unknown_fields=True):
    pairs: list[PairVerdict]


_SYSTEM = (
    "You check a memory store for contradictions. Each numbered pair holds two stored"
    " statements about the same person, with the date each was stated. Say whether they"
    " contradict (incompatible values of the same attribute, both claimed to hold at"
    " once) and, if they do, which one holds now: 'first', 'second', or 'unknown' when"
    " the statements do not say. Statements about different attributes, or a past value"
    " and a current one, do not contradict. Answer JSON only."
)


def _when(row: _Row) -> str:
    return "unknown date" if row.evidence_at is None else row.evidence_at.isoformat()


@attrs.define
class _Planner:
    connection: apsw.Connection
    work: Work
    rows: dict[int, _Row]
    known: set[ConflictPair]
    actions: list[_Action] = attrs.field(factory=list)
    asks: list[_Ask] = attrs.field(factory=list)

    def raise_conflict(self, seed: int, one: _Row, other: _Row, reason: str) -> None:
        pair = ConflictPair.of(one.rowid, other.rowid)
        if pair not in self.known:
            self.known.add(pair)
            self.actions.append(_Raise(seed, pair, reason))

    def keyed(self, seed: _Row) -> None:
        """Ties and hedges in the seed's own chain, which succession ordered anyway."""
        if seed.subject is None or seed.predicate is None:
            return
        chain = _chain(
            self.connection,
            self.work.agent_id,
            seed.subject,
            seed.predicate,
            seed.scope,
            seed.scope_key,
        )
        if seed.rowid not in {row.rowid for row in chain}:
            return
        now = self.work.now
        current = [row for row in chain if row.lifecycle is Lifecycle.ACTIVE]
        if not current or current[-1].ended(now):
            return
        head = current[-1]
        for other in chain:
            if (
                other.rowid != head.rowid
                and not other.ended(now)
                and other.evidence_at == head.evidence_at
                and other.strength == head.strength
                and not same_value(other.text, head.text)
            ):
                self.raise_conflict(seed.rowid, other, head, SAME_TIME)
        older = [row for row in chain if _before(row, head)]
        if older:
            previous = older[-1]
            if (
                head.confidence < HEDGED_BELOW
                and previous.confidence >= CONFIDENT_FROM
                and not previous.ended(now)
                and not same_value(previous.text, head.text)
            ):
                self.raise_conflict(seed.rowid, previous, head, HEDGED_NEWER)

    def unkeyed(self, seed: _Row) -> None:
        """A claim without a key: read its attribute, then key it, let the stronger
        value stand, or raise the pair."""
        if seed.lifecycle is not Lifecycle.ACTIVE or seed.ended(self.work.now):
            return
        agent = self.work.agent_id
        subjects = _subjects(self.connection, agent, seed.scope, seed.scope_key)
        attribute = inferred_attribute(seed.text, subjects)
        if attribute is None:
            self.ask_neighbours(seed)
            return
        subject, predicate = attribute
        chain = _chain(
            self.connection, agent, subject, predicate, seed.scope, seed.scope_key
        )
        heads = [
            row
            for row in chain
            if row.lifecycle is Lifecycle.ACTIVE and not row.ended(self.work.now)
        ]
        head = heads[-1] if heads else None
        differs = head is not None and not same_value(seed.text, head.text)
        if seed.origin is Origin.MODEL:
            # A model's claim never enters (or overturns) the user's chain.
            if head is not None and differs and head.origin is not Origin.MODEL:
                self.actions.append(
                    _Supersede(
                        seed.rowid,
                        loser=seed.rowid,
                        winner=head.rowid,
                        revisions=(seed.revision, head.revision),
                        reason="weaker_origin",
                    )
                )
            return
        if head is None and seed.origin is Origin.EXTRACTED:
            # The extractor saw this claim's turn and gave it no key: the pass keys it
            # only to settle a contradiction, never to start a chain on its own.
            return
        if head is not None and differs:
            if _hedged_against(seed, head) or _hedged_against(head, seed):
                self.raise_conflict(seed.rowid, head, seed, HEDGED_NEWER)
                return
            if seed.evidence_at == head.evidence_at and seed.strength == head.strength:
                self.raise_conflict(seed.rowid, head, seed, SAME_TIME)
                return
        self.actions.append(
            _Key(seed.rowid, seed.rowid, seed.revision, subject, predicate)
        )

    def ask_neighbours(self, seed: _Row) -> None:
        asked = 0
        pairs = {
            ConflictPair.of(ask.first.rowid, ask.second.rowid) for ask in self.asks
        }
        for rowid in self.work.neighbours.get(seed.rowid, ()):
            if len(self.asks) >= MAX_QUESTION_PAIRS:
                return
            other = self.rows.get(rowid)
            if (
                other is None
                or other.rowid == seed.rowid
                or other.lifecycle is not Lifecycle.ACTIVE
                or other.kind in _UNCHALLENGED_KINDS
                or (other.scope, other.scope_key) != (seed.scope, seed.scope_key)
                or other.ended(self.work.now)
                or ConflictPair.of(seed.rowid, other.rowid) in self.known
                or ConflictPair.of(seed.rowid, other.rowid) in pairs
                or other.text == seed.text
            ):
                continue
            first, second = sorted((seed, other), key=lambda row: row.rowid)
            self.asks.append(_Ask(seed.rowid, first, second))
            pairs.add(ConflictPair.of(first.rowid, second.rowid))
            asked += 1
            if asked >= NEIGHBOURS_ASKED:
                return


def _before(row: _Row, head: _Row) -> bool:
    """``row`` comes before ``head`` in succession's order."""
    if row.evidence_at is None or head.evidence_at is None:
        return row.rowid < head.rowid
    return (row.evidence_at, row.strength, row.rowid) < (
        head.evidence_at,
        head.strength,
        head.rowid,
    )


def _hedged_against(newer: _Row, older: _Row) -> bool:
    """A hedged value stated after a plainly stated one."""
    return (
        _before(older, newer)
        and newer.confidence < HEDGED_BELOW
        and older.confidence >= CONFIDENT_FROM
    )


# -- the pass -----------------------------------------------------------------------------
@attrs.frozen
class ChallengePass:
    """The maintenance pass (cairn.maintenance.passes); registered in the registry."""

    name: ClassVar[str] = "challenge"
    answer_type: ClassVar[type[ChallengeAnswer]] = ChallengeAnswer
    """The msgspec Struct the provider's answer decodes into (its JSON schema is the
    question's ``schema``)."""

    def plan(self, connection: apsw.Connection, work: Work) -> ChallengePlan | None:
        seeds = [seed.claim_rowid for seed in work.seeds]
        neighbours = [rowid for rows in work.neighbours.values() for rowid in rows]
        rows = _load(connection, work.agent_id, [*seeds, *neighbours])
        known = conflicted_pairs(connection, work.agent_id, set(rows))
        planner = _Planner(connection, work, rows, known)
        for rowid in seeds:
            seed = rows.get(rowid)
            if seed is None or seed.kind in _UNCHALLENGED_KINDS:
                continue
            if seed.keyed:
                planner.keyed(seed)
            else:
                planner.unkeyed(seed)
        if not planner.actions and not planner.asks:
            return None
        return ChallengePlan(tuple(planner.actions), tuple(planner.asks))

    def question(self, plan: ChallengePlan) -> ProviderQuestion | None:
        if not plan.asks:
            return None
        lines = []
        for number, ask in enumerate(plan.asks):
            lines.append(
                f"Pair {number}:\n  first ({_when(ask.first)}): {ask.first.text}\n"
                f"  second ({_when(ask.second)}): {ask.second.text}"
            )
        return ProviderQuestion(
            system=_SYSTEM,
            user="\n".join(lines),
            schema=msgspec.json.schema(ChallengeAnswer),
        )

    def answered(
        self, plan: ChallengePlan, answer: Mapping[str, Any] | None
    ) -> ChallengePlan | None:
        """Fold the provider's verdicts in; without an answer (no provider, a failure
        or an answer of the wrong shape) the offline decisions stand."""
        verdicts: list[PairVerdict] = []
        if answer is not None:
            try:
                verdicts = msgspec.convert(answer, ChallengeAnswer).pairs
            except msgspec.ValidationError:
                verdicts = []
        actions = list(plan.actions)
        decided: set[int] = set()
        for verdict in verdicts:
            if not 0 <= verdict.pair < len(plan.asks) or verdict.pair in decided:
                continue
            decided.add(verdict.pair)
            if not verdict.contradict:
                continue
            ask = plan.asks[verdict.pair]
            if verdict.holds in {"first", "second"}:
                winner, loser = (
                    (ask.first, ask.second)
                    if verdict.holds == "first"
                    else (ask.second, ask.first)
                )
                actions.append(
                    _Supersede(
                        ask.seed,
                        loser=loser.rowid,
                        winner=winner.rowid,
                        revisions=(loser.revision, winner.revision),
                        reason="provider",
                        record=True,
                    )
                )
            else:
                actions.append(
                    _Raise(
                        ask.seed,
                        ConflictPair.of(ask.first.rowid, ask.second.rowid),
                        PROVIDER_UNDECIDED,
                    )
                )
        if not actions:
            return None
        return ChallengePlan(tuple(actions))

    def apply(
        self, connection: apsw.Connection, work: Work, plan: ChallengePlan
    ) -> PassResult:
        applier = _Applier(connection, work)
        for action in plan.actions:
            if isinstance(action, _Key):
                applier.key(action)
            elif isinstance(action, _Supersede):
                applier.supersede(action)
            else:
                applier.raise_conflict(action)
        return PassResult(
            outcomes=dict.fromkeys(applier.retry, SeedOutcome.RETRY),
            changed=tuple(sorted(applier.changed)),
            counts=applier.counts,
        )


@attrs.define
class _Applier:
    """Writes a plan after checking each action against the rows as they are now: a
    claim changed since the snapshot (its revision moved, or it is gone) voids the action
    and its seed is looked at again."""

    connection: apsw.Connection
    work: Work
    changed: set[int] = attrs.field(factory=set)
    retry: set[int] = attrs.field(factory=set)
    counts: dict[str, int] = attrs.field(
        factory=lambda: {"keyed": 0, "superseded": 0, "conflicts": 0}
    )

    @property
    def stamp(self) -> str:
        return self.work.now.astimezone(dt.UTC).isoformat()

    def _current(self, rowid: int) -> _Row | None:
        return _load(self.connection, self.work.agent_id, [rowid]).get(rowid)

    def _unchanged(self, rowid: int, revision: int) -> _Row | None:
        row = self._current(rowid)
        return row if row is not None and row.revision == revision else None

    def _chain_state(self, row: _Row) -> dict[int, tuple[str, object]]:
        if row.subject is None or row.predicate is None:
            return {}
        return {
            int(rowid): (str(lifecycle), until)
            for rowid, lifecycle, until in self.connection.execute(
                "SELECT rowid, lifecycle, superseded_at FROM claims WHERE agent_id = ?"
                " AND subject = ? AND predicate = ? AND scope = ? AND scope_key IS ?",
                (
                    self.work.agent_id,
                    row.subject,
                    row.predicate,
                    row.scope,
                    row.scope_key,
                ),
            )
        }

    def key(self, action: _Key) -> None:
        row = self._unchanged(action.rowid, action.revision)
        if row is None or row.keyed or row.lifecycle is not Lifecycle.ACTIVE:
            self.retry.add(action.seed)
            return
        keyed = attrs.evolve(row, subject=action.subject, predicate=action.predicate)
        before = self._chain_state(keyed)
        self.connection.execute(
            "UPDATE claims SET subject = ?, predicate = ?, revision = revision + 1,"
            " updated_at = ? WHERE rowid = ?",
            (action.subject, action.predicate, self.stamp, row.rowid),
        )
        # The lexical row holds the predicate's words ("lives in" answers "where does
        # she live"): written again from the row, as the doctor would rebuild it.
        self.connection.execute("DELETE FROM claim_fts WHERE rowid = ?", (row.rowid,))
        self.connection.execute(
            "INSERT INTO claim_fts (rowid, body) VALUES (?, ?)",
            (
                row.rowid,
                claim_fts_body(
                    self.work.agent_id,
                    row.text,
                    action.predicate,
                    row.scope,
                    row.scope_key,
                ),
            ),
        )
        superseded = order_succession(
            self.connection, self.work.agent_id, row.rowid, self.stamp
        )
        after = self._chain_state(keyed)
        self.changed.add(row.rowid)
        self.changed.update(
            rowid for rowid, state in after.items() if before.get(rowid) != state
        )
        self.counts["keyed"] += 1
        self.counts["superseded"] += superseded

    def supersede(self, action: _Supersede) -> None:
        loser = self._unchanged(action.loser, action.revisions[0])
        winner = self._unchanged(action.winner, action.revisions[1])
        if (
            loser is None
            or winner is None
            or loser.lifecycle is not Lifecycle.ACTIVE
            or (loser.scope, loser.scope_key) != (winner.scope, winner.scope_key)
        ):
            self.retry.add(action.seed)
            return
        if action.record:
            record_decision(
                self.connection,
                self.work.agent_id,
                kept=winner.rowid,
                superseded=loser.rowid,
                reason=action.reason,
                now=self.work.now,
            )
        before = self._chain_state(winner) | self._chain_state(loser)
        supersede(
            self.connection,
            self.work.agent_id,
            kept=winner.rowid,
            loser=loser.rowid,
            stamp=self.stamp,
        )
        after = self._chain_state(winner) | self._chain_state(loser)
        self.changed.update({loser.rowid, winner.rowid})
        self.changed.update(
            rowid for rowid, state in after.items() if before.get(rowid) != state
        )
        self.counts["superseded"] += 1

    def raise_conflict(self, action: _Raise) -> None:
        rows = _load(
            self.connection,
            self.work.agent_id,
            [action.pair.first, action.pair.second],
        )
        if len(rows) != 2 or any(
            row.lifecycle not in {Lifecycle.ACTIVE, Lifecycle.SUPERSEDED}
            for row in rows.values()
        ):
            self.retry.add(action.seed)
            return
        if open_conflict(
            self.connection,
            self.work.agent_id,
            action.pair,
            action.reason,
            self.work.now,
        ):
            self.counts["conflicts"] += 1
