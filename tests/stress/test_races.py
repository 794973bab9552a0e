"""Scripted race scenarios: each pins one interleaving of two sides of a race with a
``trio.testing.Sequencer`` and the blocking fakes of tests/stress/race_fakes.py, on a real
runtime (real SQLite, real usearch projection, the hashing embedder), and asserts the
invariant it protects, named in its docstring (issue 13: I1 no lost acknowledged write,
I2 no resurrection, I3 no cross-agent read, I4 no stale commit, I5 exactly-once receipts,
I7 no forgotten plaintext, I8 no hang).

A scenario here is an interleaving the runtime's own tests do not pin: they commit stale
results by hand (tests/runtime/test_fence.py, test_batches.py); these let the real actors
run and hold a provider call, a query embedding or the writer exactly where the race is.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from tests.conftest import TEST_CONFIG
from tests.helpers import files_holding, turn
from tests.stress.race_fakes import (
    GatedEmbedder,
    GatedTextProvider,
    TokenHold,
    holding,
    queued_writes,
    settle,
)

from cairn import Memory, MemoryConfig, RecallStatus, open_memory
from cairn.domain.claim import ClaimDraft, ClaimKind, SourceSpan
from cairn.domain.ids import AgentId, EventId
from cairn.errors import (
    CairnError,
    DrainingError,
    StaleLeaseError,
    UnknownRequestError,
)
from cairn.ingestion.validate import ValidatedBatch
from cairn.runtime.core import runtime_core
from cairn.runtime.writes import CommitBatch, TakeLease
from cairn.testing import FixedDomainClock

A, B = "agent-a", "agent-b"
# Bounds every wait on a parked side: a hang is a failure with a traceback (I8).
STEP_S = 30.0


@contextlib.asynccontextmanager
async def racing_memory(
    data_dir: Path,
    embedder: GatedEmbedder | None = None,
    text_provider: GatedTextProvider | None = None,
    config: MemoryConfig = TEST_CONFIG,
) -> AsyncIterator[Memory]:
    async with open_memory(
        data_dir,
        config,
        clock=FixedDomainClock(),
        embedder=embedder or GatedEmbedder(),
        text_provider=text_provider,
    ) as memory:
        yield memory


async def _column(memory: Memory, sql: str, *params: Any) -> list[Any]:
    return await runtime_core(memory).database.read(
        lambda reader: [row[0] for row in reader.connection.execute(sql, params)]
    )


async def _claim_texts(memory: Memory, agent: str) -> list[str]:
    return sorted(
        await _column(memory, "SELECT text FROM claims WHERE agent_id = ?", agent)
    )


async def _recalled(memory: Memory, agent: str, query: str) -> list[str]:
    recall = await memory.recall(agent, query, k=20)
    assert recall.status is RecallStatus.OK
    return [item.text for item in recall.items]


def _mentions(texts: list[str], word: str) -> bool:
    return any(word.casefold() in text.casefold() for text in texts)


async def _plaintext_left(memory: Memory, data_dir: Path, *words: str) -> dict[str, Any]:
    """Which forgotten words any file of the data directory still holds, once a drain
    has purged and checkpointed (I7)."""
    await memory.drain()
    found = files_holding(data_dir, words)
    await memory.resume()
    return found


# -- 1 -----------------------------------------------------------------------------------
async def test_a_forget_racing_the_embedding_of_its_claim_leaves_no_vector(
    data_dir: Path,
) -> None:
    """I2, I7: a remembered claim's embedding is in flight (shielded, like work in a
    thread) when its forget commits, and finishes after it: the late vector is neither
    stored nor served, recall never shows the claim, and no file holds its text."""
    embedder = GatedEmbedder()
    gate = embedder.park_documents("beehives", shielded=True)
    sequencer = trio.testing.Sequencer()
    async with racing_memory(data_dir, embedder) as memory:
        remembered = await memory.remember(
            A, "Ana keeps two beehives on the roof", by="user"
        )
        assert remembered.claim_id is not None

        async def embedding_side() -> None:
            async with sequencer(0):
                with trio.fail_after(STEP_S):
                    await gate.reached.wait()
            async with sequencer(2):
                gate.open()

        async def user_side() -> None:
            async with sequencer(1):
                assert remembered.claim_id is not None
                await memory.forget(A, remembered.claim_id)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(embedding_side)
            nursery.start_soon(user_side)
        with trio.fail_after(STEP_S):
            await memory.wait_idle(A)
        assert gate.texts == ["Ana keeps two beehives on the roof"]
        assert (
            await _column(
                memory, "SELECT count(*) FROM embeddings WHERE target = 'claim'"
            )
        ) == [0]
        supervisor = await runtime_core(memory).registry.get(A)
        assert len(supervisor.projection) == 0
        assert not _mentions(await _recalled(memory, A, "beehives on the roof"), "bee")
        assert await _plaintext_left(memory, data_dir, "beehive") == {}


# -- 2 -----------------------------------------------------------------------------------
@pytest.mark.parametrize("arrives", ["while_the_clear_runs", "after_the_clear_ended"])
async def test_an_extraction_answer_arriving_during_or_after_a_clear_is_never_learned(
    data_dir: Path, arrives: str
) -> None:
    """I4, I2: the model's answer for a batch (a call that cancellation cannot reach)
    arrives once the clear of its agent has fenced the agent but before its first batch
    ran, or after the clear ended: it is dropped, its turn goes with the clear, and
    nothing of it is ever learned; a turn sent after the clear is extracted as usual."""
    provider = GatedTextProvider()
    gate = provider.park("Paris", shielded=True)
    sequencer = trio.testing.Sequencer()
    async with racing_memory(data_dir, text_provider=provider) as memory:
        await memory.ingest(A, [turn("e1", "I live in Paris.")])
        supervisor = await runtime_core(memory).registry.get(A)
        epoch = supervisor.fence.epoch
        readers = TokenHold(memory, "store_read")
        during = arrives == "while_the_clear_runs"

        async def extraction_side() -> None:
            async with sequencer(0):
                with trio.fail_after(STEP_S):
                    await gate.reached.wait()
            async with sequencer(2):
                gate.open()
                # The answer is back and its pass settles (dropped or refused).
                await settle(lambda: supervisor.statistics().stale_results_dropped > 0)

        async def clear_side() -> None:
            async with sequencer(1):
                if during:
                    # The clear's job runs its batches after reading its job row.
                    await readers.hold()
                    nursery.start_soon(memory.clear, A)
                    await settle(lambda: supervisor.fence.epoch > epoch)
                else:
                    await memory.clear(A)
            async with sequencer(3):
                readers.release()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(extraction_side)
            nursery.start_soon(clear_side)
        with trio.fail_after(STEP_S):
            await memory.wait_cleared(A)
        await memory.ingest(A, [turn("e2", "I live in Oslo.")])
        with trio.fail_after(STEP_S):
            await memory.wait_idle(A)
        assert await _claim_texts(memory, A) == ["I live in Oslo"]
        assert await _column(memory, "SELECT event_id FROM events") == ["e2"]
        assert not _mentions(await _recalled(memory, A, "live in Paris"), "Paris")


# -- 9 -----------------------------------------------------------------------------------
async def test_a_turn_forgotten_while_it_is_extracted_teaches_nothing(
    data_dir: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    """I2, I1: the model is answering for a batch when one of its turns is forgotten:
    the answer's claims from that turn never appear, not after the batch is retried nor
    after a replay of the turn, and the other turn of the batch is still learned."""
    provider = GatedTextProvider()
    gate = provider.park("Brompton")
    sequencer = trio.testing.Sequencer()
    async with racing_memory(data_dir, text_provider=provider) as memory:
        await memory.ingest(
            A,
            [
                turn("e1", "My bicycle is a blue Brompton."),
                turn("e2", "I drink oolong tea every morning."),
            ],
        )

        async def extraction_side() -> None:
            async with sequencer(0):
                await gate.reached.wait()
            async with sequencer(2):
                gate.open()

        async def user_side() -> None:
            async with sequencer(1):
                forgotten = await memory.forget(A, "e1")
                assert forgotten.turns_removed == ("e1",)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(extraction_side)
            nursery.start_soon(user_side)
        await memory.wait_idle(A)
        assert gate.texts == [
            "My bicycle is a blue Brompton.",
            "I drink oolong tea every morning.",
        ]
        assert await _claim_texts(memory, A) == ["I drink oolong tea every morning"]
        # A replay of the forgotten turn stays out.
        await memory.ingest(A, [turn("e1", "My bicycle is a blue Brompton.")])
        await memory.wait_idle(A)
        assert await _claim_texts(memory, A) == ["I drink oolong tea every morning"]
        assert not _mentions(await _recalled(memory, A, "blue Brompton"), "Brompton")
        assert _mentions(await _recalled(memory, A, "oolong tea"), "oolong")


# -- 11 ----------------------------------------------------------------------------------
async def test_an_edit_landing_while_the_original_is_extracted_voids_that_answer(
    data_dir: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    """I4, I2: the user edits a message (a replacement turn of the same session) while
    the model answers for the original: the answer for the original never commits, the
    replacement is what is learned, and the replaced words are not recalled."""
    provider = GatedTextProvider()
    gate = provider.park("Paris")
    sequencer = trio.testing.Sequencer()
    async with racing_memory(data_dir, text_provider=provider) as memory:
        await memory.ingest(A, [turn("e1", "I live in Paris.")])

        async def extraction_side() -> None:
            async with sequencer(0):
                await gate.reached.wait()
            async with sequencer(2):
                gate.open()

        async def user_side() -> None:
            async with sequencer(1):
                await memory.ingest_event(
                    A, turn("e1b", "I live in Berlin.", replaces="e1")
                )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(extraction_side)
            nursery.start_soon(user_side)
        await memory.wait_idle(A)
        assert await _claim_texts(memory, A) == ["I live in Berlin"]
        statistics = (await memory.status()).agent(A).statistics
        assert statistics.stale_results_dropped >= 1
        recalled = await _recalled(memory, A, "where do I live")
        assert _mentions(recalled, "Berlin")
        assert not _mentions(recalled, "Paris")


# -- 5 -----------------------------------------------------------------------------------
async def test_the_old_worker_committing_after_its_lease_was_retaken_is_refused(
    data_dir: Path,
) -> None:
    """I4, I5: while the extraction actor's model call is in flight its lease expires
    and a new worker takes the batch over; the old worker's commit, arriving after, is
    refused (and so is its failure record), the new worker's result is published once,
    and a retry of the new worker's commit returns the same receipt."""
    provider = GatedTextProvider()
    gate = provider.park("sailing")
    sequencer = trio.testing.Sequencer()
    config = TEST_CONFIG
    async with racing_memory(data_dir, text_provider=provider, config=config) as memory:
        await memory.ingest(A, [turn("e1", "I love sailing.")])
        supervisor = await runtime_core(memory).registry.get(A)
        taken: list[Any] = []

        async def old_worker() -> None:
            async with sequencer(0):
                await gate.reached.wait()
            async with sequencer(2):
                gate.open()
                await settle(lambda: supervisor.statistics().stale_results_dropped > 0)

        async def new_worker() -> None:
            async with sequencer(1):
                # Past the old lease's expiry on the trio clock.
                later = trio.current_time() + config.extraction_lease_s + 1.0
                lease = await supervisor.commit(
                    TakeLease(
                        now_s=later,
                        lease_s=config.extraction_lease_s,
                        max_events=config.extraction_batch,
                        max_bytes=config.extraction_batch_bytes,
                        form_new=False,
                        trigger="retry",
                        identity=supervisor.fence.current(),
                    )
                )
                assert lease is not None
                assert lease.attempt == 2
                taken.append(lease)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(old_worker)
            nursery.start_soon(new_worker)
        (lease,) = taken
        draft = ClaimDraft(
            ClaimKind.PREFERENCE,
            "Ana loves sailing",
            (SourceSpan(EventId("e1"), 0, 14),),
        )
        request = CommitBatch(
            lease=lease,
            batch=ValidatedBatch((draft,), (), (), 0),
            identity=supervisor.fence.current(),
        )
        receipt = await supervisor.commit(request)
        again = await supervisor.commit(
            CommitBatch(
                lease=lease,
                batch=ValidatedBatch((draft,), (), (), 0),
                identity=supervisor.fence.current(),
            )
        )
        assert again == receipt
        assert await _claim_texts(memory, A) == ["Ana loves sailing"]
        assert await _column(memory, "SELECT count(*) FROM claim_fts") == [1]
        assert await _column(
            memory, "SELECT status, attempts FROM event_batches"
        ) == ["committed"]
        assert await _column(memory, "SELECT attempts FROM event_batches") == [2]
        assert supervisor.statistics().extraction_batches == 0


# -- 12 ----------------------------------------------------------------------------------
async def test_one_agents_failing_model_never_stalls_or_leaks_into_another(
    data_dir: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    """I3, I8, I1: agent B's batches fail at the model until they are dead letters while
    agent A's batch is in flight at the same model: A's batch is learned, A's status has
    no failure, neither agent ever recalls the other's canary, and B's turns are kept."""
    provider = GatedTextProvider(failing_on="kiwi-canary")
    gate = provider.park("mango-canary")
    config = attrs.evolve(TEST_CONFIG, extraction_max_attempts=2)
    sequencer = trio.testing.Sequencer()
    async with racing_memory(data_dir, text_provider=provider, config=config) as memory:

        async def agent_a() -> None:
            async with sequencer(0):
                await memory.ingest(A, [turn("a1", "My mango-canary word is ripe.")])
                await gate.reached.wait()
            async with sequencer(2):
                gate.open()
                await memory.wait_idle(A)

        async def agent_b() -> None:
            async with sequencer(1):
                await memory.ingest(B, [turn("b1", "My kiwi-canary word is sour.")])
                await memory.wait_idle(B)  # both attempts fail: a dead letter

        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent_a)
            nursery.start_soon(agent_b)
        status = await memory.status()
        assert status.agent(A).statistics.extraction_failures == 0
        assert status.agent(B).statistics.extraction_dead_letters == 1
        assert await _claim_texts(memory, A) == ["My mango-canary word is ripe"]
        assert await _claim_texts(memory, B) == []
        assert status.agent(B).events == 1
        for agent, own, other in ((A, "mango", "kiwi"), (B, "kiwi", "mango")):
            recalled = await _recalled(memory, agent, "canary word")
            assert _mentions(recalled, own)
            assert not _mentions(recalled, other)
