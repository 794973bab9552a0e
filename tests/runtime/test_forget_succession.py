"""Forgetting the value that replaced another: the value before it holds again, as if the
forgotten one had never been said (no "previously, until" the time of a forgotten
statement)."""

from __future__ import annotations

import datetime as dt

import pytest
from tests.helpers import BASE_TIME, turn

from cairn import Memory
from cairn.testing import FixedDomainClock

LATER = BASE_TIME + dt.timedelta(days=3)


async def _moved(memory: Memory, clock: FixedDomainClock) -> tuple[str, str]:
    clock.moment = LATER + dt.timedelta(days=30)  # both statements are in the past
    await memory.ingest(
        "a",
        [
            turn("t1", "I live in Porto."),
            turn("t2", "I moved to Lyon.", at=LATER),
        ],
    )
    await memory.wait_idle("a")
    recall = await memory.recall("a", "Lyon")
    (claim,) = [i for i in recall.items if i.kind != "evidence" and "Lyon" in i.text]
    return claim.id, "t2"


@pytest.mark.parametrize("what", ["claim", "turn"])
async def test_forgetting_the_new_value_makes_the_old_one_current_again(
    memory: Memory, clock: FixedDomainClock, what: str
) -> None:
    claim_id, turn_id = await _moved(memory, clock)
    await memory.forget("a", claim_id if what == "claim" else turn_id)
    recall = await memory.recall("a", "Where does Ana live now?")
    porto = [item for item in recall.items if "Porto" in item.text]
    assert porto
    assert not [item for item in recall.items if "Lyon" in item.text]
    for item in porto:
        assert item.standing == "current", item
        assert item.valid_until is None, item
        assert item.qualifier is None, item
    assert "previously" not in recall.memory_block


async def test_an_edit_that_takes_back_the_new_value_makes_the_old_one_current(
    memory: Memory, clock: FixedDomainClock
) -> None:
    await _moved(memory, clock)
    await memory.ingest_event(
        "a", turn("t3", "I enjoy reading novels.", at=LATER, replaces="t2")
    )
    await memory.wait_idle("a")
    recall = await memory.recall("a", "Where does Ana live now?")
    porto = [item for item in recall.items if "Porto" in item.text]
    assert porto
    assert all(item.standing == "current" for item in porto), porto
