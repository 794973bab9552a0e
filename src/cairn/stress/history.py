"""The recorded history of a run: every call as an ``invoke`` event and then exactly one of
``ok`` (it returned), ``fail`` (a typed refusal: it did nothing) or ``unknown`` (it was cut
off by a crash, a timeout or a lost connection: it may or may not have happened).

Events carry a global sequence number, so "A was acknowledged before B was invoked" is a
comparison of integers; that order is all the checker assumes about concurrent calls.
"""

from __future__ import annotations

import enum

import attrs

from cairn.stress.workload import Operation

__all__ = ["Call", "History", "Outcome"]


class Outcome(enum.StrEnum):
    OK = "ok"
    FAIL = "fail"
    UNKNOWN = "unknown"


@attrs.define
class Call:
    """One operation's life in the history."""

    operation: Operation
    client: int
    invoked: int
    """Sequence number of the invoke event."""
    completed: int | None = None
    """Sequence number of the ok/fail/unknown event (None while it runs)."""
    outcome: Outcome | None = None
    detail: str = ""
    """What it returned or raised, short."""
    result: object = None
    """The value it returned (ok only), for the checker."""

    def ok_before(self, other: Call) -> bool:
        """This call was acknowledged before ``other`` was invoked."""
        return (
            self.outcome is Outcome.OK
            and self.completed is not None
            and self.completed < other.invoked
        )

    def overlaps(self, other: Call) -> bool:
        return not self.completed_before(other) and not other.completed_before(self)

    def completed_before(self, other: Call) -> bool:
        return self.completed is not None and self.completed < other.invoked

    def lines(self) -> list[str]:
        end = "…" if self.outcome is None else f"{self.outcome.value} {self.detail}"
        return [
            f"{self.invoked:>6} client {self.client} invoke {self.operation.describe()}",
            f"{self.completed if self.completed is not None else '?':>6} client"
            f" {self.client} {end}".rstrip(),
        ]


@attrs.define
class History:
    calls: list[Call] = attrs.field(factory=list)
    _sequence: int = 0

    def _next(self) -> int:
        self._sequence += 1
        return self._sequence

    def invoke(self, operation: Operation, client: int) -> Call:
        call = Call(operation, client, self._next())
        self.calls.append(call)
        return call

    def complete(
        self, call: Call, outcome: Outcome, detail: str = "", result: object = None
    ) -> None:
        call.completed = self._next()
        call.outcome = outcome
        call.detail = detail
        call.result = result

    def close(self, detail: str) -> None:
        """Whatever still runs (a crash, a stop) ends ``unknown``."""
        for call in self.calls:
            if call.outcome is None:
                self.complete(call, Outcome.UNKNOWN, detail)

    def lines(self, calls: list[Call] | None = None) -> tuple[str, ...]:
        chosen = self.calls if calls is None else calls
        events: list[tuple[int, str]] = []
        for call in chosen:
            first, second = call.lines()
            events.append((call.invoked, first))
            events.append((call.completed or call.invoked, second))
        return tuple(line for _, line in sorted(events))
