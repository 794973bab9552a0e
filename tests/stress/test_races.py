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
import datetime as dt
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from tests.conftest import TEST_CONFIG
from tests.helpers import BASE_TIME, files_holding, turn
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
from cairn.domain.ids import EventId
from cairn.errors import (
    CairnError,
    DrainingError,
    RuntimeClosedError,
    UnknownRequestError,
)
from cairn.ingestion.validate import ValidatedBatch
from cairn.runtime.core import runtime_core
from cairn.runtime.transfer import export_memory, import_memory
from cairn.runtime.writes import CommitBatch, TakeLease
from cairn.store.retire import namespace_tables
from cairn.testing import FixedDomainClock
from cairn.vectors.codec import encode_vector

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


async def _plaintext_left(
    memory: Memory, data_dir: Path, *words: str
) -> dict[str, Any]:
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
        assert await _column(memory, "SELECT status FROM event_batches") == [
            "committed"
        ]
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


# -- 3 -----------------------------------------------------------------------------------
@pytest.mark.parametrize("first", ["clear", "import"])
async def test_an_import_racing_a_clear_of_its_agent_brings_nothing_back(
    data_dir: Path, tmp_path: Path, first: str
) -> None:
    """I2, I8: an export of the agent is imported while its clear starts: the import's
    transaction lands just before the clear's first one, or while the clear is pending
    (queued behind its start). Either way both finish (the import with a typed error at
    worst), nothing cleared is recalled or exported, and importing the file again after
    the clear brings nothing back either."""
    async with racing_memory(data_dir) as memory:
        await memory.ingest(
            A, [turn("e1", "I live in Lisbon."), turn("e2", "I love hiking with Rex.")]
        )
        await memory.wait_idle(A)
        assert await _claim_texts(memory, A) != []
        exported = tmp_path / "a.jsonl"
        with exported.open("w") as sink:
            await export_memory(memory, sink, A)
        supervisor = await runtime_core(memory).registry.get(A)
        outcomes: dict[str, Any] = {}

        async def run(name: str, call: Any) -> None:
            try:
                outcomes[name] = await call()
            except CairnError as error:
                outcomes[name] = error

        async with (
            trio.open_nursery() as nursery,
            holding(memory, "store_write") as writer,
        ):
            order = ["clear", "import"] if first == "clear" else ["import", "clear"]
            for step, name in enumerate(order):
                if name == "clear":
                    nursery.start_soon(run, "clear", lambda: memory.clear(A))
                else:
                    nursery.start_soon(
                        run, "import", lambda: import_memory(memory, exported)
                    )
                # Each one's transaction is queued before the next one starts.
                await settle(
                    lambda step=step: (
                        writer.waiting() + queued_writes(memory, A) == step + 1
                    )
                )
            writer.release()
        assert not isinstance(outcomes["clear"], Exception)
        with trio.fail_after(STEP_S):
            await memory.wait_cleared(A)
            await memory.wait_idle(A)
        await run("again", lambda: import_memory(memory, exported))
        await memory.wait_idle(A)
        again = outcomes["again"]
        assert not isinstance(again, Exception)
        assert {kind: counts.imported for kind, counts in again.records.items()} == {
            "event": 0,
            "claim": 0,
        }
        assert await _claim_texts(memory, A) == []
        assert await _column(memory, "SELECT count(*) FROM events") == [0]
        for query in ("live in Lisbon", "hiking with Rex"):
            assert await _recalled(memory, A, query) == []
        sink = io.StringIO()
        await export_memory(memory, sink, A)
        assert "Lisbon" not in sink.getvalue()
        assert supervisor.fence.epoch >= 1


# -- 4 -----------------------------------------------------------------------------------
@pytest.mark.parametrize("computed", ["before_the_clear", "after_the_clear"])
async def test_a_late_recall_result_never_returns_cleared_memory(
    data_dir: Path, thread_safe_clock: trio.testing.MockClock, computed: str
) -> None:
    """I2: a recall misses its wait budget (its query embedding is held) and answers
    ``partial``; the agent is cleared before its complete result is stored, with the
    result computed on a snapshot before the clear (its store queued right behind the
    clear's start) or after the clear ended. ``fetch_recall`` never returns cleared
    memory: the stale result is dropped, a fresh one holds nothing cleared."""
    embedder = GatedEmbedder()
    async with racing_memory(data_dir, embedder) as memory:
        await memory.ingest(
            A, [turn("e1", "The spare key is under the red flowerpot.")]
        )
        await memory.wait_idle(A)
        gate = embedder.park_queries("flowerpot")
        answer = await memory.recall(A, "spare key flowerpot", wait_s=1.0)
        assert answer.status is RecallStatus.PARTIAL
        assert _mentions([item.text for item in answer.items], "flowerpot")
        supervisor = await runtime_core(memory).registry.get(A)
        request_id = answer.request_id

        def stored_or_dropped() -> bool:
            return request_id not in supervisor._late

        if computed == "before_the_clear":
            async with (
                trio.open_nursery() as nursery,
                holding(memory, "store_write") as writer,
            ):
                nursery.start_soon(memory.clear, A)
                await settle(lambda: writer.waiting() == 1)
                gate.open()
                # The complete result was computed; its store waits behind the clear.
                await settle(lambda: queued_writes(memory, A) == 1)
                writer.release()
        else:
            await memory.clear(A)
            gate.open()
        await settle(stored_or_dropped)
        if computed == "before_the_clear":
            with pytest.raises(UnknownRequestError):
                await memory.fetch_recall(A, request_id)
        else:
            late = await memory.fetch_recall(A, request_id)
            assert late.status is RecallStatus.OK
            assert not _mentions([item.text for item in late.items], "flowerpot")
            assert "flowerpot" not in late.memory_block


# -- 6 -----------------------------------------------------------------------------------
async def test_an_extraction_in_flight_across_an_a_b_a_switch_commits_only_once(
    data_dir: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    """I4, I5: the model answers for a batch after the embedder was switched A→B→A (the
    same identity as when it started, two epochs later): that answer never commits, the
    batch is extracted again under the current epoch and published once, and its turn
    has exactly one vector of A, made after the switch."""
    model_a, model_b = GatedEmbedder(), GatedEmbedder(model="other-model")
    provider = GatedTextProvider()
    gate = provider.park("cello", shielded=True)
    sequencer = trio.testing.Sequencer()
    async with racing_memory(data_dir, model_a, provider) as memory:
        await memory.ingest(A, [turn("e1", "I play the cello on Sundays.")])
        supervisor = await runtime_core(memory).registry.get(A)
        epoch = supervisor.fence.epoch

        async def extraction_side() -> None:
            async with sequencer(0):
                await gate.reached.wait()
            async with sequencer(2):
                gate.open()

        async def operator_side() -> None:
            async with sequencer(1):
                assert await memory.use_embedder(model_b)
                assert await memory.use_embedder(model_a)
                assert supervisor.fence.epoch == epoch + 2

        async with trio.open_nursery() as nursery:
            nursery.start_soon(extraction_side)
            nursery.start_soon(operator_side)
        await memory.wait_idle(A)
        assert await _claim_texts(memory, A) == ["I play the cello on Sundays"]
        assert [call for call in provider.calls if "cello" in call[0]] == [
            ["I play the cello on Sundays."]
        ] * 2
        assert await _column(memory, "SELECT attempts FROM event_batches") == [2]
        assert supervisor.statistics().stale_results_dropped >= 1
        identities = await _column(
            memory,
            "SELECT i.model FROM embeddings e JOIN vector_identity i USING"
            " (identity_key) WHERE e.target = 'event'",
        )
        assert identities.count("hashing-v1") == 1
        assert _mentions(await _recalled(memory, A, "cello Sundays"), "cello")


# -- 7 -----------------------------------------------------------------------------------
async def test_an_agent_recreated_while_its_retire_winds_down_starts_empty(
    data_dir: Path,
) -> None:
    """I2, I8: the agent is retired while an embedding of its last turn is in flight
    (shielded, like work in a thread) and the same agent ID is written again once the
    namespace is purged, before that embedding returns: the new agent starts empty,
    nothing of the old one (rows, vectors, recall, files) reappears when the old work
    finishes, and every call returns."""
    embedder = GatedEmbedder()
    gate = embedder.park_documents("Lisbon", shielded=True)
    sequencer = trio.testing.Sequencer()
    async with racing_memory(data_dir, embedder) as memory:
        await memory.ingest(A, [turn("e1", "I love hiking with my dog Rex.")])
        await memory.wait_idle(A)
        await memory.ingest(A, [turn("e2", "I live in Lisbon.")])
        old = await runtime_core(memory).registry.get(A)
        done: dict[str, Any] = {}

        async def note(name: str, call: Any) -> None:
            try:
                done[name] = await call()
            except CairnError as error:
                done[name] = error

        async def recreate() -> None:
            await memory.ingest(A, [turn("n1", "I grow tomatoes.")])
            await memory.wait_idle(A)

        async def old_work() -> None:
            async with sequencer(0):
                await gate.reached.wait()
            async with sequencer(3):
                gate.open()

        async def retire_side() -> None:
            async with sequencer(1):
                nursery.start_soon(note, "retire", lambda: memory.retire(A))
                # The namespace is purged; the old agent's actors are winding down.
                await settle(lambda: old.retired)

        async def recreate_side() -> None:
            async with sequencer(2):
                nursery.start_soon(note, "recreate", recreate)
                await trio.testing.wait_all_tasks_blocked()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(old_work)
            nursery.start_soon(retire_side)
            nursery.start_soon(recreate_side)
        assert done["retire"].agent_id == A
        if isinstance(done["recreate"], Exception):
            # Refused while the old agent was still going: a typed answer, nothing
            # stored; the same call once the retire has returned is served.
            assert isinstance(done["recreate"], RuntimeClosedError)
            assert await _column(memory, "SELECT count(*) FROM events") == [0]
            await recreate()
        assert await _column(
            memory, "SELECT event_id FROM events WHERE agent_id = ?", A
        ) == ["n1"]
        assert all("tomato" in text for text in await _claim_texts(memory, A))
        supervisor = await runtime_core(memory).registry.get(A)
        assert supervisor is not old
        assert await _column(
            memory, "SELECT count(*) FROM embeddings WHERE agent_id = ?", A
        ) == [1]
        assert len(supervisor.projection) == 1
        for query in ("live in Lisbon", "hiking with Rex"):
            recalled = await _recalled(memory, A, query)
            assert not _mentions(recalled, "Lisbon")
            assert not _mentions(recalled, "Rex")
        assert await _plaintext_left(memory, data_dir, "Lisbon", "hiking") == {}


# -- 8 -----------------------------------------------------------------------------------
@pytest.mark.parametrize("write", ["still_starting_its_agent", "queued_at_the_writer"])
async def test_a_write_racing_a_drain_is_refused_or_settled_never_lost(
    data_dir: Path, write: str
) -> None:
    """I1, I8: a drain begins while an ingest is between its admission checks (its agent
    is still starting) or already queued at the writer: the first is refused with
    ``DrainingError`` and stores nothing; the second is acknowledged and the drain
    returns only once it is stored, extracted and embedded."""
    sequencer = trio.testing.Sequencer()
    async with racing_memory(data_dir) as memory:
        if write == "queued_at_the_writer":
            await memory.ingest(A, [turn("e0", "Hello there.")])
            await memory.wait_idle(A)
        outcome: list[Any] = []
        writer = TokenHold(memory, "store_write")

        async def writer_side() -> None:
            async with sequencer(0):
                await writer.hold()
                nursery.start_soon(ingest)
                # Its agent's first transaction, or the ingest itself, waits.
                await settle(lambda: writer.waiting() == 1)
            async with sequencer(2):
                writer.release()

        async def ingest() -> None:
            try:
                outcome.append(
                    await memory.ingest(A, [turn("e1", "I adopted a grey cat, Miso.")])
                )
            except DrainingError as error:
                outcome.append(error)

        async def drain_side() -> None:
            async with sequencer(1):
                nursery.start_soon(drain)
                await settle(lambda: not runtime_core(memory).admission.accepting)
            async with sequencer(3):
                with trio.fail_after(STEP_S):
                    await drained.wait()

        drained = trio.Event()

        async def drain() -> None:
            await memory.drain()
            drained.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer_side)
            nursery.start_soon(drain_side)
        (result,) = outcome
        counts = (await memory.status()).agent(A)
        if write == "still_starting_its_agent":
            assert isinstance(result, DrainingError)
            assert counts.events == 0
        else:
            assert result.ingested == 1
            assert counts.events == 2
            assert counts.events_pending_extraction == 0
            assert counts.embeddings == 2
        await memory.resume()
        assert (await memory.ingest(A, [turn("e9", "I like tea.")])).ingested == 1


# -- 10 ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("first", "then", "stays"),
    [
        ("forget", "user", True),
        ("user", "forget", False),
        ("forget", "model", False),
    ],
)
async def test_a_remember_racing_a_forget_of_the_same_text(
    data_dir: Path, first: str, then: str, stays: bool
) -> None:
    """I1, I2: a remember of a claim's exact text and the forget of that claim reach
    the writer back to back. Whatever lands last decides, and the vector projection
    agrees with the table: a user's re-add after the forget is stored, embedded and
    recalled; a forget after the user's remember leaves nothing; a model's remember
    after the forget stays suppressed."""
    text = "Ana collects vintage typewriters"
    async with racing_memory(data_dir) as memory:
        remembered = await memory.remember(A, text, by="user")
        assert remembered.claim_id is not None
        claim_id = remembered.claim_id
        await memory.wait_idle(A)
        results: dict[str, Any] = {}

        async def side(name: str) -> None:
            if name == "forget":
                results[name] = await memory.forget(A, claim_id)
            else:
                results[name] = await memory.remember(A, text, by=name)

        async with (
            trio.open_nursery() as nursery,
            holding(memory, "store_write") as writer,
        ):
            for step, name in enumerate((first, then)):
                nursery.start_soon(side, name)
                await settle(
                    lambda step=step: (
                        writer.waiting() + queued_writes(memory, A) == step + 1
                    )
                )
            writer.release()
        await memory.wait_idle(A)
        active = await _column(
            memory, "SELECT rowid FROM claims WHERE agent_id = ? AND text = ?", A, text
        )
        vectors = await _column(
            memory,
            "SELECT target_rowid FROM embeddings WHERE agent_id = ? AND target = 'claim'",
            A,
        )
        supervisor = await runtime_core(memory).registry.get(A)
        recalled = await _recalled(memory, A, "vintage typewriters")
        if stays:
            assert len(active) == 1
            assert vectors == active
            assert len(supervisor.projection) == 1
            assert _mentions(recalled, "typewriters")
        else:
            assert active == []
            assert vectors == []
            assert len(supervisor.projection) == 0
            assert not _mentions(recalled, "typewriters")


# -- 13 ----------------------------------------------------------------------------------
async def test_a_maintenance_pass_racing_a_retire_writes_nothing_after_the_purge(
    data_dir: Path,
) -> None:
    """I2: the agent's timed maintenance pass flushes its buffered audit rows (what its
    recalls selected) while its retire is at the last step: the flush reaches the writer
    right behind the namespace purge. Nothing of the retired agent is written after the
    purge: no table holds a row of it, and the same ID starts empty."""
    async with racing_memory(data_dir) as memory:
        await memory.ingest(A, [turn("e1", "I live in Lisbon.")])
        await memory.wait_idle(A)
        assert _mentions(await _recalled(memory, A, "live in Lisbon"), "Lisbon")
        supervisor = await runtime_core(memory).registry.get(A)
        retired: list[Any] = []

        async def retire() -> None:
            retired.append(await memory.retire(A))

        async with trio.open_nursery() as nursery:

            def before_the_purge(step: str, job: Any) -> None:
                if step == "finish" and job.purpose == "retire":
                    # Synchronous, right before the purge is sent: the pass starts at
                    # the next checkpoint, and its audit flush queues behind the purge.
                    nursery.start_soon(supervisor.run_maintenance_pass)

            supervisor.clearing.observer = before_the_purge
            nursery.start_soon(retire)
        assert retired
        left = await runtime_core(memory).database.read(
            lambda reader: {
                table: int(
                    reader.connection.execute(
                        f"SELECT count(*) FROM {table} WHERE agent_id = ?", (A,)
                    ).fetchone()[0]
                )
                for table in namespace_tables(reader.connection)
            }
        )
        assert {table: rows for table, rows in left.items() if rows} == {}
        assert await _recalled(memory, A, "live in Lisbon") == []


# -- 14 ----------------------------------------------------------------------------------
async def test_a_replys_vector_embedded_with_a_turn_forgotten_meanwhile_is_redone(
    data_dir: Path,
) -> None:
    """I2, I7: a reply is embedded with the turn it answers as context; that turn is
    forgotten while the reply's embedding is in flight (shielded, like a thread), and
    the vector arrives after: the reply's stored and served vector is the one of its
    own words only, so nothing embeds the forgotten turn any more."""
    embedder = GatedEmbedder()
    async with racing_memory(data_dir, embedder) as memory:
        await memory.ingest(
            A, [turn("e1", "My childhood pet was a parrot named Kiwi.")]
        )
        await memory.wait_idle(A)
        gate = embedder.park_documents("parrot", shielded=True)
        sequencer = trio.testing.Sequencer()
        reply = turn("e2", "What a lovely name.", role="assistant", speaker=None)

        async def embedding_side() -> None:
            async with sequencer(0):
                await memory.ingest(A, [reply])
                await gate.reached.wait()
            async with sequencer(2):
                gate.open()

        async def user_side() -> None:
            async with sequencer(1):
                await memory.forget(A, "e1")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(embedding_side)
            nursery.start_soon(user_side)
        await memory.wait_idle(A)
        assert any("parrot" in text for text in gate.texts)
        (blob,) = await _column(
            memory,
            "SELECT v.vector FROM events e JOIN embeddings v"
            " ON v.target = 'event' AND v.target_rowid = e.rowid"
            " WHERE e.event_id = 'e2'",
        )
        assert bytes(blob) == encode_vector(embedder._embed("What a lovely name."))
        supervisor = await runtime_core(memory).registry.get(A)
        index = supervisor.projection.index
        assert index is not None
        assert len(index) == 1
        assert not _mentions(await _recalled(memory, A, "parrot named Kiwi"), "parrot")
        assert await _plaintext_left(memory, data_dir, "parrot") == {}


# -- 15 ----------------------------------------------------------------------------------
def _lives_in(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Each user turn as Ana's 'lives_in' state; turns starting 'Actually' correct it."""
    claims, corrections = [], []
    for event in events:
        city = str(event["text"]).rstrip(".").split()[-1]
        claim = {
            "kind": "state",
            "text": f"Ana lives in {city}",
            "subject": "Ana",
            "predicate": "lives_in",
            "sources": [{"event_id": event["event_id"], "quote": city}],
        }
        target = corrections if str(event["text"]).startswith("Actually") else claims
        target.append(claim)
    return {
        "claims": claims,
        "corrections": corrections,
        "relations": [],
        "directive_drafts": [],
        "discarded_event_ids": [],
    }


async def test_a_value_archived_while_its_successor_is_extracted_is_restored_as_history(
    data_dir: Path,
) -> None:
    """I4: the current value of an attribute is archived while the batch that corrects
    it is being extracted, and restored afterwards: whichever way the archive and the
    correction interleave, the attribute has one current value, the newest by evidence
    (as if nothing had been archived), and the restored one is history until then."""
    provider = GatedTextProvider(answer=_lives_in)
    async with racing_memory(data_dir, text_provider=provider) as memory:
        await memory.ingest(A, [turn("e1", "I live in Paris.")])
        await memory.wait_idle(A)
        (paris,) = await _column(memory, "SELECT claim_id FROM claims")
        gate = provider.park("Berlin")
        sequencer = trio.testing.Sequencer()
        later = BASE_TIME + dt.timedelta(days=1)

        async def extraction_side() -> None:
            async with sequencer(0):
                await memory.ingest(
                    A, [turn("e2", "Actually I live in Berlin.", at=later)]
                )
                await gate.reached.wait()
            async with sequencer(2):
                gate.open()
                await memory.wait_idle(A)

        async def user_side() -> None:
            async with sequencer(1):
                archived = await memory.archive(A, paris)
                assert archived.lifecycle == "archived"

        async with trio.open_nursery() as nursery:
            nursery.start_soon(extraction_side)
            nursery.start_soon(user_side)
        restored = await memory.unarchive(A, paris)
        assert restored.lifecycle == "superseded"
        rows = await runtime_core(memory).database.read(
            lambda reader: reader.connection.execute(
                "SELECT text, lifecycle, superseded_at FROM claims ORDER BY rowid"
            ).fetchall()
        )
        assert [tuple(row) for row in rows] == [
            ("Ana lives in Paris", "superseded", later.isoformat()),
            ("Ana lives in Berlin", "active", None),
        ]


# -- 16 ----------------------------------------------------------------------------------
async def test_a_session_declared_subagent_while_its_batch_is_extracted_teaches_nothing(
    data_dir: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    """I4: a session is declared a subagent's while the model answers for a batch that
    holds its turn (with a turn of the main session): nothing is learned from the
    subagent's turn, neither from that answer nor from a retry, and the main session's
    turn is still learned."""
    provider = GatedTextProvider()
    gate = provider.park("coffee")
    sequencer = trio.testing.Sequencer()
    async with racing_memory(data_dir, text_provider=provider) as memory:

        async def extraction_side() -> None:
            async with sequencer(0):
                await memory.ingest(
                    A,
                    [
                        turn("x1", "I love black coffee.", session="sub"),
                        turn("m1", "I collect old maps.", session="main"),
                    ],
                )
                await gate.reached.wait()
            async with sequencer(2):
                gate.open()

        async def host_side() -> None:
            async with sequencer(1):
                await memory.declare_session(A, "sub", subagent=True)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(extraction_side)
            nursery.start_soon(host_side)
        await memory.wait_idle(A)
        assert gate.texts == ["I love black coffee.", "I collect old maps."]
        assert await _claim_texts(memory, A) == ["I collect old maps"]
        assert not any("coffee" in text for call in provider.calls[1:] for text in call)


# -- 17 ----------------------------------------------------------------------------------
async def test_a_turns_contribution_recorded_behind_a_forget_is_not_reused(
    data_dir: Path,
) -> None:
    """I2: a recall for a host turn is computed on a snapshot before a forget, and its
    record reaches the writer right behind the forget. The forgotten turn is not kept
    in the stored answer: a second recall for the same turn retrieves again without it,
    and the first request's answer cannot be fetched."""
    async with racing_memory(data_dir) as memory:
        await memory.ingest(
            A,
            [
                turn("e1", "The spare key is under the red flowerpot."),
                turn("e2", "The bike lock code is written in the red notebook."),
            ],
        )
        await memory.wait_idle(A)
        answers: list[Any] = []

        async def recall() -> None:
            answers.append(
                await memory.recall(A, "red flowerpot notebook", turn_id="t1")
            )

        async with (
            trio.open_nursery() as nursery,
            holding(memory, "store_write") as writer,
        ):
            nursery.start_soon(memory.forget, A, "e1")
            await settle(lambda: writer.waiting() == 1)
            nursery.start_soon(recall)
            # Computed on the snapshot before the forget; its record waits behind it.
            await settle(lambda: queued_writes(memory, A) == 1)
            writer.release()
        (first,) = answers
        # It overlapped the forget: answering what held before it is allowed.
        assert _mentions([item.text for item in first.items], "flowerpot")
        again = await memory.recall(A, "red flowerpot notebook", turn_id="t1")
        assert again.request_id != first.request_id
        assert not _mentions([item.text for item in again.items], "flowerpot")
        assert _mentions([item.text for item in again.items], "notebook")
        with pytest.raises(UnknownRequestError):
            await memory.fetch_recall(A, first.request_id)


# -- 18 ----------------------------------------------------------------------------------
async def test_a_directive_created_as_a_retire_purges_never_reaches_the_new_agent(
    data_dir: Path,
) -> None:
    """I2, I8: a user creates a directive for an agent whose retire is at its last step:
    the create reaches the writer right behind the namespace purge. It is refused with a
    typed error (never half stored), and the agent re-created under the same ID starts
    with no directive: its directive block never shows the retired agent's text."""
    async with racing_memory(data_dir) as memory:
        await memory.ingest(A, [turn("e1", "I live in Lisbon.")])
        await memory.wait_idle(A)
        supervisor = await runtime_core(memory).registry.get(A)
        created: list[Any] = []

        async def create() -> None:
            try:
                created.append(await memory.add_directive(A, "Answer in Portuguese."))
            except CairnError as error:
                created.append(error)

        async with trio.open_nursery() as nursery:

            def before_the_purge(step: str, job: Any) -> None:
                if step == "finish" and job.purpose == "retire":
                    # The create starts at the next checkpoint, behind the purge.
                    nursery.start_soon(create)

            supervisor.clearing.observer = before_the_purge
            nursery.start_soon(memory.retire, A)
        (outcome,) = created
        assert isinstance(outcome, RuntimeClosedError)
        await memory.ingest(A, [turn("n1", "I grow tomatoes.")])
        await memory.wait_idle(A)
        assert await memory.directives.list(A) == []
        recall = await memory.recall(A, "tomatoes")
        assert "Portuguese" not in recall.directive_block


# -- 19 ----------------------------------------------------------------------------------
async def test_a_claim_forgotten_while_a_new_turn_teaching_it_is_extracted_stays_out(
    data_dir: Path,
) -> None:
    """I2: a claim is forgotten while a batch extracting the same claim from a newer turn
    is at the model: the answer commits after the tombstone, and the claim stays out;
    a different fact of the same batch is learned."""
    provider = GatedTextProvider()
    async with racing_memory(data_dir, text_provider=provider) as memory:
        await memory.ingest(A, [turn("e1", "I collect old maps.")])
        await memory.wait_idle(A)
        (claim_id,) = await _column(memory, "SELECT claim_id FROM claims")
        gate = provider.park("maps")
        sequencer = trio.testing.Sequencer()

        async def extraction_side() -> None:
            async with sequencer(0):
                await memory.ingest(
                    A,
                    [
                        turn("e2", "I collect old maps.", session="s2"),
                        turn("e3", "I keep a stamp album.", session="s2"),
                    ],
                )
                await gate.reached.wait()
            async with sequencer(2):
                gate.open()

        async def user_side() -> None:
            async with sequencer(1):
                await memory.forget(A, claim_id)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(extraction_side)
            nursery.start_soon(user_side)
        await memory.wait_idle(A)
        assert await _claim_texts(memory, A) == ["I keep a stamp album"]
        recalled = await _recalled(memory, A, "collect old maps")
        assert not any(text == "I collect old maps" for text in recalled)


# -- 20 ----------------------------------------------------------------------------------
async def test_a_recall_racing_a_retire_answers_and_leaves_no_record(
    data_dir: Path,
) -> None:
    """I2, I8: a recall of an agent reaches it as its retire purges the namespace: it
    returns (with nothing of the retired memory, or a typed error), its record is not
    written into the purged namespace, and the agent re-created under the same ID has no
    record of it."""
    async with racing_memory(data_dir) as memory:
        await memory.ingest(A, [turn("e1", "I live in Lisbon.")])
        await memory.wait_idle(A)
        supervisor = await runtime_core(memory).registry.get(A)
        answered: list[Any] = []

        async def recall() -> None:
            try:
                answered.append(
                    await memory.recall(A, "live in Lisbon", session_id="s1")
                )
            except CairnError as error:
                answered.append(error)

        async with trio.open_nursery() as nursery:

            def before_the_purge(step: str, job: Any) -> None:
                if step == "finish" and job.purpose == "retire":
                    nursery.start_soon(recall)

            supervisor.clearing.observer = before_the_purge
            nursery.start_soon(memory.retire, A)
        (answer,) = answered
        if not isinstance(answer, CairnError):
            assert not _mentions([item.text for item in answer.items], "Lisbon")
        assert await memory.recalls(A) == []
        assert await _column(
            memory, "SELECT count(*) FROM recall_records WHERE agent_id = ?", A
        ) == [0]
