"""What must hold after a history: for every marker, whether it must be recallable, must
never be recalled, or cannot be decided from the history.

The checker assumes nothing about concurrent calls beyond real time: a call that was
acknowledged before another was invoked took effect first; calls that overlapped may
have taken effect in either order; a call that ended ``unknown`` may or may not have taken
effect; a typed refusal (``fail``) did nothing. For each marker it enumerates every order
of the calls that touch it (clears and retires of its agent included) consistent with
that, applies the plain sequential semantics below to each, and keeps only verdicts all
orders agree on. An order in which an acknowledged call could not have succeeded (a
forget of something never stored) is discarded.

Sequential semantics, per marker:

- a write (ingest, event, remember, edit's new turn) or a replay of the same turn makes
  it live, unless a forget, clear, edit or deletion made it gone for good (a replay of a
  forgotten or cleared turn stays out);
- forget, clear and retire make it gone and erased (no copy left on disk); retire is not
  "for good": the agent ID starts empty, and the same turn sent again is a new write;
- an edit or deletion of its turn makes it gone for good but not erased (the replaced
  turn stays stored as the session's record);
- archive hides it, unarchive shows it again;
- an import of a backup that held it (recallable at export time) is a write of it;
- a revoked directive leaves the directive block;
- directives: a clear keeps them (standing instructions survive a clear), retire removes.
"""

from __future__ import annotations

import enum
import itertools
from collections import defaultdict
from typing import TYPE_CHECKING

import attrs

from cairn.stress.history import Outcome
from cairn.stress.workload import Kind

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from cairn.stress.history import Call, History
    from cairn.stress.workload import Workload

__all__ = [
    "Expectations",
    "ForgetEffect",
    "Restored",
    "calls_touching",
    "expectations",
]

# Orders enumerated per marker before giving up on a verdict for it.
MAX_ORDERS = 5000


class ForgetEffect(enum.StrEnum):
    """What an acknowledged forget removed (the executor records it as the call's result)."""

    ERASED = "erased"
    """The turn or a remembered claim: deleted, no copy left."""
    HIDDEN = "hidden"
    """A claim extracted from a turn: gone from recall, its source turn kept as record."""


@attrs.frozen
class Restored:
    """What an acknowledged import of a backup brought: the markers it holds as
    recallable memory, and every marker it holds at all (archived claims, draft
    directives, hidden and withdrawn turns besides)."""

    recallable: frozenset[str]
    stored: frozenset[str]


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


_IMPOSSIBLE = None


def _write(state: _State) -> _State:
    if state.sealed:
        return state
    if state.visible is _Visible.ARCHIVED:
        return state
    return _State(_Visible.LIVE)


def _withdraw(state: _State) -> _State:
    """An edit or deletion of the marker's turn: gone for good, kept as the record."""
    if state.visible is _Visible.ABSENT and not state.sealed:
        # Not stored (yet): intake refuses a replacement of a turn it does not have.
        return state
    return _State(_Visible.GONE, sealed=True, erased=state.erased)


def _apply(state: _State, call: Call, marker: str, *, directive: bool) -> _State | None:
    operation = call.operation
    kind = operation.kind
    present = state.visible in {_Visible.LIVE, _Visible.ARCHIVED}
    if kind is Kind.REPLAY:
        original = operation.original
        if original and original.marker != marker:
            # The edit sent again: its first sending may have been refused (the turn
            # it replaces was not there yet), so this may be what withdraws it.
            return _withdraw(state)
        return _write(state)
    if kind is Kind.IMPORT:
        restored = call.result
        if isinstance(restored, Restored) and marker in restored.recallable:
            return _write(state)
        if state.sealed or present:
            return state
        # Stored but not recallable: an archived claim, a draft directive.
        return _State(_Visible.GONE)
    if operation.marker == marker:
        return _write(state)
    if kind is Kind.FORK:
        return state  # a fork leaves the turn it forks from as it is
    if kind is Kind.REVOKE:
        return attrs.evolve(state, visible=_Visible.GONE) if present else _IMPOSSIBLE
    if kind in {Kind.EDIT, Kind.DELETE}:
        return _withdraw(state)
    if kind is Kind.FORGET:
        if state.visible is not _Visible.LIVE:
            return _IMPOSSIBLE  # a forget finds what it forgets by recalling it
        erased = call.result == ForgetEffect.ERASED
        return _State(_Visible.GONE, sealed=True, erased=erased)
    if kind is Kind.ARCHIVE:
        return (
            attrs.evolve(state, visible=_Visible.ARCHIVED) if present else _IMPOSSIBLE
        )
    if kind is Kind.UNARCHIVE:
        return attrs.evolve(state, visible=_Visible.LIVE) if present else _IMPOSSIBLE
    if kind is Kind.CLEAR:
        if directive or not present:
            return state  # it clears what is stored, nothing else
        return _State(_Visible.GONE, sealed=True, erased=True)
    if kind is Kind.RETIRE:
        if state.visible is _Visible.ABSENT:
            return state
        return _State(_Visible.GONE, sealed=False, erased=True)
    return state


def _run(order: Sequence[Call], marker: str, *, directive: bool) -> _State | None:
    state = _State()
    for call in order:
        after = _apply(state, call, marker, directive=directive)
        if after is None:
            return None
        state = after
    return state


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


def _touches(call: Call, marker: str, agent: str) -> bool:
    operation = call.operation
    if operation.agent != agent:
        return False
    if operation.kind in {Kind.CLEAR, Kind.RETIRE}:
        return True
    if operation.kind is Kind.IMPORT:
        return isinstance(call.result, Restored) and marker in call.result.stored
    if operation.kind is Kind.REPLAY and operation.original is not None:
        original = operation.original
        # A replayed edit also replaces its target again; a replayed fork turn does not
        # touch the turn it forked from.
        replaced = original.target if original.kind is Kind.EDIT else None
        return marker in {original.marker, replaced}
    return marker in {operation.marker, operation.target}


def calls_touching(history: History, marker: str, agent: str) -> list[Call]:
    """The calls of ``history`` that could have changed what ``marker`` shows."""
    return [call for call in history.calls if _touches(call, marker, agent)]


def _verdicts(calls: list[Call], marker: str, *, directive: bool) -> set[_State] | None:
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
            final = _run(order, marker, directive=directive)
            if final is not None:
                results.add(final)
    return results


def expectations(workload: Workload, history: History) -> Expectations:
    """What the history of ``workload`` (so far) says must hold now."""
    owners: dict[str, str] = {}
    directive_markers: set[str] = set()
    for operation in workload.operations():
        if operation.marker:
            owners[operation.marker] = operation.agent
            if operation.kind is Kind.DIRECTIVE:
                directive_markers.add(operation.marker)
    by_agent: dict[str, list[Call]] = defaultdict(list)
    for call in history.calls:
        by_agent[call.operation.agent].append(call)
    live: dict[str, set[str]] = defaultdict(set)
    gone: dict[str, set[str]] = defaultdict(set)
    directives: dict[str, set[str]] = defaultdict(set)
    erased: set[str] = set()
    undecided = 0
    for marker, agent in owners.items():
        calls = [c for c in by_agent[agent] if _touches(c, marker, agent)]
        if not any(c.operation.marker == marker for c in calls):
            continue  # never attempted
        directive = marker in directive_markers
        verdicts = _verdicts(calls, marker, directive=directive)
        if not verdicts:
            undecided += 1
            continue
        visible = {state.visible for state in verdicts}
        if visible == {_Visible.LIVE}:
            (directives if directive else live)[agent].add(marker)
        elif visible <= {_Visible.GONE, _Visible.ABSENT, _Visible.ARCHIVED}:
            # Never written or gone: either way it must not be recalled.
            gone[agent].add(marker)
            # Erased in every order where it was stored: a write that may never have
            # committed left nothing a forget or clear's scrub would not remove.
            if any(state.erased for state in verdicts) and all(
                state.erased or state.visible is _Visible.ABSENT for state in verdicts
            ):
                erased.add(marker)
        else:
            undecided += 1
    return Expectations(
        owners, dict(live), dict(gone), erased, dict(directives), undecided
    )
