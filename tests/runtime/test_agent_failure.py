"""Failure isolation: one agent's failure ends that agent's supervisor only. Its accepted
work stays durable, status says it failed and why, other agents keep serving, and its next
call starts it again after a bounded backoff; past the failure budget calls get a typed
AgentUnavailableError. Idle agents are stopped and start again on their next call."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import turn

from cairn import Memory
from cairn.api.status import AgentStatus
from cairn.errors import AgentUnavailableError, RuntimeClosedError
from cairn.runtime.core import runtime_core
from cairn.runtime.projection import Projection
from cairn.vectors.manager import VectorStoreManager

CONFIG = attrs.evolve(
    TEST_CONFIG,
    agent_restart_backoff_s=1.0,
    agent_max_failures=3,
    agent_failure_window_s=600.0,
)


class FaultyVectors:
    """Makes every projection load of one agent raise an unexpected error."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, agent: str) -> None:
        self.agent, self.enabled = agent, True
        original = VectorStoreManager.get

        def get(manager: VectorStoreManager, agent_id: str, identity: Any) -> Any:
            if self.enabled and agent_id == self.agent:
                raise RuntimeError("injected fault in the embedding warm-up")
            return original(manager, agent_id, identity)

        monkeypatch.setattr(VectorStoreManager, "get", get)


async def _agent_status(memory: Memory, agent: str) -> AgentStatus:
    return (await memory.status()).agent(agent)


async def _until_state(memory: Memory, agent: str, *states: str) -> dict[str, Any]:
    # A poll on the mock clock: each tick is virtual time, never a real wait.
    while (entry := await _agent_status(memory, agent)).state.value not in states:  # noqa: ASYNC110 - a poll in virtual time
        await trio.sleep(0.5)
    return entry


async def _touch_failing(memory: Memory, agent: str, event_id: str) -> None:
    # The call that starts a failing agent may itself be cut off by the failure.
    with contextlib.suppress(RuntimeClosedError, AgentUnavailableError):
        await memory.ingest(agent, [turn(event_id, "I keep bees on the roof.")])
    await _until_state(memory, agent, "failed", "unavailable")


async def test_a_failing_agent_is_contained_and_restarts(
    data_dir: Path,
    thread_safe_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failing: list[Projection] = []
    original = Projection.upsert

    async def upsert(projection: Projection, *args: Any) -> None:
        if projection in failing:
            raise RuntimeError("injected fault in a running actor")
        await original(projection, *args)

    monkeypatch.setattr(Projection, "upsert", upsert)
    with trio.fail_after(600):
        async with open_test_memory(data_dir, CONFIG) as memory:
            await memory.ingest("b", [turn("b1", "I love oolong tea.")])
            await memory.wait_idle("b")
            supervisor = await runtime_core(memory).registry.get("a")
            failing.append(supervisor.projection)
            # Accepted (stored and extracted), then the embedding actor fails on it.
            await memory.ingest("a", [turn("a1", "I keep bees on the roof.")])
            entry = await _until_state(memory, "a", "failed")
            assert entry.failure == "RuntimeError"
            assert entry.restarts == 1

            # B is undisturbed: it ingests, extracts, embeds and recalls.
            await memory.ingest("b", [turn("b2", "My sister lives in Lisbon.")])
            await memory.wait_idle("b")
            recall = await memory.recall("b", "where does my sister live?")
            assert "Lisbon" in recall.memory_block
            assert (await _agent_status(memory, "b")).state.value == "running"

            # A's next call restarts it (after its backoff) with nothing lost: the
            # restart's warm-up embeds what the failure left without a vector.
            failed_at = trio.current_time()
            recall = await memory.recall("a", "bees roof")
            assert (
                trio.current_time() - failed_at >= 0.5 * CONFIG.agent_restart_backoff_s
            )
            assert "bees" in recall.memory_block
            await memory.wait_idle("a")
            assert (await _agent_status(memory, "a")).state.value == "running"


async def test_an_agent_that_keeps_failing_is_refused_with_a_typed_error(
    data_dir: Path,
    thread_safe_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    FaultyVectors(monkeypatch, "a")
    with trio.fail_after(3 * CONFIG.agent_failure_window_s):
        async with open_test_memory(data_dir, CONFIG) as memory:
            for attempt in range(CONFIG.agent_max_failures):
                await _touch_failing(memory, "a", f"a{attempt}")
            assert (await _agent_status(memory, "a")).state.value == "unavailable"
            with pytest.raises(AgentUnavailableError, match="failed 3 times"):
                await memory.recall("a", "bees")
            # Others are served all along.
            await memory.ingest("b", [turn("b1", "I love oolong tea.")])
            await memory.wait_idle("b")
            # After the window the agent may try again.
            await trio.sleep(CONFIG.agent_failure_window_s)
            assert (await _agent_status(memory, "a")).state.value == "failed"


async def test_idle_agents_stop_and_start_again_on_their_next_call(
    data_dir: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    config = attrs.evolve(CONFIG, agent_idle_timeout_s=30.0)
    with trio.fail_after(600):
        async with open_test_memory(data_dir, config) as memory:
            registry = runtime_core(memory).registry
            for agent in ("a", "b", "c"):
                await memory.ingest(agent, [turn(f"{agent}1", "I love oolong tea.")])
                await memory.wait_idle(agent)
            assert len(registry.running()) == 3
            await trio.sleep(config.agent_idle_timeout_s + 5)
            while registry.running():  # noqa: ASYNC110 - a poll in virtual time
                await trio.sleep(1)
            assert {entry.state.value for entry in (await memory.status()).agents} == {
                "stopped"
            }
            recall = await memory.recall("b", "what do I drink?")
            assert "oolong" in recall.memory_block
            assert [s.agent_id for s in registry.running()] == ["b"]


async def test_waking_a_stopped_agent_is_a_no_op(memory: Memory) -> None:
    # A clear resumed at open wakes ingestion after its job; the runtime may be closing
    # meanwhile, and a wake that reaches an agent whose actors ended must not fail.
    supervisor = await runtime_core(memory).registry.get("a")
    await memory.aclose()  # every actor of the agent has ended
    supervisor.wake_ingestion()
