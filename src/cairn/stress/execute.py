"""Running one operation of the workload against any surface of the API (the embedded
memory, a trio IPC client): the call goes into the history as invoke, then ok, fail or
unknown, and every text that comes back is scanned for other agents' markers."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
import trio

from cairn.domain.evidence import EventKind, Turn
from cairn.domain.ids import EventId, SessionId
from cairn.domain.outcomes import IntakeOutcome
from cairn.errors import CairnError
from cairn.stress.history import Call, History, Outcome
from cairn.stress.markers import MARKER_PATTERN
from cairn.stress.model import ForgetEffect
from cairn.stress.workload import Kind, Operation

if TYPE_CHECKING:
    from cairn.api.protocol import MemoryApi
    from cairn.retrieval.types import Recall

__all__ = ["Executor", "turn_of"]

_EPOCH = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)


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
        call = self.history.invoke(operation, client)
        try:
            with trio.fail_after(self.call_budget_s):
                outcome, detail, result = await self._perform(api, operation)
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
        self, api: MemoryApi, operation: Operation
    ) -> tuple[Outcome, str, Any]:
        agent = operation.agent
        kind = operation.kind
        if kind in {Kind.INGEST, Kind.EVENT, Kind.EDIT, Kind.DELETE, Kind.REPLAY}:
            source = operation
            if operation.original is not None:
                source = operation.original
            report = await api.ingest(agent, [turn_of(source)])
            result = report.results[0]
            if result.outcome is IntakeOutcome.REJECTED:
                return Outcome.FAIL, f"rejected: {result.reason}", None
            return Outcome.OK, result.outcome.value, None
        if kind is Kind.REMEMBER:
            remembered = await api.remember(agent, _given(operation.text), by="user")
            if remembered.claim_id is not None:
                self.claim_ids[_given(operation.marker)] = remembered.claim_id
            return Outcome.OK, remembered.outcome.value, None
        if kind is Kind.DIRECTIVE:
            await api.add_directive(agent, _given(operation.text))
            return Outcome.OK, "", None
        if kind is Kind.FORGET:
            return await self._forget(api, agent, _given(operation.target))
        if kind in {Kind.ARCHIVE, Kind.UNARCHIVE}:
            claim_id = self.claim_ids.get(_given(operation.target))
            if claim_id is None:
                return Outcome.FAIL, "no acknowledged remember to act on", None
            if kind is Kind.ARCHIVE:
                await api.archive(agent, claim_id)
            else:
                await api.unarchive(agent, claim_id)
            return Outcome.OK, "", None
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
            return Outcome.OK, "", None
        if kind is Kind.RETIRE:
            await api.retire(agent)
            return Outcome.OK, "", None
        if kind is Kind.DRAIN:
            try:
                await api.drain(timeout_s=max(1.0, self.call_budget_s / 2))
            finally:
                await api.resume()
            return Outcome.OK, "", None
        if kind is Kind.MAINTENANCE:
            if self.maintenance is not None:
                await self.maintenance(agent)
            return Outcome.OK, "", None
        raise AssertionError(f"unhandled operation {kind}")

    async def _forget(
        self, api: MemoryApi, agent: str, marker: str
    ) -> tuple[Outcome, str, Any]:
        recall = await api.recall(agent, marker, wait_s=self.recall_wait_s)
        self.scan_recall(agent, recall)
        carrying = [item for item in recall.items if marker in item.text]
        if not carrying:
            return Outcome.FAIL, "not recalled, nothing to forget", None
        # The turn itself when recall shows it: forgetting a turn deletes it; forgetting
        # a claim learned from a turn hides the turn but keeps it as the record.
        carrying.sort(key=lambda item: item.kind != "evidence")
        item = carrying[0]
        await api.forget(agent, item.id)
        remembered = item.origin is not None and item.origin.startswith("remembered")
        effect = (
            ForgetEffect.ERASED
            if item.kind == "evidence" or remembered
            else ForgetEffect.HIDDEN
        )
        return Outcome.OK, f"{item.kind} {item.id} ({effect})", effect
