"""What must hold after a history: for every marker, whether it must be recallable, must
never be recalled, or cannot be decided from the history; and which values of the
changing attribute must not be reported as current.

The checker assumes nothing about concurrent calls beyond real time: a call that was
acknowledged before another was invoked took effect first; calls that overlapped may
have taken effect in either order; a call that ended ``unknown`` may or may not have taken
effect; a typed refusal (``fail``) did nothing. A marker is said by one or more
*statements*: the write that first carries it, and every restatement of its fact (a new
turn with the same marker). For each statement it enumerates every order of the calls
that touch it (clears and retires of its agent included) consistent with that, applies
the plain sequential semantics below to each, and keeps only verdicts all orders agree
on. An order in which an acknowledged call could not have succeeded (a forget of
something never stored) is discarded. A marker must be recallable when one of its
statements must be; it must never be recalled when none of them may be; it must be off
the disk when every one was erased.

Sequential semantics, per statement:

- its write (ingest, event, remember, edit's new turn, restatement, change) or a replay
  of the same turn makes it live, unless a forget, clear, edit or deletion made it gone
  for good (a replay of a forgotten or cleared turn stays out); another statement of the
  same fact is a write of its own: a restatement after a forget is new evidence;
- a forget of its turn, and clear and retire, make it gone and erased (no copy left on
  disk); retire is not "for good": the agent ID starts empty, and the same turn sent
  again is a new write;
- a forget of a claim learned from turns hides the turns the claim cites (gone for good,
  kept as the record, cairn.store.forget): those recall showed it citing for certain;
  another statement of the fact may have become a source meanwhile (the merge pass made
  the two claims one, or the same claim text gained its turn), so for those the forget
  may or may not have hidden it; a forget of another statement's turn leaves this one
  alone;
- an edit or deletion of its turn makes it gone for good but not erased (the replaced
  turn stays stored as the session's record);
- archive hides it, unarchive shows it again;
- an import of a backup that held it (its turn recallable at export time) is a write of
  it;
- a revoked directive leaves the directive block;
- directives: a clear keeps them (standing instructions survive a clear), retire removes;
- maintenance (merges, supersession, conflicts) changes what is current, never what is
  recallable.

A value of the changing attribute (cairn.stress.workload.ATTRIBUTE) that a newer one
replaced is history: recall may show it, never as current. It is expected as history
when a first statement (an ingest or a change) of another value, newer than one of its
statements, must be recallable, and no statement of it newer than that may be:
succession orders values by their turns' time, which is the turn's number, whatever
order they arrived in. A restatement decides nothing either way: merged with the
statement it restates, a value's time is its earliest turn's (cairn.store.merge), and
whether the merge came first depends on timing. Remembered values are left out too:
their time is the memory's clock, not a turn's.
"""

from __future__ import annotations

import enum
import itertools
from collections import defaultdict
from typing import TYPE_CHECKING

import attrs

from cairn.stress.history import Outcome
from cairn.stress.workload import ATTRIBUTE, WRITES, Kind, Operation

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from cairn.stress.history import Call, History
    from cairn.stress.workload import Workload

__all__ = [
    "Expectations",
    "ForgetEffect",
    "Forgot",
    "Restored",
    "calls_touching",
    "expectations",
]

# Orders enumerated per statement before giving up on a verdict for it.
MAX_ORDERS = 5000


class ForgetEffect(enum.StrEnum):
    """What an acknowledged forget removed (the executor records it as the call's result)."""

    ERASED = "erased"
    """The turn or a remembered claim: deleted, no copy left."""
    HIDDEN = "hidden"
    """A claim extracted from a turn: gone from recall, its source turn kept as record."""


@attrs.frozen
class Forgot:
    """What an acknowledged forget forgot: the item recall showed, by its kind and ID,
    and for a claim the turns recall showed it citing."""

    effect: ForgetEffect
    kind: str
    """The recall item's kind: ``evidence`` for a turn, else the claim's kind."""
    item: str
    sources: frozenset[str] = frozenset()

    @property
    def evidence(self) -> bool:
        return self.kind == "evidence"


@attrs.frozen
class Restored:
    """What an acknowledged import of a backup brought: the markers it holds as
    recallable memory, and every marker it holds at all (archived claims, draft
    directives, hidden and withdrawn turns besides); ``events``, the IDs of the turns it
    holds as recallable (``None``: not told, the markers decide)."""

    recallable: frozenset[str]
    stored: frozenset[str]
    events: frozenset[str] | None = None

    def brings(self, statement: _Statement) -> bool:
        """Whether importing it makes ``statement`` recallable (its turn, when it is
        one, was recallable at export time)."""
        event = statement.event_id
        if event is not None and self.events is not None:
            return event in self.events
        return statement.marker in self.recallable


class _Visible(enum.Enum):
    ABSENT = "absent"
    LIVE = "live"
    ARCHIVED = "archived"
    GONE = "gone"


@attrs.frozen
class _State:
    visible: _Visible = _Visible.ABSENT
    sealed: bool = False
    """Gone for good: writes of the same content stay out."""
    erased: bool = False


_GONE_SET = frozenset({_Visible.GONE, _Visible.ABSENT, _Visible.ARCHIVED})
# Writes that store a turn (the others store a claim or a directive).
_TURN_WRITES = frozenset(
    {Kind.INGEST, Kind.EVENT, Kind.EDIT, Kind.FORK, Kind.RESTATE, Kind.CHANGE}
)


@attrs.frozen
class _Statement:
    """One write carrying a marker: the first one, or a restatement of its fact."""

    write: Operation

    @property
    def marker(self) -> str:
        return self.write.marker or ""

    @property
    def event_id(self) -> str | None:
        """Its turn's ID (``None`` for a remembered claim or a directive)."""
        return self.write.event_id if self.write.kind in _TURN_WRITES else None

    @property
    def directive(self) -> bool:
        return self.write.kind is Kind.DIRECTIVE

    @property
    def number(self) -> int:
        """Its turn's number: the order of its time (cairn.stress.execute.turn_of)."""
        return int((self.event_id or "e0").removeprefix("e"))


def _write(state: _State) -> _State:
    if state.sealed:
        return state
    if state.visible is _Visible.ARCHIVED:
        return state
    return _State(_Visible.LIVE)


def _withdraw(state: _State) -> _State:
    """An edit or deletion of the statement's turn: gone for good, kept as the record."""
    if state.visible is _Visible.ABSENT and not state.sealed:
        # Not stored (yet): intake refuses a replacement of a turn it does not have.
        return state
    return _State(_Visible.GONE, sealed=True, erased=state.erased)


def _forgotten(state: _State, call: Call, statement: _Statement) -> list[_State]:
    """The states a forget of the statement's marker may leave it in (none: it could
    not have succeeded from ``state``)."""
    forgot = call.result
    live = state.visible is _Visible.LIVE
    present = live or state.visible is _Visible.ARCHIVED
    hidden = _State(_Visible.GONE, sealed=True, erased=state.erased)
    if not isinstance(forgot, Forgot):
        # Cut off: whatever it forgot, this statement is left as it was or hidden (the
        # weaker of hidden and erased: nothing is expected off the disk for it).
        return [state, hidden] if live else [state]
    event = statement.event_id
    if forgot.evidence:
        if event != forgot.item:
            return [state]  # another statement's turn
        if state.visible is _Visible.ABSENT or state.erased:
            return []  # a forget by ID of a turn not stored is refused
        return [_State(_Visible.GONE, sealed=True, erased=True)]
    if forgot.effect is ForgetEffect.ERASED:
        # A remembered claim: the remember is its only statement.
        if statement.write.kind is not Kind.REMEMBER:
            return [state]
        return [_State(_Visible.GONE, sealed=True, erased=True)] if present else []
    if event is None:
        return [state]
    if event in forgot.sources:
        if state.visible is _Visible.ABSENT:
            return []  # recall showed the claim citing this turn: it was stored
        return [hidden] if present else [state]
    # Not a source when recalled; a merge or the same claim again may have made it one.
    return [state, hidden] if live else [state]


def _apply(state: _State, call: Call, statement: _Statement) -> list[_State]:
    """The states ``call`` may leave ``statement`` in (none: impossible from ``state``)."""
    operation = call.operation
    kind = operation.kind
    present = state.visible in {_Visible.LIVE, _Visible.ARCHIVED}
    if kind is Kind.REPLAY:
        if operation.original == statement.write:
            return [_write(state)]
        # The edit that replaced this turn, sent again: its first sending may have been
        # refused (the turn was not there yet), so this may be what withdraws it.
        return [_withdraw(state)]
    if kind is Kind.IMPORT:
        restored = call.result
        if isinstance(restored, Restored) and restored.brings(statement):
            return [_write(state)]
        if state.sealed or present:
            return [state]
        # Stored but not recallable: an archived claim, a draft directive, a hidden turn.
        return [_State(_Visible.GONE)]
    if operation == statement.write:
        return [_write(state)]
    if kind in {Kind.EDIT, Kind.DELETE}:
        return [_withdraw(state)]
    if kind is Kind.FORGET:
        return _forgotten(state, call, statement)
    if kind is Kind.REVOKE:
        return [attrs.evolve(state, visible=_Visible.GONE)] if present else []
    if kind is Kind.ARCHIVE:
        return [attrs.evolve(state, visible=_Visible.ARCHIVED)] if present else []
    if kind is Kind.UNARCHIVE:
        return [attrs.evolve(state, visible=_Visible.LIVE)] if present else []
    if kind is Kind.CLEAR:
        if statement.directive or not present:
            return [state]  # it clears what is stored, nothing else
        return [_State(_Visible.GONE, sealed=True, erased=True)]
    if kind is Kind.RETIRE:
        if state.visible is _Visible.ABSENT:
            return [state]
        return [_State(_Visible.GONE, sealed=False, erased=True)]
    return [state]


def _run(order: Sequence[Call], statement: _Statement) -> set[_State]:
    """Every state ``order`` may leave the statement in (empty: an impossible order)."""
    states = {_State()}
    for call in order:
        states = {after for state in states for after in _apply(state, call, statement)}
        if not states:
            return states
    return states


def _orders(calls: Sequence[Call]) -> Iterator[list[Call]]:
    """Every order of ``calls`` that keeps real time (linear extensions)."""
    remaining = list(calls)

    def extend(prefix: list[Call], left: list[Call]) -> Iterator[list[Call]]:
        if not left:
            yield list(prefix)
            return
        for index, call in enumerate(left):
            # ``call`` can come next only if nothing still left finished before it began.
            if any(other.completed_before(call) for other in left if other is not call):
                continue
            prefix.append(call)
            yield from extend(prefix, left[:index] + left[index + 1 :])
            prefix.pop()

    yield from extend([], remaining)


@attrs.frozen
class Expectations:
    owners: dict[str, str]
    """Marker → the agent that wrote it (every planned marker)."""
    live: dict[str, set[str]]
    """Agent → markers that must be recallable."""
    gone: dict[str, set[str]]
    """Agent → markers that must never be recalled or exported."""
    erased: set[str]
    """Markers whose text must be in no file of the data directory."""
    directives: dict[str, set[str]]
    """Agent → directive markers that must be in the directive block."""
    undecided: int
    """Markers no verdict could be reached for (overlapping or cut-off calls)."""
    history: dict[str, dict[str, str]] = attrs.field(factory=dict)
    """Agent → values of the changing attribute that must not be recalled as current,
    each with the newer value that replaced it."""

    @property
    def checked_history(self) -> int:
        """Replaced values the answers check (those that must also be recallable)."""
        return sum(
            len(replaced.keys() & self.live.get(agent, set()))
            for agent, replaced in self.history.items()
        )


def _touches(call: Call, statement: _Statement, agent: str) -> bool:
    operation = call.operation
    if operation.agent != agent:
        return False
    kind = operation.kind
    if kind in {Kind.CLEAR, Kind.RETIRE}:
        return True
    if kind is Kind.IMPORT:
        return (
            isinstance(call.result, Restored) and statement.marker in call.result.stored
        )
    event = statement.event_id
    if kind is Kind.REPLAY and operation.original is not None:
        original = operation.original
        # A replayed edit also replaces its target again; a replayed fork turn does not
        # touch the turn it forked from.
        return original == statement.write or (
            original.kind is Kind.EDIT
            and event is not None
            and original.replaces == event
        )
    if operation == statement.write:
        return True
    if kind in {Kind.EDIT, Kind.DELETE}:
        return event is not None and operation.replaces == event
    if kind in {Kind.FORGET, Kind.ARCHIVE, Kind.UNARCHIVE, Kind.REVOKE}:
        return operation.target == statement.marker
    return False


def _statements(workload: Workload) -> dict[str, list[_Statement]]:
    """Marker → every write in ``workload`` that carries it."""
    found: dict[str, list[_Statement]] = defaultdict(list)
    for operation in workload.operations():
        if operation.marker and operation.kind in WRITES:
            found[operation.marker].append(_Statement(operation))
    return found


def calls_touching(history: History, marker: str, agent: str) -> list[Call]:
    """The calls of ``history`` that could have changed what ``marker`` shows: those
    touching any statement of it, and the changes that replaced it."""
    writes = {
        call.operation
        for call in history.calls
        if call.operation.marker == marker and call.operation.kind in WRITES
    }
    statements = [_Statement(write) for write in writes]
    return [
        call
        for call in history.calls
        if any(_touches(call, statement, agent) for statement in statements)
        or (call.operation.kind is Kind.CHANGE and call.operation.target == marker)
    ]


def _verdicts(calls: list[Call], statement: _Statement) -> set[_State] | None:
    options: list[list[Call | None]] = []
    for call in calls:
        if call.outcome is Outcome.FAIL:
            continue
        options.append([call, None] if call.outcome is Outcome.UNKNOWN else [call])
    results: set[_State] = set()
    enumerated = 0
    for chosen in itertools.product(*options):
        taken = [call for call in chosen if call is not None]
        for order in _orders(taken):
            enumerated += 1
            if enumerated > MAX_ORDERS:
                return None
            results |= _run(order, statement)
    return results


def _replaced(
    agent_statements: Iterable[tuple[_Statement, set[_State] | None]],
) -> dict[str, str]:
    """Values of the changing attribute a newer one replaced for certain (module
    docstring), each with one value that replaced it."""
    by_marker: dict[str, list[tuple[_Statement, set[_State] | None]]] = defaultdict(
        list
    )
    for statement, verdicts in agent_statements:
        if statement.write.attribute == ATTRIBUTE:
            by_marker[statement.marker].append((statement, verdicts))
    # Newer first statements of a value that must be recallable.
    newer = [
        statement
        for said in by_marker.values()
        for statement, verdicts in said
        if statement.write.kind in {Kind.INGEST, Kind.CHANGE}
        and verdicts
        and {state.visible for state in verdicts} == {_Visible.LIVE}
    ]
    replaced: dict[str, str] = {}
    for marker, said in by_marker.items():
        if any(statement.event_id is None for statement, _ in said):
            continue  # a remembered value: its time is not its turn's
        for value in sorted(newer, key=lambda statement: -statement.number):
            if value.marker == marker or not any(
                statement.number < value.number for statement, _ in said
            ):
                continue
            if all(
                verdicts is not None
                and {state.visible for state in verdicts} <= _GONE_SET
                for statement, verdicts in said
                if statement.number > value.number
            ):
                replaced[marker] = value.marker
                break
    return replaced


def expectations(workload: Workload, history: History) -> Expectations:
    """What the history of ``workload`` (so far) says must hold now."""
    owners: dict[str, str] = {}
    for operation in workload.operations():
        if operation.marker:
            owners[operation.marker] = operation.agent
    by_agent: dict[str, list[Call]] = defaultdict(list)
    for call in history.calls:
        by_agent[call.operation.agent].append(call)
    live: dict[str, set[str]] = defaultdict(set)
    gone: dict[str, set[str]] = defaultdict(set)
    directives: dict[str, set[str]] = defaultdict(set)
    erased: set[str] = set()
    decided: dict[str, list[tuple[_Statement, set[_State] | None]]] = defaultdict(list)
    undecided = 0
    attempted_writes = {
        call.operation for call in history.calls if call.operation.kind in WRITES
    }
    for marker, statements in _statements(workload).items():
        agent = owners[marker]
        attempted = [s for s in statements if s.write in attempted_writes]
        if not attempted:
            continue  # never attempted
        verdicts = [
            (
                statement,
                _verdicts(
                    [c for c in by_agent[agent] if _touches(c, statement, agent)],
                    statement,
                ),
            )
            for statement in attempted
        ]
        decided[agent].extend(verdicts)
        visible = [
            None if not states else {state.visible for state in states}
            for _, states in verdicts
        ]
        if any(seen == {_Visible.LIVE} for seen in visible):
            directive = attempted[0].directive
            (directives if directive else live)[agent].add(marker)
        elif all(seen is not None and seen <= _GONE_SET for seen in visible):
            # Never written or gone: either way it must not be recalled.
            gone[agent].add(marker)
            # Erased in every order where it was stored: a write that may never have
            # committed left nothing a forget or clear's scrub would not remove.
            every = [state for _, states in verdicts for state in states or ()]
            if any(state.erased for state in every) and all(
                state.erased or state.visible is _Visible.ABSENT for state in every
            ):
                erased.add(marker)
        else:
            undecided += 1
    history_values = {
        agent: replaced
        for agent, said in decided.items()
        if (replaced := _replaced(said))
    }
    return Expectations(
        owners,
        dict(live),
        dict(gone),
        erased,
        dict(directives),
        undecided,
        history_values,
    )
