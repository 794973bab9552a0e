"""The attribute a question asks for, and the value that settles it ranking first."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import turn

from cairn import Memory, MemoryConfig
from cairn.retrieval.attributes import AskedQuestion


@pytest.mark.parametrize(
    ("question", "predicate"),
    [
        ("Where does Ravi live now?", "lives_in"),
        ("Which city is Ana living in?", "lives_in"),
        ("梅现在住在哪里？", "lives_in"),
        ("Where does Kenji work?", "works_at"),
        ("赵磊是做什么工作的？", "occupation"),
        ("Who is Sam's girlfriend?", "partner"),
        ("他女朋友是谁？", "partner"),
        ("Which editor does Ravi use?", "uses:editor"),
        ("杨帆用什么编辑器？", "uses:editor"),
        ("马超开什么车？", "uses:car"),
        ("What is Mei's favourite colour?", "favourite:colour"),
        ("宋雨最喜欢什么颜色？", "favourite:colour"),
        ("When is the dentist?", "plan:dentist"),
        ("梅什么时候看牙医？", "plan:牙医"),
    ],
)
def test_a_question_asks_for_its_attribute(question: str, predicate: str) -> None:
    assert AskedQuestion.of(question).asks_for(predicate)


@pytest.mark.parametrize(
    ("question", "predicate"),
    [
        ("What does Ravi like to eat?", "lives_in"),
        ("Which phone does Mei have?", "uses:editor"),
        ("What colour is the car?", "favourite:colour"),  # not a favourite
        ("When is the dentist?", "allergic_to:peanuts"),  # not a keyed attribute
        ("Tell me about octopuses", "partner"),
    ],
)
def test_other_questions_ask_for_nothing_of_it(question: str, predicate: str) -> None:
    assert not AskedQuestion.of(question).asks_for(predicate)


NOISE = [
    "How do I keep basil alive on a windowsill?",
    "What is a good stretch for a stiff neck?",
    "Can you explain what a Roth IRA is in one sentence?",
    "Give me a fun fact about octopuses.",
]


@contextlib.asynccontextmanager
async def _ravi(path: Path, config: MemoryConfig) -> AsyncIterator[Memory]:
    start = dt.datetime(2025, 3, 1, 9, tzinfo=dt.UTC)
    turns = [
        turn(f"n{i}", text, speaker="Ravi", at=start + dt.timedelta(minutes=i))
        for i, text in enumerate(NOISE)
    ]
    turns.append(
        turn(
            "move",
            "We relocated to Denver in March for my wife's new job.",
            speaker="Ravi",
            at=start + dt.timedelta(minutes=10),
        )
    )
    async with open_test_memory(path, config) as memory:
        await memory.ingest("a", turns)
        await memory.wait_idle("a")
        yield memory


async def test_the_value_of_the_asked_attribute_ranks_first(tmp_path: Path) -> None:
    """Every turn carries the name; only the claim says it settles where he lives."""
    async with _ravi(tmp_path / "data", TEST_CONFIG) as memory:
        recall = await memory.recall("a", "Where does Ravi live now?")
        assert "Denver" in recall.items[0].text
        assert recall.items[0].kind != "evidence"


def test_the_list_holds_current_values_subject_first() -> None:
    """Only values holding at the moment; the asked subject's before another's."""
    from tests.retrieval.test_rank_succession import MOVED, NOW, _moved

    from cairn.retrieval.attributes import ATTRIBUTE_LIST, with_attribute_list

    candidates = _moved()  # c1 Shanghai (superseded at MOVED), c2 Berlin (current)
    now = with_attribute_list(
        candidates, AskedQuestion.of("Where does Mei live?"), NOW, as_of=False
    )
    assert [key.rowid for key in now.lists[ATTRIBUTE_LIST]] == [2]
    before = with_attribute_list(
        candidates,
        AskedQuestion.of("Where does Mei live?"),
        MOVED - dt.timedelta(days=1),
        as_of=True,
    )
    assert [key.rowid for key in before.lists[ATTRIBUTE_LIST]] == [1]
    unasked = with_attribute_list(
        candidates, AskedQuestion.of("What does Mei drink?"), NOW, as_of=False
    )
    assert ATTRIBUTE_LIST not in unasked.lists
