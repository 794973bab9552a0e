"""Scripted races of maintenance against the writes beside it: each pins one interleaving
with a ``trio.testing.Sequencer`` and a maintenance pass parked on its snapshot
(tests/stress/race_fakes.py ``GatedPass``), on a real runtime with the rule extractor, and
asserts what it protects: I1 no lost acknowledged write, I2 no resurrection, I7 no
forgotten plaintext in any file (after the drain's purge and checkpoint).

A pass plans on a read snapshot and applies through the agent's writer; these put a
forget, a clear, an edit or a new turn between the two (and, for contrast, after the
apply), so ``apply`` must decide again on the rows as they are.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from tests.conftest import TEST_CONFIG
from tests.helpers import BASE_TIME, files_holding, turn
from tests.stress.race_fakes import GatedEmbedder, GatedPass

from cairn import Memory, RecallStatus, open_memory
from cairn.maintenance.registry import default_passes
from cairn.retrieval.types import Recall, Standing
from cairn.runtime.core import runtime_core
from cairn.testing import FixedDomainClock

A = "agent-a"
# Bounds every wait on a parked side: a hang is a failure with a traceback (I8).
STEP_S = 30.0
# Marker words (no English word, one lexical token each).
M = "qzfrtkwbnd"
M2 = "qxvlmpcdtr"
M3 = "qhjgzwcdrt"
# Two days and one day before the memory's clock: the newer turn's value holds now.
OLDER = BASE_TIME - dt.timedelta(days=2)
NEWER = BASE_TIME - dt.timedelta(days=1)
# A fact and its restatement the merge pass joins: only the intensifier differs, so the
# older turn's claim "Ana非常喜欢 …" is the one merged away into the newer's.
STRONG = f"我非常喜欢 {M}。"
PLAIN = f"我喜欢 {M}。"
STRONG_WORD = "非常"


@attrs.define
class Maintained:
    memory: Memory
    data_dir: Path
    gates: dict[str, GatedPass]

    async def maintain(self) -> None:
        supervisor = await runtime_core(self.memory).registry.get(A)
        await supervisor.run_maintenance_pass()

    async def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return await runtime_core(self.memory).database.read(
            lambda reader: [
                tuple(row) for row in reader.connection.execute(sql, params)
            ]
        )

    async def claim_id(self, text: str) -> str:
        ((claim_id,),) = await self.rows(
            "SELECT claim_id FROM claims WHERE agent_id = ? AND text = ?", A, text
        )
        return str(claim_id)

    async def recall(self, query: str) -> Recall:
        recall = await self.memory.recall(A, query, k=20)
        assert recall.status is RecallStatus.OK
        return recall

    async def plaintext_left(self, *words: str) -> dict[str, list[str]]:
        """Which forgotten words a file of the data directory still holds once a drain
        has purged and checkpointed (I7)."""
        await self.memory.drain()
        found = files_holding(self.data_dir, words)
        await self.memory.resume()
        return found


@contextlib.asynccontextmanager
async def maintained_memory(data_dir: Path, *gated: str) -> AsyncIterator[Maintained]:
    """A memory whose agents run the default passes, those named in ``gated`` parked
    at their first plan with work."""
    async with open_memory(
        data_dir, TEST_CONFIG, clock=FixedDomainClock(), embedder=GatedEmbedder()
    ) as memory:
        gates: dict[str, GatedPass] = {}
        passes: list[Any] = []
        for step in default_passes():
            if step.name in gated:
                gates[step.name] = GatedPass(step)
                passes.append(gates[step.name])
            else:
                passes.append(step)
        registry = runtime_core(memory).registry
        registry.services = attrs.evolve(
            registry.services, maintenance_passes=lambda: tuple(passes)
        )
        yield Maintained(memory, data_dir, gates)


async def race(
    maintained: Maintained, name: str, between: Callable[[], Awaitable[None]]
) -> None:
    """A maintenance pass whose ``name`` pass plans, then ``between`` runs to the end,
    then the pass applies its plan and finishes."""
    gate = maintained.gates[name].gate
    sequencer = trio.testing.Sequencer()

    async def maintenance_side() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(maintained.maintain)
            async with sequencer(0):
                with trio.fail_after(STEP_S):
                    await gate.reached.wait()
            async with sequencer(2):
                gate.open()

    async def other_side() -> None:
        async with sequencer(1):
            await between()

    with trio.fail_after(STEP_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(maintenance_side)
            nursery.start_soon(other_side)
    assert gate.used, f"the {name} pass had nothing to plan"


def _evidence(recall: Recall) -> set[str]:
    return {item.id for item in recall.items if item.kind == "evidence"}


def _claims(recall: Recall) -> set[str]:
    return {item.text for item in recall.items if item.kind != "evidence"}


async def _said_twice(maintained: Maintained) -> tuple[str, str]:
    """The fact in the older turn e1 and restated in the newer e2 (another session);
    returns the claim IDs learned from each."""
    await maintained.memory.ingest(
        A,
        [
            turn("e1", STRONG, session="s1", at=OLDER),
            turn("e2", PLAIN, session="s2", at=NEWER),
        ],
    )
    await maintained.memory.wait_idle(A)
    strong = await maintained.claim_id(f"Ana{STRONG_WORD}喜欢 {M}")
    plain = await maintained.claim_id(f"Ana喜欢 {M}")
    return strong, plain


# -- the merge pass against a forget of one of the claims it merges -----------------------
# What recall shows of the fact afterwards: the turns (by ID) and the claims (by text).
_AFTER = {
    ("absorbed_turn", "inside"): ({"e2"}, {f"Ana喜欢 {M}"}),
    ("absorbed_turn", "after"): ({"e2"}, {f"Ana喜欢 {M}"}),
    ("absorbed_claim", "inside"): ({"e2"}, {f"Ana喜欢 {M}"}),
    ("absorbed_claim", "after"): (set(), set()),
    ("survivor_claim", "inside"): ({"e1"}, {f"Ana{STRONG_WORD}喜欢 {M}"}),
    ("survivor_claim", "after"): (set(), set()),
}


@pytest.mark.parametrize("order", ["inside", "after"])
@pytest.mark.parametrize(
    "target", ["absorbed_turn", "absorbed_claim", "survivor_claim"]
)
async def test_a_forget_beside_a_merge_of_its_claim_brings_nothing_back(
    data_dir: Path, target: str, order: str
) -> None:
    """I1, I2, I7: two turns say one fact; the merge pass plans to merge the older one's
    claim into the newer's, and a forget lands between its plan and its apply
    (``inside``) or after the merge (``after``). Forgetting a claim before the merge
    takes its turn out of recall and leaves the restatement recallable; after the
    merge the claim cites both turns, so forgetting it (by either ID) takes both. A
    forgotten turn's words are in no file: not in the claim index either, where the
    claim merged away from it had left them (a forget of the turn purges that index
    too, though it removes no claim)."""
    async with maintained_memory(data_dir, "merge") as maintained:
        strong, plain = await _said_twice(maintained)
        forgotten = {"absorbed_turn": "e1", "absorbed_claim": strong}.get(target, plain)

        async def forget() -> None:
            await maintained.memory.forget(A, forgotten)

        if order == "inside":
            await race(maintained, "merge", forget)
            assert await maintained.rows("SELECT * FROM claim_merges") == []
        else:
            maintained.gates["merge"].gate.open()
            await maintained.maintain()
            assert len(await maintained.rows("SELECT * FROM claim_merges")) == 1
            await forget()
        await maintained.memory.wait_idle(A)
        recall = await maintained.recall(M)
        turns, claims = _AFTER[target, order]
        assert _evidence(recall) == turns
        assert _claims(recall) == claims
        if target == "absorbed_turn":
            # I7: nothing of the forgotten turn is left on disk; its restatement stays.
            assert STRONG_WORD not in recall.memory_block
            assert await maintained.plaintext_left(STRONG_WORD) == {}
            await maintained.memory.forget(A, "e2")
            assert not [i for i in (await maintained.recall(M)).items if M in i.text]
            assert await maintained.plaintext_left(M[-6:]) == {}


# -- the merge pass against a clear ----------------------------------------------------
@pytest.mark.parametrize("order", ["inside", "after"])
async def test_a_clear_beside_a_merge_leaves_nothing_and_the_next_turn_stays(
    data_dir: Path, order: str
) -> None:
    """I1, I2, I7: a clear lands between the merge pass's plan and its apply, or after
    the merge: nothing of the fact is recalled or left in any file, no merge record
    survives, and a turn saying it again after the clear is stored and recalled."""
    async with maintained_memory(data_dir, "merge") as maintained:
        await _said_twice(maintained)

        async def clear() -> None:
            await maintained.memory.clear(A)

        if order == "inside":
            await race(maintained, "merge", clear)
        else:
            maintained.gates["merge"].gate.open()
            await maintained.maintain()
            await clear()
        await maintained.memory.wait_idle(A)
        assert await maintained.rows("SELECT * FROM claim_merges") == []
        assert await maintained.rows("SELECT text FROM claims") == []
        assert not [i for i in (await maintained.recall(M)).items if M in i.text]
        assert await maintained.plaintext_left(M[-6:], STRONG_WORD) == {}
        await maintained.memory.ingest(A, [turn("e3", f"我很喜欢 {M}。", at=NEWER)])
        await maintained.memory.wait_idle(A)
        await maintained.maintain()
        assert _evidence(await maintained.recall(M)) == {"e3"}


# -- the challenge pass against an edit of a turn it settles ----------------------------
def _standing(recall: Recall, marker: str) -> set[Standing | None]:
    return {item.standing for item in recall.items if marker in item.text}


@pytest.mark.parametrize("order", ["inside", "after"])
async def test_a_conflict_raised_beside_an_edit_of_the_superseding_turn_goes_with_it(
    data_dir: Path, order: str
) -> None:
    """I1, I2: two turns state two values of one attribute at the same moment; the
    newer row superseded the other at insert and the challenge pass plans a conflict
    for the user. The superseding turn is edited away between the plan and its apply,
    or after the conflict was raised: no conflict is left naming a withdrawn value, its
    value is never recalled, the other value is current again, and the edit's own text
    is recalled."""
    async with maintained_memory(data_dir, "challenge") as maintained:
        memory = maintained.memory
        await memory.ingest(
            A,
            [
                turn("e1", f"My favourite colour is {M}.", session="s1", at=OLDER),
                turn("e2", f"My favourite colour is {M2}.", session="s2", at=OLDER),
            ],
        )
        await memory.wait_idle(A)
        assert _standing(await maintained.recall(M), M) == {Standing.HISTORY}

        async def edit() -> None:
            await memory.ingest(
                A,
                [
                    turn(
                        "e3",
                        f"Sorry, ignore that: I meant {M3} for lunch.",
                        session="s2",
                        at=NEWER,
                        replaces="e2",
                    )
                ],
            )

        if order == "inside":
            await race(maintained, "challenge", edit)
        else:
            maintained.gates["challenge"].gate.open()
            await maintained.maintain()
            assert len(await maintained.rows("SELECT * FROM conflicts")) == 1
            await edit()
        await memory.wait_idle(A)
        await maintained.maintain()
        assert await maintained.rows("SELECT * FROM conflicts") == []
        assert not [i for i in (await maintained.recall(M2)).items if M2 in i.text]
        assert _standing(await maintained.recall(M), M) == {Standing.CURRENT}
        assert "e3" in _evidence(await maintained.recall(M3))


@pytest.mark.parametrize("order", ["inside", "after"])
async def test_a_remembered_value_keyed_beside_an_edit_of_the_turn_it_supersedes(
    data_dir: Path, order: str
) -> None:
    """I1, I2: a value the user remembered under a speaker's name has no attribute key
    ("I …" and "The user …" are keyed as they are stored; a name is known to the
    challenge pass, which reads the scope's subjects); the challenge pass plans to key
    it, which makes it supersede the value a turn stated. That turn is
    edited away between the plan and the apply, or after: the remembered value is
    current and recalled, the withdrawn value never comes back, and the chain keeps
    no superseded row of it."""
    async with maintained_memory(data_dir, "challenge") as maintained:
        memory = maintained.memory
        # Mara's turn: its claim's subject is her name, as the remembered value's is.
        await memory.ingest(
            A,
            [
                turn(
                    "e1",
                    f"My favourite colour is {M}.",
                    session="s1",
                    at=OLDER,
                    speaker="Mara",
                )
            ],
        )
        await memory.remember(A, f"Mara's favourite colour is {M2}.", by="user")
        await memory.wait_idle(A)

        async def edit() -> None:
            await memory.ingest(
                A,
                [
                    turn(
                        "e2",
                        "Sorry, ignore that, it was about my sister.",
                        session="s1",
                        at=NEWER,
                        speaker="Mara",
                        replaces="e1",
                    )
                ],
            )

        if order == "inside":
            await race(maintained, "challenge", edit)
        else:
            maintained.gates["challenge"].gate.open()
            await maintained.maintain()
            assert _standing(await maintained.recall(M), M) == {Standing.HISTORY}
            await edit()
        await memory.wait_idle(A)
        await maintained.maintain()
        assert not [i for i in (await maintained.recall(M)).items if M in i.text]
        assert _standing(await maintained.recall(M2), M2) == {Standing.CURRENT}
        assert await maintained.rows(
            "SELECT predicate, lifecycle FROM claims WHERE agent_id = ?", A
        ) == [("favourite:colour", "active")]


# -- a maintenance pass against a restatement arriving ---------------------------------
async def test_a_restatement_arriving_while_a_merge_is_planned_is_merged_next(
    data_dir: Path,
) -> None:
    """I1, I2, I7: the merge pass plans on two statements of a fact while a third turn
    restates it; its claim supersedes the one the plan would keep, so the plan's pair
    is not what it was and is not merged; the next pass merges all three into one claim
    citing every turn. Forgetting that claim takes every restatement out of recall
    (none is left to bring it back), and forgetting the turns then leaves no copy of
    the fact in any file."""
    async with maintained_memory(data_dir, "merge") as maintained:
        memory = maintained.memory
        await _said_twice(maintained)

        async def restate() -> None:
            await memory.ingest(
                A, [turn("e3", f"我真的很喜欢 {M}。", session="s3", at=BASE_TIME)]
            )
            await memory.wait_idle(A)

        await race(maintained, "merge", restate)
        assert await maintained.rows("SELECT * FROM claim_merges") == []
        for _ in range(3):
            await maintained.maintain()
        ((claim_id, sources),) = await maintained.rows(
            "SELECT c.claim_id, (SELECT count(*) FROM claim_sources s"
            " WHERE s.claim_rowid = c.rowid) FROM claims c WHERE c.agent_id = ?",
            A,
        )
        assert sources == 3
        recall = await maintained.recall(M)
        assert _evidence(recall) == {"e1", "e2", "e3"}
        await memory.forget(A, str(claim_id))
        assert not [i for i in (await maintained.recall(M)).items if M in i.text]
        for event in ("e1", "e2", "e3"):
            await memory.forget(A, event)
        assert await maintained.plaintext_left(M[-6:], STRONG_WORD) == {}


# -- the persona rebuild against a forget ---------------------------------------------
@pytest.mark.parametrize("target", ["claim", "turn"])
async def test_a_persona_rebuild_planned_before_a_forget_never_shows_it(
    data_dir: Path, target: str
) -> None:
    """I2, I7: the persona pass plans its sections with a preference in them, and the
    preference (or the turn it came from) is forgotten before the rebuild applies: the
    rebuilt projection holds no entry for it, no recall's memory block shows it, and a
    forgotten turn's words are in no file."""
    async with maintained_memory(data_dir, "persona") as maintained:
        memory = maintained.memory
        await memory.ingest(
            A,
            [
                turn("e1", f"I love {M}.", at=OLDER),
                turn("e2", f"I love {M2}.", at=OLDER, session="s2"),
            ],
        )
        await memory.wait_idle(A)
        forgotten = (
            "e1" if target == "turn" else await maintained.claim_id(f"Ana loves {M}")
        )

        async def forget() -> None:
            await memory.forget(A, forgotten)

        await race(maintained, "persona", forget)
        shown = await maintained.rows(
            "SELECT c.text FROM projection_entries p JOIN claims c"
            " ON c.rowid = p.claim_rowid WHERE p.agent_id = ?",
            A,
        )
        assert shown == [(f"Ana loves {M2}",)]
        for query in (M, "what do I love?"):
            recall = await maintained.recall(query)
            assert M not in recall.memory_block
            assert M2 in recall.memory_block or query == M
        if target == "turn":
            assert await maintained.plaintext_left(M[-6:]) == {}
