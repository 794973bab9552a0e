"""The load test's well-behaved clients: a seeded mix of calls per lane, and the ledger
that scans every answer and error for markers of another agent (I3) and holds every
call to its budget (I8).

Each agent has a canary marker, written first; every later text a lane writes carries a
fresh marker of its agent. The mix includes recalls of another agent's canary and
markers, and fetches of another agent's request IDs: whatever comes back must carry only
markers of the agent the call was for.
"""

from __future__ import annotations

import contextlib
import random
from typing import TYPE_CHECKING, TypeAlias

import attrs
import msgspec
import trio

from cairn.domain.evidence import Turn
from cairn.domain.ids import EventId, SessionId
from cairn.errors import (
    CairnError,
    ConnectionLostError,
    ServerBusyError,
    UnknownMemoryError,
    UnknownRequestError,
)
from cairn.ipc.client import Client, open_unix_client
from cairn.retrieval.types import RecallStatus
from cairn.stress.markers import MARKER_PATTERN, MarkerSource
from cairn.stress.report import ModeResult, Violation

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from cairn.retrieval.types import Recall

__all__ = [
    "CALL_BUDGET_S",
    "LANES",
    "MAX_VIOLATIONS",
    "MODE",
    "OPERATIONS",
    "Ledger",
    "check_canaries",
    "plant_canaries",
    "run_clients",
]

MODE = "load"
LANES = 2
"""Concurrent callers per client connection (answers are routed back by request ID)."""
CALL_BUDGET_S = 30.0
"""I8: every call answers within this, on a loaded two-core machine."""
MAX_VIOLATIONS = 20
RECALL_WAITS_S = (0.0, 0.05, 0.5, 5.0)
"""A recall's ``wait_s``: short ones answer ``pending`` or ``partial``, fetched later."""
# Relative weights of the calls a lane makes.
OPERATIONS = {
    "ingest": 30,
    "recall": 30,
    "remember": 12,
    "forget": 8,
    "status": 6,
    "fetch_recall": 14,
    # Maintenance all through the run, so its first passes (and what they allocate) fall
    # in the warm-up, not in the thirds compared for growth.
    "maintain": 3,
}
_FACTS = (
    "My locker code word is {m}.",
    "I named my new bicycle {m} last weekend.",
    "Our project codename at work is {m}.",
    "我的猫叫 {m}。",
)
_REMEMBERED = (
    "Remember that the spare key is under {m}.",
    "记住：备用钥匙在 {m} 下面。",
)

Operation: TypeAlias = "tuple[Callable[[], Awaitable[str]], str]"
"""A call to make and the line that names it in a violation's history."""


@attrs.define
class Ledger:
    """What the run wrote and saw, shared by every task (one event loop: no locks)."""

    seed: int
    result: ModeResult
    owner: dict[str, str] = attrs.field(factory=dict)
    """Marker -> the agent whose text carries it."""
    written: dict[str, str] = attrs.field(factory=dict)
    """Marker -> the call that wrote it, for a violation's history."""
    live: dict[str, list[str]] = attrs.field(factory=dict)
    """Agent -> its acknowledged markers not forgotten since (the canary apart)."""
    canary: dict[str, str] = attrs.field(factory=dict)
    request_ids: dict[str, list[str]] = attrs.field(factory=dict)
    answered: int = 0
    writes: int = 0
    """Acknowledged ingests and remembers: what the server's memory may grow with."""
    load_deadline: float = float("inf")
    _answer_arrived: trio.Event = attrs.field(factory=trio.Event)
    _sequence: int = 0
    _reported: set[tuple[str, str]] = attrs.field(factory=set)

    def next_call(self) -> int:
        self._sequence += 1
        return self._sequence

    def note_answer(self) -> None:
        self.answered += 1
        self._answer_arrived.set()
        self._answer_arrived = trio.Event()

    async def check_load_goes_on(self, answered_before: int, what: str) -> None:
        """While the load runs, some client is answered after ``answered_before``."""
        if trio.current_time() >= self.load_deadline:
            await trio.lowlevel.checkpoint()
            return  # the load is over: nobody is asking
        with trio.move_on_after(CALL_BUDGET_S) as wait_scope:
            while self.answered <= answered_before:
                await self._answer_arrived.wait()
        if wait_scope.cancelled_caught:
            self.violation("I8", f"no load client was answered {what}", what)

    def violation(self, invariant: str, message: str, *history: str) -> None:
        """Record a violation; the same one again, or any past ``MAX_VIOLATIONS``, is
        only counted (a leak would otherwise list every marker it showed)."""
        if (invariant, message) in self._reported:
            self.result.count("violations_repeated")
            return
        if len(self.result.violations) >= MAX_VIOLATIONS:
            self.result.count("violations_not_listed")
            return
        self._reported.add((invariant, message))
        self.result.violations.append(
            Violation(invariant, message, MODE, self.seed, tuple(history))
        )

    def check_markers(self, agent: str | None, text: str, call: str) -> None:
        """I3: every marker in what ``agent``'s call got is ``agent``'s (``None``: a
        call of no agent, which may show no marker at all)."""
        found = set(MARKER_PATTERN.findall(text))
        self.result.count("markers_seen", len(found))
        for marker in found:
            owner = self.owner.get(marker)
            if owner is not None and owner != agent:
                self.violation(
                    "I3",
                    f"{call.strip()} showed {marker}, a marker of {owner}",
                    self.written.get(marker, f"(write of {marker})"),
                    call,
                )


def recall_text(recall: Recall) -> str:
    """Everything of a recall a host could show its model."""
    parts = [recall.memory_block, recall.directive_block]
    parts += [item.text for item in recall.items]
    return "\n".join(parts)


@attrs.define
class Lane:
    """One caller on a client connection: a seeded sequence of calls until a deadline."""

    ledger: Ledger
    client: Client
    name: str
    agents: tuple[str, ...]
    rng: random.Random
    markers: MarkerSource
    written: int = 0

    async def run(self, deadline: float) -> None:
        kinds = list(OPERATIONS)
        weights = list(OPERATIONS.values())
        while trio.current_time() < deadline:
            kind = self.rng.choices(kinds, weights)[0]
            agent = self.rng.choice(self.agents)
            if not await self._call(kind, agent):
                return  # the connection is gone (already a violation)

    async def _call(self, kind: str, agent: str) -> bool:
        """One call under its budget; False once the connection is lost."""
        ledger = self.ledger
        sequence = ledger.next_call()
        operation, describe = self._operation(kind, agent)
        line = f"{sequence:>6} {self.name} {describe}"
        ledger.result.count(f"calls.{kind}")
        ledger.result.operations += 1
        outcome = "timeout"
        with trio.move_on_after(CALL_BUDGET_S):
            try:
                outcome = await operation()
            except ServerBusyError:
                outcome = "busy"
            except (UnknownRequestError, UnknownMemoryError) as error:
                # The refusals a fetch or a forget can meet: an expired or dropped
                # result, another agent's request ID, an item a concurrent forget took.
                ledger.check_markers(agent, str(error), line)
                outcome = "refused"
            except ConnectionLostError as error:
                message = f"a well-behaved client lost its connection: {error}"
                ledger.violation("I8", message, line)
                return False
            except CairnError as error:
                ledger.check_markers(agent, str(error), line)
                ledger.violation(
                    "I8",
                    f"{kind} answered {type(error).__name__} ({error}), not a result,"
                    " busy or pending",
                    line,
                )
                outcome = "error"
        if outcome == "timeout":
            ledger.violation("I8", f"{kind}: no answer in {CALL_BUDGET_S:g} s", line)
        ledger.result.count(f"answers.{outcome}")
        if outcome == "refused":
            ledger.result.count(f"refused.{kind}")
        ledger.note_answer()
        return True

    def _marker(self, agent: str) -> str:
        while (marker := self.markers()) in self.ledger.owner:
            pass  # another lane's generator drew it first
        self.ledger.owner[marker] = agent
        return marker

    def _operation(self, kind: str, agent: str) -> Operation:
        """The call for ``kind``, decided now from this lane's generator."""
        if kind == "ingest":
            return self._ingest(agent)
        if kind == "remember":
            return self._remember(agent)
        if kind == "recall":
            return self._recall(agent)
        if kind == "forget":
            return self._forget(agent)
        if kind == "fetch_recall":
            return self._fetch(agent)
        if kind == "maintain":
            return self._maintain(agent)
        return self._status()

    def _ingest(self, agent: str) -> Operation:
        ledger = self.ledger
        marker = self._marker(agent)
        self.written += 1
        event_id = EventId(f"{self.name}-{self.written}")
        session = SessionId(f"s{self.rng.randrange(3)}")
        text = self.rng.choice(_FACTS).format(m=marker)
        line = f"ingest {agent} +{marker} #{event_id}"
        ledger.written[marker] = line

        async def ingest() -> str:
            turn = Turn(event_id, session, "user", text, speaker="Ana")
            report = await self.client.ingest(agent, [turn])
            ledger.check_markers(agent, msgspec.json.encode(report).decode(), line)
            if report.ingested == 1:
                ledger.writes += 1
                ledger.live.setdefault(agent, []).append(marker)
            return "ok"

        return ingest, line

    def _remember(self, agent: str) -> Operation:
        ledger = self.ledger
        marker = self._marker(agent)
        text = self.rng.choice(_REMEMBERED).format(m=marker)
        line = f"remember {agent} +{marker}"
        ledger.written[marker] = line

        async def remember() -> str:
            await self.client.remember(agent, text, by="user")
            ledger.writes += 1
            ledger.live.setdefault(agent, []).append(marker)
            return "ok"

        return remember, line

    def _recall(self, agent: str) -> Operation:
        ledger = self.ledger
        others = [a for a in self.agents if a != agent]
        roll = self.rng.random()
        if roll < 0.2 and others:
            # Another agent's canary or marker: nothing of it may come back.
            other = self.rng.choice(others)
            ledger.result.count("cross_agent_recalls")
            pool = [ledger.canary[other], *ledger.live.get(other, [])[-20:]]
        elif roll < 0.35:
            pool = [ledger.canary[agent]]
        else:
            pool = ledger.live.get(agent, [])[-50:] or [ledger.canary[agent]]
        target = self.rng.choice(pool)
        wait_s = self.rng.choice(RECALL_WAITS_S)
        line = f"recall {agent} @{target} wait {wait_s:g}"

        async def recall() -> str:
            query = f"What about {target}?"
            answer = await self.client.recall(agent, query, wait_s=wait_s)
            ledger.check_markers(agent, recall_text(answer), line)
            ledger.request_ids.setdefault(agent, []).append(answer.request_id)
            # partial and pending are fetched later (fetch_recall)
            return "ok" if answer.status is RecallStatus.OK else answer.status.value

        return recall, line

    def _fetch(self, agent: str) -> Operation:
        ledger = self.ledger
        if self.rng.random() < 0.6:
            return self._recall_then_fetch(agent)
        # An older request ID, often another agent's: refused, or the agent's own answer
        # (any forget of the agent drops every answer stored, which may quote it).
        owner = self.rng.choice(self.agents)
        if owner != agent:
            ledger.result.count("cross_agent_fetches")
        ids = ledger.request_ids.get(owner, [])
        request_id = self.rng.choice(ids[-30:]) if ids else "r-unknown"
        line = f"fetch_recall {agent} {request_id} (of {owner})"

        async def fetch() -> str:
            answer = await self.client.fetch_recall(agent, request_id)
            ledger.check_markers(agent, recall_text(answer), line)
            return "ok" if answer.status is RecallStatus.OK else answer.status.value

        return fetch, line

    def _recall_then_fetch(self, agent: str) -> Operation:
        """A recall that does not wait, then its answer fetched at once: pending, or
        the complete result."""
        ledger = self.ledger
        pool = ledger.live.get(agent, [])[-50:] or [ledger.canary[agent]]
        target = self.rng.choice(pool)
        line = f"recall {agent} @{target} wait 0, then fetch_recall"

        async def recall_then_fetch() -> str:
            first = await self.client.recall(agent, target, wait_s=0.0)
            ledger.check_markers(agent, recall_text(first), line)
            answer = await self.client.fetch_recall(agent, first.request_id)
            ledger.check_markers(agent, recall_text(answer), line)
            ledger.request_ids.setdefault(agent, []).append(first.request_id)
            return "ok" if answer.status is RecallStatus.OK else answer.status.value

        return recall_then_fetch, line

    def _forget(self, agent: str) -> Operation:
        ledger = self.ledger
        own = ledger.live.get(agent, [])
        if not own:
            return self._recall(agent)
        target = self.rng.choice(own[-50:])
        line = f"forget {agent} @{target}"

        async def forget() -> str:
            answer = await self.client.recall(agent, target, wait_s=5.0)
            ledger.check_markers(agent, recall_text(answer), line)
            carrying = [item for item in answer.items if target in item.text]
            if not carrying:
                return "refused"  # not recallable yet, or a concurrent forget took it
            await self.client.forget(agent, carrying[0].id)
            with contextlib.suppress(ValueError):
                own.remove(target)
            return "ok"

        return forget, line

    def _maintain(self, agent: str) -> Operation:
        line = f"maintain {agent}"

        async def maintain() -> str:
            report = await self.client.maintain(agent)
            self.ledger.check_markers(agent, repr(report), line)
            return "ok"

        return maintain, line

    def _status(self) -> Operation:
        line = "status"

        async def status() -> str:
            report = await self.client.status()
            # Status is no agent's: it may carry no marker at all.
            self.ledger.check_markers(None, msgspec.json.encode(report).decode(), line)
            return "ok"

        return status, line


async def run_clients(
    socket_path: Path,
    ledger: Ledger,
    agents: tuple[str, ...],
    clients: int,
    deadline: float,
) -> None:
    """``clients`` connections with ``LANES`` lanes each, calling until ``deadline``."""

    async def one_client(number: int) -> None:
        try:
            async with (
                open_unix_client(socket_path) as client,
                trio.open_nursery() as nursery,
            ):
                for lane in range(LANES):
                    rng = random.Random(f"{ledger.seed}:{number}:{lane}")
                    name = f"c{number}.{lane}"
                    worker = Lane(ledger, client, name, agents, rng, MarkerSource(rng))
                    nursery.start_soon(worker.run, deadline)
        except CairnError as error:
            message = f"client {number} could not connect: {error}"
            ledger.violation("I8", message, f"client {number}")

    async with trio.open_nursery() as nursery:
        for number in range(clients):
            nursery.start_soon(one_client, number)


async def plant_canaries(
    client: Client, ledger: Ledger, agents: tuple[str, ...]
) -> None:
    """Each agent's canary, as a turn and as a remembered fact, before the load."""
    markers = MarkerSource(random.Random(f"{ledger.seed}:canary"))
    for agent in agents:
        marker = markers()
        ledger.owner[marker] = agent
        ledger.canary[agent] = marker
        ledger.written[marker] = f"canary {agent} +{marker}"
        turn = Turn(
            EventId(f"canary-{agent}"),
            SessionId("canary"),
            "user",
            f"My secret canary word is {marker}.",
            speaker="Ana",
        )
        await client.ingest(agent, [turn])
        await client.remember(agent, f"Remember the canary word {marker}.", by="user")


async def check_canaries(
    client: Client, ledger: Ledger, agents: tuple[str, ...]
) -> None:
    """After the load each agent still recalls its canary (else the I3 scan proved
    nothing), and the next agent asking for it gets none of it."""
    for index, agent in enumerate(agents):
        canary = ledger.canary[agent]
        line = f"final recall {agent} @{canary}"
        own = await client.recall(agent, canary, wait_s=10.0)
        ledger.check_markers(agent, recall_text(own), line)
        if not any(canary in item.text for item in own.items):
            message = f"{agent} no longer recalls its canary {canary}"
            ledger.violation("I1", message, ledger.written[canary], line)
        other = agents[(index + 1) % len(agents)]
        line = f"final recall {other} @{canary}"
        theirs = await client.recall(other, canary, wait_s=10.0)
        ledger.check_markers(other, recall_text(theirs), line)
