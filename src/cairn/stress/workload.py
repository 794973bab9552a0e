"""The seeded workload: what every client of a run does, decided before anything runs.

A run is a few *phases*. In each, every client runs its share of operations one after
another while the clients run concurrently, so operations of one agent race each other
(a clear against an ingest, a forget against the embedding of what it forgets). Between
phases the runtime settles and may restart or switch its embedder. Every write carries
a fresh marker (:mod:`cairn.stress.markers`) so the checker can tell exactly which write
a recalled or stored text came from, with two exceptions that give maintenance work: a
*restatement* says an earlier turn's fact again, with the same marker, in a phrasing the
merge pass takes for a near-duplicate ("I love M." / "I really love M."), and a *change*
gives the agent's one changing attribute (its favourite colour) a new value, with a new
marker, so the value before it becomes history. The same seed gives the same
operations, in the same order, for the same clients.
"""

from __future__ import annotations

import enum
import random
from typing import TYPE_CHECKING

import attrs

from cairn.stress.markers import MarkerSource

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["ATTRIBUTE", "Kind", "Operation", "Phase", "Workload", "generate"]


class Kind(enum.StrEnum):
    INGEST = "ingest"
    """A user turn stating a fact that carries the marker."""
    EVENT = "event"
    """A runtime event (a tool result) that carries the marker."""
    REMEMBER = "remember"
    """An explicit remember by the user."""
    EDIT = "edit"
    """A turn that replaces ``target``'s turn in its session with a new marker."""
    DELETE = "delete"
    """A deletion of ``target``'s turn."""
    REPLAY = "replay"
    """The host sends ``target``'s turn again, byte for byte."""
    FORGET = "forget"
    """Recall ``target``, then forget the item that carries it."""
    ARCHIVE = "archive"
    UNARCHIVE = "unarchive"
    RECALL = "recall"
    """Recall ``target`` (any agent's marker): checks what comes back."""
    DIRECTIVE = "directive"
    """A standing instruction made by the user, carrying the marker."""
    REVOKE = "revoke"
    """The user revokes ``target``'s directive."""
    FORK = "fork"
    """Declare a session forked from ``target``'s, then a turn in it with a new marker."""
    EXPORT = "export"
    """Export the agent (kept by the client as its latest backup)."""
    IMPORT = "import"
    """Import the agent's latest backup back into the same memory."""
    CLEAR = "clear"
    RETIRE = "retire"
    DRAIN = "drain"
    """Drain and resume the whole runtime while the other clients go on."""
    MAINTENANCE = "maintenance"
    RESTATE = "restate"
    """A new turn saying ``marker``'s fact again in another phrasing (same marker)."""
    CHANGE = "change"
    """A new turn giving the agent's changing attribute a new value (a new marker)."""


WRITES = frozenset(
    {
        Kind.INGEST,
        Kind.EVENT,
        Kind.REMEMBER,
        Kind.EDIT,
        Kind.FORK,
        Kind.DIRECTIVE,
        Kind.RESTATE,
        Kind.CHANGE,
    }
)
IN_PROCESS_ONLY = frozenset({Kind.EXPORT, Kind.IMPORT})
"""Operations only the embedded memory has (export and import are not IPC calls)."""


@attrs.frozen
class Operation:
    kind: Kind
    agent: str
    marker: str | None = None
    """The new marker this operation writes (writes only)."""
    target: str | None = None
    """The marker an operation acts on (forget, archive, edit, replay, recall)."""
    event_id: str | None = None
    session_id: str | None = None
    text: str | None = None
    replaces: str | None = None
    """Event ID an edit or deletion replaces."""
    original: Operation | None = None
    """What a replay sends again (the operation that first sent the turn); what a
    restatement restates."""
    attribute: str | None = None
    """The changing attribute this write states a value of (:data:`ATTRIBUTE`)."""

    def describe(self) -> str:
        parts = [self.kind.value, self.agent]
        if self.marker:
            parts.append(f"+{self.marker}")
        if self.target:
            parts.append(f"@{self.target}")
        if self.event_id:
            parts.append(f"#{self.event_id}")
        return " ".join(parts)


@attrs.frozen
class Phase:
    clients: tuple[tuple[Operation, ...], ...]
    """One sequence of operations per client."""
    restart_after: bool
    switch_after: bool
    """Switch the embedder to the other identity after the phase (A→B, then B→A …)."""


@attrs.frozen
class Workload:
    seed: int
    agents: tuple[str, ...]
    phases: tuple[Phase, ...]

    def operations(self) -> list[Operation]:
        return [
            operation
            for phase in self.phases
            for client in phase.clients
            for operation in client
        ]


ATTRIBUTE = "favourite:colour"
"""The attribute whose value changes: every agent's statements of it form one chain
(the extractor keys them all ``(user, favourite:colour)``), the newest current."""


@attrs.frozen
class Phrasing:
    """A fact in phrasings the merge pass takes for near-duplicates of each other
    (cairn.maintenance.duplicates: only intensifiers differ), each extracted as a
    different claim text; the first is the statement, the rest restate it."""

    texts: tuple[str, ...]
    attribute: str | None = None


# Facts a later turn restates: keyed ``attitude:<marker>`` (the marker is the value),
# so every restatement joins the same marker's own chain.
_RESTATABLE = (
    Phrasing(
        (
            "I love {m}.",
            "I really love {m}.",
            "I truly love {m}.",
            "I absolutely love {m}.",
        )
    ),
    Phrasing(
        ("我喜欢 {m}。", "我很喜欢 {m}。", "我非常喜欢 {m}。", "我真的很喜欢 {m}。")
    ),
)
# A value of the changing attribute, as a first statement and as a change; the English
# ones can be restated, the Chinese ones have no phrasing the merge rule joins.
_VALUES = (
    Phrasing(
        (
            "My favourite colour is {m}.",
            "My favourite colour is really {m}.",
            "My favourite colour is truly {m}.",
        ),
        ATTRIBUTE,
    ),
    Phrasing(("我最喜欢的颜色是 {m}。",), ATTRIBUTE),
)
_CHANGES = (
    Phrasing(
        (
            "My favourite colour is now {m}.",
            "My favourite colour is really now {m}.",
            "My favourite colour is truly now {m}.",
        ),
        ATTRIBUTE,
    ),
    Phrasing(("我现在最喜欢的颜色是 {m}。",), ATTRIBUTE),
)
# A remembered value: no key of its own; the challenge pass reads it and keys it, so it
# supersedes the turns' values (and two of them, said at one moment, conflict).
_REMEMBERED_VALUE = "My favourite colour is {m}."
_REMEMBERED_VALUE_SHARE = 0.25

_FACTS = (
    "My locker code word is {m}.",
    "I named my new bicycle {m} last weekend.",
    "Our project codename at work is {m}.",
    "My grandmother's village is called {m}.",
    "我的猫叫 {m}。",
    "我们的新项目代号是 {m}。",
)
_EVENTS = ("tool result: build {m} finished", "tool result: ticket {m} created")
_REMEMBERED = (
    "Remember that the spare key is under {m}.",
    "记住：备用钥匙在 {m} 下面。",
)
_DIRECTIVES = ("Always mention {m} when you greet me.",)

# Relative weights of what a client does; global operations are rarer than writes.
_WEIGHTS = {
    Kind.INGEST: 24,
    Kind.EVENT: 6,
    Kind.REMEMBER: 8,
    Kind.EDIT: 3,
    Kind.DELETE: 2,
    Kind.REPLAY: 4,
    Kind.FORGET: 8,
    Kind.ARCHIVE: 3,
    Kind.UNARCHIVE: 2,
    Kind.RECALL: 14,
    Kind.DIRECTIVE: 2,
    Kind.REVOKE: 1,
    Kind.FORK: 2,
    Kind.EXPORT: 2,
    Kind.IMPORT: 2,
    Kind.CLEAR: 1,
    Kind.RETIRE: 1,
    Kind.DRAIN: 1,
    Kind.MAINTENANCE: 5,
    Kind.RESTATE: 6,
    Kind.CHANGE: 4,
}
# The share of ingests that state a fact a later turn may restate or a value of the
# changing attribute (the others carry a fact no rule extracts, or an event claim).
_PHRASED_SHARE = 0.5
_PHRASED = (*_RESTATABLE, *_VALUES)


@attrs.define
class _Restatable:
    """A planned turn whose fact can be said again, and the phrasings not used yet."""

    turn: Operation
    left: list[str]


@attrs.define
class _Planner:
    rng: random.Random
    agents: tuple[str, ...]
    marker: MarkerSource
    # Per agent: markers planned so far, by how they were written, for later targets.
    turns: dict[str, list[Operation]] = attrs.field(factory=dict)
    remembered: dict[str, list[str]] = attrs.field(factory=dict)
    directives: dict[str, list[str]] = attrs.field(factory=dict)
    restatable: dict[str, list[_Restatable]] = attrs.field(factory=dict)
    values: dict[str, list[str]] = attrs.field(factory=dict)
    """Per agent: markers of the changing attribute, in the order they were planned."""
    counter: int = 0
    sessions: int = 0

    def _event_id(self) -> str:
        self.counter += 1
        return f"e{self.counter}"

    def _feasible(self, kind: Kind, agent: str) -> Kind:
        """``kind``, or the write that must come first when it has nothing to act on."""
        turns = self.turns.get(agent)
        if kind in {Kind.EDIT, Kind.DELETE, Kind.REPLAY, Kind.FORGET, Kind.FORK}:
            return kind if turns else Kind.INGEST
        if kind is Kind.REVOKE:
            return kind if self.directives.get(agent) else Kind.DIRECTIVE
        if kind in {Kind.ARCHIVE, Kind.UNARCHIVE}:
            return kind if self.remembered.get(agent) else Kind.REMEMBER
        if kind is Kind.RESTATE:
            return kind if self.restatable.get(agent) else Kind.INGEST
        return kind

    def _statement(
        self, kind: Kind, agent: str, session: str, phrasing: Phrasing
    ) -> Operation:
        """A new turn stating ``phrasing``'s fact with a new marker."""
        marker = self.marker()
        values = self.values[agent]
        written = Operation(
            kind,
            agent,
            marker,
            values[-1] if kind is Kind.CHANGE and values else None,
            self._event_id(),
            session,
            phrasing.texts[0].format(m=marker),
            attribute=phrasing.attribute,
        )
        if phrasing.attribute is not None:
            values.append(marker)
        if len(phrasing.texts) > 1:
            restatements = [text.format(m=marker) for text in phrasing.texts[1:]]
            self.restatable[agent].append(_Restatable(written, restatements))
        return written

    def _phrased(self, kind: Kind, agent: str, session: str) -> Operation | None:
        """A restatement, a change, or an ingest of a phrased fact (``None``: none of
        them, the caller plans ``kind`` itself)."""
        if kind is Kind.RESTATE:
            return self._restate(agent, session)
        if kind is Kind.CHANGE:
            return self._statement(kind, agent, session, self.rng.choice(_CHANGES))
        if kind is Kind.INGEST and self.rng.random() < _PHRASED_SHARE:
            return self._statement(kind, agent, session, self.rng.choice(_PHRASED))
        return None

    def _remember(self, agent: str) -> Operation:
        marker = self.marker()
        self.remembered[agent].append(marker)
        if self.rng.random() < _REMEMBERED_VALUE_SHARE:
            self.values[agent].append(marker)
            text = _REMEMBERED_VALUE.format(m=marker)
            return Operation(
                Kind.REMEMBER, agent, marker, text=text, attribute=ATTRIBUTE
            )
        text = self.rng.choice(_REMEMBERED).format(m=marker)
        return Operation(Kind.REMEMBER, agent, marker, text=text)

    def _restate(self, agent: str, session: str) -> Operation:
        pool = self.restatable[agent]
        chosen = self.rng.choice(pool)
        text = chosen.left.pop(self.rng.randrange(len(chosen.left)))
        if not chosen.left:
            pool.remove(chosen)
        said = chosen.turn
        return Operation(
            Kind.RESTATE,
            agent,
            said.marker,
            None,
            self._event_id(),
            session,
            text,
            original=said,
            attribute=said.attribute,
        )

    def next(self, *, drains: bool, in_process: bool) -> Operation:
        kinds = list(_WEIGHTS)
        if not drains:
            kinds.remove(Kind.DRAIN)
        if not in_process:
            kinds = [kind for kind in kinds if kind not in IN_PROCESS_ONLY]
        picked = self.rng.choices(kinds, [_WEIGHTS[k] for k in kinds])[0]
        agent = self.rng.choice(self.agents)
        kind = self._feasible(picked, agent)
        turns = self.turns.setdefault(agent, [])
        remembered = self.remembered.setdefault(agent, [])
        directives = self.directives.setdefault(agent, [])
        self.restatable.setdefault(agent, [])
        self.values.setdefault(agent, [])
        session = f"s{self.rng.randrange(3)}"
        phrased = self._phrased(kind, agent, session)
        if phrased is not None:
            turns.append(phrased)
            return phrased
        if kind is Kind.INGEST or kind is Kind.EVENT:
            marker = self.marker()
            template = self.rng.choice(_FACTS if kind is Kind.INGEST else _EVENTS)
            written = Operation(
                kind,
                agent,
                marker,
                None,
                self._event_id(),
                session,
                template.format(m=marker),
            )
            turns.append(written)
            return written
        if kind is Kind.REMEMBER:
            return self._remember(agent)
        if kind is Kind.DIRECTIVE:
            marker = self.marker()
            directives.append(marker)
            return Operation(kind, agent, marker, text=_DIRECTIVES[0].format(m=marker))
        if kind is Kind.REVOKE:
            return Operation(kind, agent, target=self.rng.choice(directives))
        if kind is Kind.FORK:
            parent = self.rng.choice(turns)
            self.sessions += 1
            marker = self.marker()
            fork = Operation(
                kind,
                agent,
                marker,
                parent.marker,
                self._event_id(),
                f"fork{self.sessions}",
                self.rng.choice(_FACTS).format(m=marker),
                replaces=None,
                original=parent,
            )
            turns.append(fork)
            return fork
        if kind in {Kind.EDIT, Kind.DELETE, Kind.REPLAY, Kind.FORGET}:
            chosen = self.rng.choice(turns)
            target, event_id, target_session = (
                chosen.marker,
                chosen.event_id,
                chosen.session_id,
            )
            if kind is Kind.FORGET:
                return Operation(kind, agent, target=target)
            if kind is Kind.REPLAY:
                return Operation(
                    kind, agent, target=target, event_id=event_id, original=chosen
                )
            new_id = self._event_id()
            if kind is Kind.DELETE:
                return Operation(
                    kind, agent, None, target, new_id, target_session, replaces=event_id
                )
            marker = self.marker()
            text = self.rng.choice(_FACTS).format(m=marker)
            edit = Operation(
                kind, agent, marker, target, new_id, target_session, text, event_id
            )
            turns.append(edit)
            return edit
        if kind in {Kind.ARCHIVE, Kind.UNARCHIVE}:
            return Operation(kind, agent, target=self.rng.choice(remembered))
        if kind is Kind.RECALL:
            # Mostly this agent's own markers; sometimes another agent's (must not leak).
            owner = self.rng.choice(self.agents)
            pool = [
                op.marker for op in self.turns.get(owner, []) if op.marker
            ] + self.remembered.get(owner, [])
            return Operation(
                kind, agent, target=self.rng.choice(pool) if pool else None
            )
        return Operation(kind, agent)


def generate(
    seed: int,
    *,
    agents: int,
    clients: int,
    operations: int,
    phases: int = 3,
    restarts: bool = True,
    switches: bool = True,
    drains: bool = True,
    in_process: bool = True,
    agent_prefix: str = "agent",
) -> Workload:
    """The workload of ``seed``: ``operations`` spread over ``clients`` and ``phases``."""
    rng = random.Random(seed)
    names = tuple(f"{agent_prefix}-{n}" for n in range(agents))
    planner = _Planner(rng, names, MarkerSource(rng))
    per_phase = max(1, operations // phases)
    built = []
    for number in range(phases):
        lanes: list[list[Operation]] = [[] for _ in range(clients)]
        for _ in range(per_phase):
            rng.choice(lanes).append(planner.next(drains=drains, in_process=in_process))
        last = number == phases - 1
        built.append(
            Phase(
                tuple(tuple(lane) for lane in lanes),
                restart_after=restarts and not last and rng.random() < 0.5,
                switch_after=switches and not last and rng.random() < 0.35,
            )
        )
    return Workload(seed, names, tuple(built))


def without(workload: Workload, dropped: Sequence[Operation]) -> Workload:
    """The same workload minus some operations (for shrinking a failing history)."""
    gone = {id(operation) for operation in dropped}
    return attrs.evolve(
        workload,
        phases=tuple(
            attrs.evolve(
                phase,
                clients=tuple(
                    tuple(op for op in lane if id(op) not in gone)
                    for lane in phase.clients
                ),
            )
            for phase in workload.phases
        ),
    )
