"""Drain and resume, embedded: a drain refuses new writes at once, waits for everything
accepted (stored, extracted, embedded), fails on timeout without dropping anything and
stays drained, and resume re-arms every agent, including ones started while drained."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing
from tests.conftest import open_test_memory
from tests.fakes import GatedDocuments
from tests.helpers import turn

from cairn import MemoryConfig, RecallStatus
from cairn.domain.ids import AgentId
from cairn.errors import DrainingError, DrainTimeoutError
from cairn.runtime.core import runtime_core


async def test_drain_times_out_keeps_accepted_work_and_resume_rearms(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    embedder = GatedDocuments()
    config = MemoryConfig(drain_timeout_s=5.0, recall_wait_s=30.0)
    async with open_test_memory(tmp_path, config, embedder=embedder) as memory:
        report = await memory.ingest("a", [turn("e1", "I adopted a grey cat, Miso.")])
        assert report.ingested == 1
        with pytest.raises(DrainTimeoutError):
            await memory.drain()  # the embedding of e1 cannot finish yet

        # Still drained: every write path refuses, for known and new agents alike.
        with pytest.raises(DrainingError):
            await memory.ingest("a", [turn("e2", "I also have a dog.")])
        with pytest.raises(DrainingError):
            await memory.ingest("b", [turn("x1", "Hello.")])
        with pytest.raises(DrainingError):
            await memory.add_directive("a", "Be brief.")
        with pytest.raises(DrainingError):
            await memory.clear("a")
        # Reads go on; an agent first seen while drained starts drained too.
        recall = await memory.recall("c", "anything")
        assert recall.status is RecallStatus.OK
        assert (
            runtime_core(memory).registry.running_supervisor(AgentId("c")).accepting
            is False
        )

        embedder.gate.set()
        settled = await memory.drain()
        assert settled.agents == 2
        counts = (await memory.status()).agent("a")
        assert counts.events == 1
        assert counts.events_pending_extraction == 0
        assert counts.embeddings == 1

        await memory.resume()
        assert all(s.accepting for s in runtime_core(memory).registry.running())
        assert (await memory.ingest("a", [turn("e2", "I also have a dog.")])).ingested
        assert (await memory.ingest("c", [turn("c1", "I like tea.")])).ingested
        await memory.wait_idle()
        counts = (await memory.status()).agent("a")
        assert counts.events == 2
        assert counts.embeddings == 2


async def test_drain_with_nothing_running_is_immediate(memory) -> None:
    report = await memory.drain(timeout_s=1.0)
    assert report.agents == 0
    await memory.resume()
    assert (await memory.ingest("a", [turn("e1", "Hi.")])).ingested == 1


async def test_drained_memory_refuses_every_lifecycle_write(memory) -> None:
    await memory.ingest("a", [turn("d1", "I love jasmine rice.")])
    await memory.wait_idle("a")
    draft = await memory.directives.propose("a", "Answer in French.")
    items = (await memory.recall("a", "jasmine rice")).items
    (claim,) = [item for item in items if item.kind != "evidence"]
    await memory.drain()
    writes = [
        lambda: memory.directives.create("a", "Be brief."),
        lambda: memory.directives.propose("a", "Be briefer."),
        lambda: memory.directives.approve("a", draft.directive_id),
        lambda: memory.directives.revoke("a", draft.directive_id),
        lambda: memory.add_directive("a", "Be brief."),
        lambda: memory.remember("a", "My bike is red.", by="user"),
        lambda: memory.forget("a", claim.id),
        lambda: memory.archive("a", claim.id),
        lambda: memory.clear("a"),
        lambda: memory.retire("a"),
    ]
    for write in writes:
        with pytest.raises(DrainingError):
            await write()
    assert [d.directive_id for d in await memory.directives.list("a")] == [
        draft.directive_id
    ]  # reads go on
    await memory.resume()
    assert (await memory.directives.approve("a", draft.directive_id)).status == "active"
