"""A recall handed to an agent whose actors have just stopped (a retire or clear
discarded it between the lookup and the answer) gets RuntimeClosedError, a typed
answer, never trio's "Nursery is closed" (found by ``cairn stress --mode socket``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn.domain.scope import RecallContext
from cairn.errors import RuntimeClosedError
from cairn.runtime.core import runtime_core
from cairn.runtime.recall import RecallPlan


async def test_a_recall_reaching_a_stopped_agent_is_a_typed_error(
    tmp_path: Path,
) -> None:
    with trio.fail_after(30):
        async with open_test_memory(tmp_path / "data") as memory:
            await memory.ingest("a", [turn("t1", "I love oolong tea.")])
            await memory.wait_idle("a")
            registry = runtime_core(memory).registry
            supervisor = await registry.get("a")
            await registry.discard(supervisor, "retired under the call")
            plan = RecallPlan(
                query="tea", context=RecallContext(), k=5, budget_bytes=4096
            )
            with pytest.raises(RuntimeClosedError, match="stopped"):
                await supervisor.recall(plan, 1.0)
            # The agent itself goes on: the next call starts it again.
            assert (await memory.recall("a", "tea")).items
