"""The asyncio adapter, driven by a plain asyncio loop: cairn runs as a trio guest on the asyncio
loop, its methods are asyncio coroutines, errors arrive typed, cancelling an asyncio call
cancels the trio work without harm, and the asyncio loop keeps running meanwhile."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest
from tests.conftest import TEST_CONFIG
from tests.helpers import run_on_asyncio, turn

from cairn import AgentState, IntakeOutcome, RecallStatus
from cairn.domain.directive import DirectiveStatus
from cairn.errors import (
    ArgumentOutOfRangeError,
    InvalidInputError,
    RuntimeClosedError,
    UnknownClaimError,
)
from cairn.hosts.asyncio_host import open_asyncio_memory
from cairn.store.forget import RememberOutcome
from cairn.testing import FixedDomainClock, HashingEmbedder

EXAMPLE = Path(__file__).parents[2] / "examples" / "asyncio_host.py"


def test_asyncio_program_uses_cairn(tmp_path: Path) -> None:
    async def program() -> None:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        ticking = asyncio.create_task(ticker())
        async with open_asyncio_memory(
            tmp_path / "data",
            TEST_CONFIG,
            clock=FixedDomainClock(),
            embedder=HashingEmbedder(),
        ) as memory:
            turns = [
                turn(f"a{i}", f"I keep {i} bonsai trees on the balcony.")
                for i in range(300)
            ]
            report = await memory.ingest("host", turns)
            assert report.ingested == 300
            before = ticks
            await memory.wait_idle("host")
            assert ticks > before  # the asyncio loop ran while cairn worked

            recalls = await asyncio.gather(
                *(
                    memory.recall("host", "bonsai balcony", wait_s=30.0)
                    for _ in range(6)
                )
            )
            assert all(r.status is RecallStatus.OK and r.items for r in recalls)

            with pytest.raises(InvalidInputError):
                await memory.recall("host", "  ")
            again = await memory.ingest_turn("host", turns[0])
            assert again.outcome is IntakeOutcome.DUPLICATE

            # A cancelled asyncio call cancels its trio task; the runtime carries on.
            waiting = asyncio.create_task(
                memory.ingest(
                    "host", [turn(f"c{i}", "More bonsai.") for i in range(500)]
                )
            )
            await asyncio.sleep(0)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            await memory.wait_idle("host")
            counts = (await memory.status()).agent("host")
            # An ingest commits whole or not at all, even when cancelled.
            assert counts.events in {300, 800}
            assert counts.events_pending_extraction == 0

            report = await memory.drain(30.0)
            assert report.agents == 1
            await memory.resume()
        ticking.cancel()
        with pytest.raises(RuntimeClosedError):
            await memory.status()

    run_on_asyncio(program())


def test_the_example_program_runs(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("asyncio_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    texts = run_on_asyncio(example.main(tmp_path / "data", embedder=HashingEmbedder()))
    assert any("oolong" in text for text in texts)


def test_a_runtime_that_cannot_start_raises_in_the_host(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")

    async def program() -> None:
        async with open_asyncio_memory(blocker / "data", embedder=HashingEmbedder()):
            pass

    with pytest.raises(Exception) as caught:
        run_on_asyncio(program())
    assert isinstance(caught.value, OSError | ExceptionGroup)


def test_asyncio_adapter_offers_the_lifecycle_and_directive_methods(
    tmp_path: Path,
) -> None:
    async def program() -> None:
        async with open_asyncio_memory(
            tmp_path / "data",
            TEST_CONFIG,
            clock=FixedDomainClock(),
            embedder=HashingEmbedder(),
        ) as memory:
            stored = await memory.remember(
                "host", "The spare key is under the mat.", by="user"
            )
            assert stored.outcome is RememberOutcome.STORED
            assert stored.claim_id is not None
            assert (await memory.recall("host", "spare key mat")).items
            forgotten = await memory.forget("host", stored.claim_id)
            assert forgotten.id == stored.claim_id
            assert not (await memory.recall("host", "spare key mat")).items
            with pytest.raises(UnknownClaimError):
                await memory.archive("host", stored.claim_id)

            draft = await memory.directives.propose("host", "Use metric units.")
            assert draft.status is DirectiveStatus.DRAFT
            approved = await memory.directives.approve("host", draft.directive_id)
            assert approved.status is DirectiveStatus.ACTIVE
            assert [d.directive_id for d in await memory.directives.list("host")] == [
                draft.directive_id
            ]
            with pytest.raises(InvalidInputError):
                await memory.directives.create("host", "the", kind="suppress_topic")

            event = turn("t1", "backup failed", role="event", kind="task_failed")
            assert (await memory.ingest_event("host", event)).outcome is (
                IntakeOutcome.INGESTED
            )
            await memory.declare_session("host", "sub", subagent=True)
            await memory.wait_idle("host")
            assert await memory.session_cursor("host", "s1") == "t1"
            (quoted,) = await memory.evidence("host", ["t1"])
            assert (quoted.state, quoted.text) == ("present", "backup failed")
            with pytest.raises(ArgumentOutOfRangeError):
                await memory.evidence("host", [])
            assert await memory.replay_dead_letters("host") == 0
            cleared = await memory.clear("host")
            assert (cleared.agent_id, cleared.kept_counts.directives) == ("host", 1)
            await memory.wait_cleared("host")
            assert (await memory.status()).agent("host").state is AgentState.RUNNING
            report = await memory.retire("host")
            assert report.deleted("directives") == 1
            assert await memory.directives.list("host") == []

    run_on_asyncio(program())


def test_asyncio_host_records_recalls_reuses_turns_and_serves_attention(
    tmp_path: Path,
) -> None:
    async def program() -> None:
        async with open_asyncio_memory(
            tmp_path / "data",
            TEST_CONFIG,
            clock=FixedDomainClock(),
            embedder=HashingEmbedder(),
        ) as memory:
            await memory.ingest(
                "host",
                [
                    turn("a1", "I keep bonsai trees on the balcony."),
                    turn("f1", "The backup failed.", role="event", kind="task_failed"),
                ],
            )
            await memory.wait_idle("host")
            first = await memory.recall("host", "bonsai", turn_id="t1", wait_s=30.0)
            again = await memory.recall("host", "other", turn_id="t1", wait_s=30.0)
            assert again == first
            (record,) = await memory.recalls("host")
            assert record.request_id == first.request_id
            (item,) = await memory.attention("host")
            assert item.event_id == "f1"
            assert await memory.consume_attention("host", [item.item_id]) == 1
            assert await memory.attention("host") == []

    run_on_asyncio(program())
