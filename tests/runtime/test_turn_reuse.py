"""One contribution per host turn: a second recall with the same agent, session and
``turn_id`` returns the recorded contribution without retrieving (the embedder is not
asked again, no new record), a different turn or session recomputes, a forget since
recomputes, and concurrent recalls of one turn compute once."""

from __future__ import annotations

from pathlib import Path

import trio
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn import RecallStatus
from cairn.runtime.core import runtime_core
from cairn.testing import HashingEmbedder

FACTS = [
    turn("e1", "I adopted a grey cat called Miso."),
    turn("e2", "I drink oolong tea every morning."),
]


def _embedder_calls(memory) -> int:
    return runtime_core(memory).active.provider.calls


async def test_a_repeat_for_the_same_turn_reuses_its_contribution(memory) -> None:
    await memory.ingest("a", FACTS)
    await memory.wait_idle("a")
    first = await memory.recall("a", "grey cat", session_id="s1", turn_id="t1")
    assert "Miso" in first.memory_block
    calls = _embedder_calls(memory)
    # A refresh after a tool call: another query, the same turn.
    again = await memory.recall("a", "what tea?", session_id="s1", turn_id="t1")
    assert again == first
    assert _embedder_calls(memory) == calls
    assert len(await memory.recalls("a")) == 1


async def test_another_turn_or_session_recomputes(memory) -> None:
    await memory.ingest("a", FACTS)
    await memory.wait_idle("a")
    first = await memory.recall("a", "grey cat", session_id="s1", turn_id="t1")
    calls = _embedder_calls(memory)
    other_turn = await memory.recall("a", "grey cat", session_id="s1", turn_id="t2")
    other_session = await memory.recall("a", "grey cat", session_id="s2", turn_id="t1")
    without_turn = await memory.recall("a", "grey cat", session_id="s1")
    ids = {first.request_id, other_turn.request_id, other_session.request_id}
    assert len(ids | {without_turn.request_id}) == 4
    assert _embedder_calls(memory) == calls + 3
    assert len(await memory.recalls("a")) == 4
    # Each turn still has its own contribution.
    assert (
        await memory.recall("a", "x", session_id="s1", turn_id="t2")
    ).request_id == other_turn.request_id


async def test_a_forget_since_makes_the_turn_recompute(memory) -> None:
    await memory.ingest("a", FACTS)
    await memory.wait_idle("a")
    first = await memory.recall("a", "grey cat Miso", session_id="s1", turn_id="t1")
    forgotten = next(item.id for item in first.items if "Miso" in item.text)
    await memory.forget("a", forgotten)
    again = await memory.recall("a", "grey cat Miso", session_id="s1", turn_id="t1")
    assert again.request_id != first.request_id
    assert "Miso" not in again.memory_block
    assert len(await memory.recalls("a")) == 2
    # The new contribution is the turn's from now on.
    assert await memory.recall("a", "cat", session_id="s1", turn_id="t1") == again


async def test_concurrent_recalls_of_one_turn_compute_once(memory) -> None:
    await memory.ingest("a", FACTS)
    await memory.wait_idle("a")
    calls = _embedder_calls(memory)
    answers = []

    async def ask() -> None:
        answers.append(
            await memory.recall("a", "grey cat", session_id="s1", turn_id="t1")
        )

    async with trio.open_nursery() as nursery:
        for _ in range(5):
            nursery.start_soon(ask)
    assert len({answer.request_id for answer in answers}) == 1
    assert all(answer == answers[0] for answer in answers)
    assert _embedder_calls(memory) == calls + 1
    assert len(await memory.recalls("a")) == 1


async def test_a_repeat_while_the_turn_is_pending_waits_for_the_same_work(
    data_dir: Path,
) -> None:
    # The real clock: ``wait_s=0.0`` is pending at once on any clock, and a mock clock
    # that jumps while a loaded machine holds a worker thread back fires the far
    # deadlines (embedding deadline, idle stop) that end the pending work early.
    embedder = HashingEmbedder()
    async with open_test_memory(data_dir, embedder=embedder) as memory:
        await memory.ingest("a", FACTS)
        await memory.wait_idle("a")
        calls = embedder.calls
        pending = await memory.recall(
            "a", "grey cat", session_id="s1", turn_id="t1", wait_s=0.0
        )
        assert pending.status is RecallStatus.PENDING
        done = await memory.recall("a", "grey cat", session_id="s1", turn_id="t1")
        assert done.status is RecallStatus.OK
        assert done.request_id == pending.request_id
        assert "Miso" in done.memory_block
        assert embedder.calls == calls + 1
        assert [r.request_id for r in await memory.recalls("a")] == [pending.request_id]
