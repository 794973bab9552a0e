"""The agent registry: which agents run, starting them lazily, containing their failures.

Each agent runs in its own task of the runtime's root nursery, around its supervisor's
nursery. What ends that task never reaches the root nursery:

- an unexpected error in any of the agent's actors ends that agent's supervisor only: the
  error is logged once with its type, ``status`` shows the agent as failed with the
  reason, accepted work stays durable (the database is the queue of record), other agents
  keep serving, and the next call for the agent starts it again after a bounded
  exponential backoff; after ``agent_max_failures`` failures within
  ``agent_failure_window_s`` calls get :class:`AgentUnavailableError` until the window
  has passed (tests/runtime/test_agent_failure.py);
- an agent with no call and nothing owed for ``agent_idle_timeout_s`` is stopped (its
  supervisor drains, publishes and closes), so idle agents cost no tasks and no memory;
  its next call starts it again.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable

import attrs
import trio

from cairn.api.status import AgentState
from cairn.domain.ids import AgentId, validate_agent_id
from cairn.errors import (
    AgentUnavailableError,
    DrainTimeoutError,
    InvalidInputError,
    RuntimeClosedError,
)
from cairn.ingestion.screen import screen_identifier
from cairn.runtime.supervisor import (
    AgentServices,
    AgentSupervisor,
    open_agent_supervisor,
)
from cairn.runtime.threads import run_in_thread

__all__ = ["AgentHealth", "AgentRegistry"]

logger = logging.getLogger("cairn.runtime")


@attrs.frozen
class AgentHealth:
    state: AgentState
    failure: str | None = None
    restarts: int = 0


def _describe(error: BaseException) -> str:
    """The error's type (and a group's leaves), for status and the log."""
    if isinstance(error, BaseExceptionGroup):
        return ", ".join(_describe(inner) for inner in error.exceptions)
    return type(error).__name__


@attrs.define(eq=False)
class _Failures:
    times: collections.deque[float] = attrs.field(factory=collections.deque)
    last: str = ""
    restarts: int = 0


@attrs.define(eq=False)
class AgentRegistry:
    services: AgentServices
    nursery: trio.Nursery
    # Called with each supervisor as it starts (write admission sets `accepting`).
    on_start: Callable[[AgentSupervisor], None] = lambda _supervisor: None
    closed: bool = False
    _running: dict[AgentId, AgentSupervisor] = attrs.field(factory=dict)
    _starting: dict[AgentId, trio.Event] = attrs.field(factory=dict)
    # Set when an agent's task has ended (stopped, failed or retired).
    _ended: dict[AgentId, trio.Event] = attrs.field(factory=dict)
    _failures: dict[AgentId, _Failures] = attrs.field(factory=dict)
    # Held while a supervisor starts and while the embedder is switched, so a starting
    # agent never reads its epoch before a switch and misses the switch itself.
    switching: trio.Lock = attrs.field(factory=trio.Lock)

    def running(self) -> list[AgentSupervisor]:
        return list(self._running.values())

    def running_supervisor(self, agent_id: AgentId) -> AgentSupervisor | None:
        return self._running.get(agent_id)

    async def get(self, agent_id: str) -> AgentSupervisor:
        """The agent's running supervisor, started (or restarted) if needed."""
        if self.closed:
            raise RuntimeClosedError("the memory runtime is closed")
        try:
            agent = validate_agent_id(agent_id)
        except ValueError as error:
            raise InvalidInputError(str(error)) from None
        while True:
            supervisor = self._running.get(agent)
            if supervisor is not None:
                supervisor.last_used = trio.current_time()
                await trio.lowlevel.checkpoint()
                return supervisor
            waiting = self._starting.get(agent)
            if waiting is None:
                waiting = self._ended.get(agent)
            if waiting is not None:
                # Starting, or still stopping: a new supervisor never overlaps an old one.
                await waiting.wait()
                continue
            await self._wait_restart(agent)
            if agent in self._running or agent in self._starting:
                continue
            if self.closed:
                raise RuntimeClosedError("the memory runtime is closed")
            # Checked once per start, not per call: an agent ID is stored and shown
            # verbatim, so one that holds a secret never gets a namespace.
            screen_identifier("agent ID", agent)
            return await self._start(agent)

    async def _start(self, agent: AgentId) -> AgentSupervisor:
        self._starting[agent] = trio.Event()
        try:
            async with self.switching:
                supervisor: AgentSupervisor = await self.nursery.start(
                    self._run_agent, agent
                )
        finally:
            self._starting.pop(agent).set()
        return supervisor

    async def _wait_restart(self, agent: AgentId) -> None:
        """The restart backoff of a failed agent; refuses one that failed too often."""
        failures = self._failures.get(agent)
        if failures is None or not failures.times:
            await trio.lowlevel.checkpoint()
            return
        config = self.services.config
        now = trio.current_time()
        while (
            failures.times and now - failures.times[0] > config.agent_failure_window_s
        ):
            failures.times.popleft()
        count = len(failures.times)
        if count >= config.agent_max_failures:
            retry_s = failures.times[0] + config.agent_failure_window_s - now
            raise AgentUnavailableError(
                f"agent {agent!r} failed {count} times in"
                f" {config.agent_failure_window_s:g} s (last: {failures.last});"
                f" retry in {retry_s:.0f} s"
            )
        if not count:
            await trio.lowlevel.checkpoint()
            return
        backoff_s = min(
            config.agent_restart_backoff_cap_s,
            config.agent_restart_backoff_s * 2 ** (count - 1),
        )
        await trio.sleep_until(failures.times[-1] + backoff_s)

    async def _run_agent(
        self, agent: AgentId, *, task_status: trio.TaskStatus[AgentSupervisor]
    ) -> None:
        ended = self._ended.setdefault(agent, trio.Event())
        started = False
        try:
            async with open_agent_supervisor(agent, self.services) as supervisor:
                self.on_start(supervisor)
                self._running[agent] = supervisor
                started = True
                task_status.started(supervisor)
                await self._serve_until_idle(supervisor)
        except Exception as error:  # noqa: BLE001 - contained here, by design
            self._record_failure(agent, error)
            if not started:
                # The call that was starting it gets a typed answer, never a group.
                raise AgentUnavailableError(
                    f"agent {agent!r} failed to start ({_describe(error)});"
                    " it is tried again on its next call"
                ) from None
        except BaseExceptionGroup as group:
            # An actor failed while the agent was being cancelled (a stop, a discard):
            # the group holds the error and Cancelled. The error is still this agent's
            # failure, contained here; only the cancellation goes on up.
            failure, cancelled = group.split(Exception)
            if failure is None:
                raise
            self._record_failure(agent, failure)
            if cancelled is not None:
                raise cancelled from None
        finally:
            self._running.pop(agent, None)
            self._ended.pop(agent, None)
            ended.set()
            self.services.gateway.reset(agent)

    def _record_failure(self, agent: AgentId, error: Exception) -> None:
        failures = self._failures.setdefault(agent, _Failures())
        failures.times.append(trio.current_time())
        failures.last = _describe(error)
        failures.restarts += 1
        # Once, with its type; the traceback names code, never stored text.
        logger.error(
            "agent %s failed (%s); its accepted work is kept and it restarts on its"
            " next call",
            agent,
            failures.last,
            exc_info=error,
        )

    async def _serve_until_idle(self, supervisor: AgentSupervisor) -> None:
        idle_s = self.services.config.agent_idle_timeout_s
        while True:
            since = supervisor.idle_since()
            now = trio.current_time()
            if since is not None and now - since >= idle_s:
                break
            await trio.sleep_until((now if since is None else since) + idle_s)
        # Idle: from here new calls wait for this stop and start a fresh supervisor.
        self._running.pop(supervisor.agent_id, None)
        try:
            await supervisor.stop()
        except DrainTimeoutError:
            logger.warning("idle agent %s did not drain; stopped", supervisor.agent_id)
            supervisor.cancel("idle stop")

    async def discard(self, supervisor: AgentSupervisor, reason: str) -> None:
        """Cancel an agent's actors without draining (a retired agent's work is void),
        wait for them, then drop its vector files once more: an embedding warm-up that
        was still running during the retire may have loaded the projection again."""
        agent = supervisor.agent_id
        ended = self._ended.get(agent)
        if self._running.get(agent) is supervisor and ended is not None:
            supervisor.cancel(reason)
            await ended.wait()
        if agent not in self._running:
            vectors = self.services.vectors
            await run_in_thread(
                lambda: vectors.drop_agent(agent),
                limiter=self.services.limiters.index,
            )

    def health(self, agent_id: AgentId) -> AgentHealth:
        failures = self._failures.get(agent_id)
        restarts = 0 if failures is None else failures.restarts
        last = None if failures is None or not failures.restarts else failures.last
        if agent_id in self._running:
            return AgentHealth(AgentState.RUNNING, last, restarts)
        if failures is None or not failures.times:
            return AgentHealth(AgentState.STOPPED, last, restarts)
        config = self.services.config
        now = trio.current_time()
        recent = [t for t in failures.times if now - t <= config.agent_failure_window_s]
        if len(recent) >= config.agent_max_failures:
            return AgentHealth(AgentState.UNAVAILABLE, last, restarts)
        return AgentHealth(AgentState.FAILED, last, restarts)

    def known(self) -> list[AgentId]:
        """Agents running now or with a failure on record."""
        return sorted({*self._running, *self._failures})

    async def stop_all(self) -> None:
        self.closed = True
        for supervisor in list(self._running.values()):
            await supervisor.stop()
