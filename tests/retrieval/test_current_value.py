"""The current value first: a question about something that changed returns what holds
now (or at ``as_of``) above what it replaced, and history says it is history."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn import Memory
from cairn.errors import InvalidInputError
from cairn.testing import FixedDomainClock

MARCH = dt.datetime(2026, 3, 2, 9, tzinfo=dt.UTC)
APRIL = dt.datetime(2026, 4, 20, 18, tzinfo=dt.UTC)
# The demo's conversation, in short: a move from Shanghai to Berlin.
TURNS = [
    turn(
        "d1",
        "Hi! I live in Shanghai and I work as a product designer.",
        speaker="Mei",
        at=MARCH,
    ),
    turn(
        "d2",
        "Nice to meet you, Mei. How can I help today?",
        role="assistant",
        speaker=None,
        at=MARCH + dt.timedelta(seconds=5),
    ),
    turn(
        "d3",
        "I love oolong tea, but I can't stand coffee.",
        speaker="Mei",
        at=MARCH + dt.timedelta(minutes=1),
    ),
    turn(
        "d6",
        "Big news: I moved to Berlin last week.",
        session="s2",
        speaker="Mei",
        at=APRIL,
    ),
]


@pytest.fixture
async def mei(tmp_path: Path) -> AsyncIterator[Memory]:
    clock = FixedDomainClock(dt.datetime(2026, 6, 1, 9, tzinfo=dt.UTC))
    async with open_test_memory(tmp_path / "data", clock=clock) as memory:
        await memory.ingest("a", TURNS)
        await memory.wait_idle("a")
        yield memory


async def test_where_does_she_live_now_answers_the_new_city(mei: Memory) -> None:
    recall = await mei.recall("a", "Where does Mei live now?")
    first = recall.items[0]
    assert "Berlin" in first.text
    assert first.standing == "current"
    shanghai = [item for item in recall.items if "Shanghai" in item.text]
    assert shanghai, "the old value still answers 'where did she live before?'"
    for item in shanghai:
        assert item.standing == "history"
        assert item.valid_until is not None
        assert item.valid_until.startswith("2026-04-13")  # "moved … last week"
    berlin_rank = min(i for i, item in enumerate(recall.items) if "Berlin" in item.text)
    assert all(recall.items.index(item) > berlin_rank for item in shanghai)
    # The model reads the same marks in the block.
    assert "previously, until 2026-04-13] Mei lives in Shanghai" in recall.memory_block
    assert "current" in recall.memory_block.split("Berlin")[0].rsplit("\n", 1)[-1]


async def test_a_turn_stating_an_old_value_is_marked_partly_superseded(
    mei: Memory,
) -> None:
    recall = await mei.recall("a", "Shanghai product designer", k=20)
    (turn_item,) = [item for item in recall.items if item.id == "d1"]
    assert turn_item.standing == "history"
    assert turn_item.qualifier == "partly superseded on 2026-04-13"
    # What it still says truly ranks as current, on its own.
    (job,) = [
        item
        for item in recall.items
        if "product designer" in item.text and item.kind != "evidence"
    ]
    assert job.standing == "current"


async def test_as_of_answers_what_held_then(mei: Memory) -> None:
    recall = await mei.recall(
        "a", "Where does Mei live?", as_of=dt.datetime(2026, 3, 15, tzinfo=dt.UTC)
    )
    assert "Shanghai" in recall.items[0].text
    assert recall.items[0].standing == "current"
    # The move was said after that moment: neither the turn nor its claim exists then.
    assert not [item for item in recall.items if "Berlin" in item.text]
    later = await mei.recall(
        "a", "Where does Mei live?", as_of=dt.datetime(2026, 5, 1, tzinfo=dt.UTC)
    )
    assert "Berlin" in later.items[0].text


async def test_as_of_must_be_timezone_aware(mei: Memory) -> None:
    with pytest.raises(InvalidInputError, match="timezone-aware"):
        await mei.recall("a", "Where does Mei live?", as_of=dt.datetime(2026, 3, 15))  # noqa: DTZ001 - the point


async def test_items_say_where_they_come_from(mei: Memory) -> None:
    await mei.remember("a", "Mei's sister is called Lan", by="user")
    await mei.remember("a", "Mei seems to prefer short answers", by="model")
    recall = await mei.recall("a", "Mei sister Lan short answers help", k=20)
    origins = {item.text: item.origin for item in recall.items}
    assert origins["Mei's sister is called Lan"] == "remembered_by_user"
    assert origins["Mei seems to prefer short answers"] == "remembered_by_model"
    assert origins["Nice to meet you, Mei. How can I help today?"] == "assistant_said"
    assert ("evidence", "user_said") in {
        (i.kind, i.origin) for i in (await mei.recall("a", "oolong tea")).items
    }
    assert all(item.lifecycle for item in recall.items if item.kind != "evidence")
    assert "user asked to remember] Mei's sister is called Lan" in recall.memory_block
    assert "noted by a model] Mei seems to prefer short answers" in recall.memory_block
