"""Running one operation of the workload against any surface of the API (the embedded
memory, a trio IPC client): the call goes into the history as invoke, then ok, fail or
unknown, and every text that comes back is scanned for other agents' markers."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import trio

from cairn.domain.evidence import EventKind, Turn
from cairn.domain.ids import EventId, SessionId
from cairn.domain.outcomes import IntakeOutcome
from cairn.errors import CairnError
from cairn.stress.history import Call, History, Outcome
from cairn.stress.markers import MARKER_PATTERN
from cairn.stress.model import ForgetEffect, Forgot, Restored
from cairn.stress.scheduling import YieldInjector
from cairn.stress.workload import Kind, Operation

if TYPE_CHECKING:
    from cairn.api.protocol import MemoryApi
    from cairn.retrieval.types import Recall

__all__ = ["Executor", "turn_of"]

_Where = tuple[int, int]
"""(client, how many calls that client started before this one)."""

# Before the stress memory's clock (cairn.testing.FixedDomainClock, 2026-01-05): a value
# a newer turn replaced stopped holding before recall's moment, so recall marks it as
# history (cairn.retrieval.succession). A workload of thousands of turns still ends
# days before that moment.
_EPOCH = dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.UTC)


def turn_of(operation: Operation) -> Turn:
    """The turn an operation sends: the same operation always sends the same bytes, so a
    replay is exactly the original."""
    event_id = EventId(_given(operation.event_id))
    session_id = SessionId(_given(operation.session_id))
    replaces = None if operation.replaces is None else EventId(operation.replaces)
    number = int(event_id.removeprefix("e"))
    at = _EPOCH + dt.timedelta(minutes=number)
    if operation.kind is Kind.DELETE:
        return Turn(
            event_id,
            session_id,
            "user",
            "",
            at=at,
            kind=EventKind.MESSAGE_DELETED,
            replaces=replaces,
        )
    if operation.kind is Kind.EVENT:
        return Turn(
            event_id,
            session_id,
            "tool",
            operation.text or "",
            at=at,
            kind=EventKind.TOOL_RESULT,
        )
    return Turn(
        event_id,
        session_id,
        "user",
        operation.text or "",
        at=at,
        replaces=replaces,
    )


class Backups(Protocol):
    async def export(self, agent: str) -> frozenset[str]:
        """Export the agent as its latest backup; the markers it holds recallable."""
        ...

    async def restore(self, agent: str) -> Restored | None:
        """Import the agent's latest backup; what it held (None: there is none)."""
        ...


_TURNS = frozenset(
    {
        Kind.INGEST,
        Kind.EVENT,
        Kind.EDIT,
        Kind.DELETE,
        Kind.REPLAY,
        Kind.FORK,
        Kind.RESTATE,
        Kind.CHANGE,
    }
)


def _present(value: Operation | None) -> Operation:
    if value is None:
        raise ValueError("the workload generator left out the turn this one refers to")
    return value


def _given(value: str | None) -> str:
    if value is None:
        raise ValueError("the workload generator left out a field this operation needs")
    return value


@attrs.define
class Leak:
    """A marker seen in another agent's answer."""

    agent: str
    marker: str
    owner: str
    where: str


@attrs.define
class Executor:
    """Runs operations for one run; shared by its clients."""

    history: History
    owners: dict[str, str]
    """Marker → the agent that writes it."""
    call_budget_s: float
    recall_wait_s: float = 30.0
    claim_ids: dict[str, str] = attrs.field(factory=dict)
    """Marker → claim ID of an acknowledged remember."""
    leaks: list[Leak] = attrs.field(factory=list)
    hangs: list[Call] = attrs.field(factory=list)
    untyped: list[tuple[Call, str]] = attrs.field(factory=list)
    maintenance: Callable[[str], Awaitable[None]] | None = None
    """How to run a maintenance pass of an agent (None: the surface has no way)."""
    backups: Backups | None = None
    """Export and import (the embedded memory only)."""
    directive_ids: dict[str, str] = attrs.field(factory=dict)
    """Marker → directive ID of an acknowledged directive."""
    injector: YieldInjector | None = None
    """Seeded yields at every await point of a call (None: calls run straight on)."""
    _turns: dict[int, int] = attrs.field(factory=dict, init=False)
    """Client → calls it has started (each client runs its calls one after another)."""

    async def _pause(self, where: _Where, point: int) -> None:
        if self.injector is not None:
            await self.injector.pause(*where, point)

    def scan(self, agent: str, text: str, where: str) -> None:
        for marker in MARKER_PATTERN.findall(text):
            owner = self.owners.get(marker)
            if owner is not None and owner != agent:
                self.leaks.append(Leak(agent, marker, owner, where))

    def scan_recall(self, agent: str, recall: Recall) -> None:
        self.scan(agent, recall.memory_block, "recall memory block")
        self.scan(agent, recall.directive_block, "recall directive block")
        for item in recall.items:
            self.scan(agent, item.text, f"recall item {item.id}")

    async def run(self, api: MemoryApi, operation: Operation, client: int) -> Call:
        turn = self._turns.get(client, 0)
        self._turns[client] = turn + 1
        where = (client, turn)
        await self._pause(where, 0)
        call = self.history.invoke(operation, client)
        try:
            with trio.fail_after(self.call_budget_s):
                await self._pause(where, 1)
                outcome, detail, result = await self._perform(api, operation, where)
                await self._pause(where, 2)
        except trio.TooSlowError:
            self.hangs.append(call)
            self.history.complete(call, Outcome.UNKNOWN, "no answer within budget")
        except CairnError as error:
            text = f"{type(error).__name__}: {error}"
            self.scan(operation.agent, str(error), f"error of {operation.kind}")
            if type(error) is CairnError:
                # An internal error crossed the wire: the server did not say what went
                # wrong, so nobody can tell whether it happened.
                self.untyped.append((call, text))
                self.history.complete(call, Outcome.UNKNOWN, text)
            else:
                self.history.complete(call, Outcome.FAIL, text)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as error:
            self.history.complete(call, Outcome.UNKNOWN, f"{type(error).__name__}")
        else:
            self.history.complete(call, outcome, detail, result)
        return call

    async def _perform(
        self, api: MemoryApi, operation: Operation, where: _Where
    ) -> tuple[Outcome, str, Any]:
        kind = operation.kind
        if kind in _TURNS:
            return await self._send(api, operation, where)
        if kind in {Kind.DIRECTIVE, Kind.REVOKE}:
            return await self._directive(api, operation)
        if kind in {Kind.EXPORT, Kind.IMPORT}:
            return await self._backup(operation)
        if kind is Kind.FORGET:
            return await self._forget(
                api, operation.agent, _given(operation.target), where
            )
        if kind in {Kind.ARCHIVE, Kind.UNARCHIVE}:
            return await self._lifecycle(api, operation)
        return await self._act(api, operation)

    async def _send(
        self, api: MemoryApi, operation: Operation, where: _Where
    ) -> tuple[Outcome, str, Any]:
        agent, source = operation.agent, operation
        if operation.kind is Kind.REPLAY:
            source = _present(operation.original)
        if operation.kind is Kind.FORK:
            parent = _present(operation.original)
            await api.declare_session(
                agent,
                _given(operation.session_id),
                forked_from=(_given(parent.session_id), _given(parent.event_id)),
            )
            await self._pause(where, 3)
        report = await api.ingest(agent, [turn_of(source)])
        result = report.results[0]
        if result.outcome is IntakeOutcome.REJECTED:
            return Outcome.FAIL, f"rejected: {result.reason}", None
        return Outcome.OK, result.outcome.value, None

    async def _directive(
        self, api: MemoryApi, operation: Operation
    ) -> tuple[Outcome, str, Any]:
        agent = operation.agent
        if operation.kind is Kind.DIRECTIVE:
            directive_id = await api.add_directive(agent, _given(operation.text))
            self.directive_ids[_given(operation.marker)] = directive_id
            return Outcome.OK, "", None
        known = self.directive_ids.get(_given(operation.target))
        if known is None:
            return Outcome.FAIL, "no acknowledged directive to revoke", None
        await api.directives.revoke(agent, known)
        return Outcome.OK, "", None

    async def _backup(self, operation: Operation) -> tuple[Outcome, str, Any]:
        if self.backups is None:
            raise AssertionError("export and import need the embedded memory")
        if operation.kind is Kind.EXPORT:
            held = await self.backups.export(operation.agent)
            return Outcome.OK, f"{len(held)} memories", None
        imported = await self.backups.restore(operation.agent)
        if imported is None:
            return Outcome.FAIL, "no backup of this agent to import", None
        return Outcome.OK, f"{len(imported.recallable)} memories", imported

    async def _lifecycle(
        self, api: MemoryApi, operation: Operation
    ) -> tuple[Outcome, str, Any]:
        claim_id = self.claim_ids.get(_given(operation.target))
        if claim_id is None:
            return Outcome.FAIL, "no acknowledged remember to act on", None
        if operation.kind is Kind.ARCHIVE:
            await api.archive(operation.agent, claim_id)
        else:
            await api.unarchive(operation.agent, claim_id)
        return Outcome.OK, "", None

    async def _act(
        self, api: MemoryApi, operation: Operation
    ) -> tuple[Outcome, str, Any]:
        agent, kind = operation.agent, operation.kind
        if kind is Kind.REMEMBER:
            remembered = await api.remember(agent, _given(operation.text), by="user")
            if remembered.claim_id is not None:
                self.claim_ids[_given(operation.marker)] = remembered.claim_id
            return Outcome.OK, remembered.outcome.value, None
        if kind is Kind.RECALL:
            recall = await api.recall(
                agent,
                operation.target or "what do you know?",
                wait_s=self.recall_wait_s,
            )
            self.scan_recall(agent, recall)
            return Outcome.OK, f"{recall.status} {len(recall.items)} items", None
        if kind is Kind.CLEAR:
            await api.clear(agent)
        elif kind is Kind.RETIRE:
            await api.retire(agent)
        elif kind is Kind.DRAIN:
            try:
                await api.drain(timeout_s=max(1.0, self.call_budget_s / 2))
            finally:
                await api.resume()
        elif kind is Kind.MAINTENANCE:
            if self.maintenance is not None:
                await self.maintenance(agent)
        else:
            raise AssertionError(f"unhandled operation {kind}")
        return Outcome.OK, "", None

    async def _forget(
        self, api: MemoryApi, agent: str, marker: str, where: _Where
    ) -> tuple[Outcome, str, Any]:
        recall = await api.recall(agent, marker, wait_s=self.recall_wait_s)
        await self._pause(where, 3)
        self.scan_recall(agent, recall)
        carrying = [item for item in recall.items if marker in item.text]
        if not carrying:
            return Outcome.FAIL, "not recalled, nothing to forget", None
        # The turn itself when recall shows it: forgetting a turn deletes it; forgetting
        # a claim learned from a turn hides the turn but keeps it as the record. Which
        # one it was goes to the checker: another turn restating the fact may stay.
        carrying.sort(key=lambda item: item.kind != "evidence")
        item = carrying[0]
        await api.forget(agent, item.id)
        remembered = item.origin is not None and item.origin.startswith("remembered")
        effect = (
            ForgetEffect.ERASED
            if item.kind == "evidence" or remembered
            else ForgetEffect.HIDDEN
        )
        forgot = Forgot(effect, item.kind, item.id, frozenset(item.source_refs))
        return Outcome.OK, f"{item.kind} {item.id} ({effect})", forgot
