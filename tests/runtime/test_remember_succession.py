"""A remembered value joins its attribute's succession: "I now live in Lisbon" said to
``remember`` supersedes "Mara lives in Porto" learned from her turns, and is history once
a later turn says otherwise (cairn.runtime.lifecycle, cairn.store.succession)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from tests.conftest import open_test_memory
from tests.helpers import BASE_TIME, turn

from cairn import Memory
from cairn.testing import FixedDomainClock


async def _standing(memory: Memory, agent: str, question: str) -> list[tuple[str, str]]:
    recall = await memory.recall(agent, question, k=10)
    return [
        (item.text, str(item.standing))
        for item in recall.items
        if item.kind != "evidence"
    ]


async def test_a_remembered_value_supersedes_the_one_learned_from_turns(
    tmp_path: Path,
) -> None:
    clock = FixedDomainClock(BASE_TIME + dt.timedelta(days=30))
    async with open_test_memory(tmp_path / "data", clock=clock) as memory:
        await memory.ingest("a", [turn("t1", "I live in Porto.", speaker="Mara")])
        await memory.wait_idle("a")
        stored = await memory.remember("a", "I now live in Lisbon.", by="user")
        await memory.wait_idle("a")
        claims = await _standing(memory, "a", "Where does Mara live?")
        assert claims[0] == ("I now live in Lisbon.", "current")
        assert ("Mara lives in Porto", "history") in claims
        # A later turn moves her again: the remembered value is history in turn.
        clock.advance(dt.timedelta(days=30))
        await memory.ingest(
            "a",
            [
                turn(
                    "t2",
                    "I moved to Madrid.",
                    speaker="Mara",
                    at=BASE_TIME + dt.timedelta(days=59),
                )
            ],
        )
        await memory.wait_idle("a")
        claims = await _standing(memory, "a", "Where does Mara live?")
        assert claims[0][1] == "current"
        assert "Madrid" in claims[0][0]
        assert ("I now live in Lisbon.", "history") in claims
        assert stored.claim_id


async def test_with_two_named_users_a_remembered_i_stays_the_user(
    tmp_path: Path,
) -> None:
    # Whose "I" it is cannot be told: the value keeps the speakerless subject and
    # supersedes neither person's.
    clock = FixedDomainClock(BASE_TIME + dt.timedelta(days=30))
    async with open_test_memory(tmp_path / "data", clock=clock) as memory:
        await memory.ingest(
            "a",
            [
                turn("t1", "I live in Porto.", speaker="Mara"),
                turn("t2", "I live in Oslo.", speaker="Jon"),
            ],
        )
        await memory.wait_idle("a")
        await memory.remember("a", "I now live in Lisbon.", by="user")
        await memory.wait_idle("a")
        claims = dict(await _standing(memory, "a", "Where does Mara live?"))
        assert claims.get("Mara lives in Porto") == "current"
