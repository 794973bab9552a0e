"""Write admission: the one accepting flag, and the count of writes in progress.

Every write entry point of the facade goes through :meth:`WriteAdmission.write`, which
checks the flag, finds (or starts) the agent, checks again (a drain may have begun while
the agent started) and counts the write, with no checkpoint between the last check and
the count: a drain either refuses a write or waits for it, never neither
(tests/runtime/test_drain.py).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import attrs
import trio

from cairn.errors import DrainingError, DrainTimeoutError, RuntimeClosedError
from cairn.runtime.mailbox import WorkCounter
from cairn.runtime.registry import AgentRegistry
from cairn.runtime.scrubbing import Scrubber

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from cairn.runtime.supervisor import AgentSupervisor

__all__ = ["WriteAdmission"]


@attrs.define(eq=False)
class WriteAdmission:
    registry: AgentRegistry
    # A drain also waits until forgotten text has left the disk (cairn.runtime.scrubbing).
    scrubber: Scrubber | None = None
    # False between drain() and resume(): every write entry point refuses new work.
    accepting: bool = True
    _writes: WorkCounter = attrs.field(factory=WorkCounter)

    def check(self) -> None:
        if not self.accepting:
            raise DrainingError("the memory runtime is drained; resume it to write")

    @contextlib.asynccontextmanager
    async def write(self, agent_id: str) -> AsyncIterator[AgentSupervisor]:
        """The agent's supervisor, for one admitted (and counted) write."""
        self.check()
        supervisor = await self.registry.get(agent_id)
        self.check()
        self._writes.add(1)
        try:
            yield supervisor
        finally:
            self._writes.done(1)

    def started(self, supervisor: AgentSupervisor) -> None:
        """A supervisor starting while drained starts drained."""
        supervisor.accepting = self.accepting

    async def drain(self, limit_s: float) -> tuple[int, float]:
        """Refuse new writes, then wait until accepted work is extracted and embedded and
        forgotten text has left the disk (FTS purge and WAL checkpoint); returns (agents,
        seconds). On timeout raises DrainTimeoutError and stays drained."""
        self.accepting = False
        for supervisor in self.registry.running():
            supervisor.accepting = False
        started = trio.current_time()
        with trio.move_on_after(limit_s) as drain_scope:
            await self._writes.wait_zero()
            for supervisor in self.registry.running():
                await supervisor.wait_idle()
            if self.scrubber is not None:
                await self.scrubber.wait_settled()
        if drain_scope.cancelled_caught:
            raise DrainTimeoutError(f"accepted work did not settle in {limit_s} s")
        return len(self.registry.running()), trio.current_time() - started

    async def resume(self) -> None:
        await trio.lowlevel.checkpoint()
        if self.registry.closed:
            raise RuntimeClosedError("the memory runtime is closed")
        self.accepting = True
        for supervisor in self.registry.running():
            supervisor.accepting = True
