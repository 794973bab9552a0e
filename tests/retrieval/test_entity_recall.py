"""Recall through the query analysis: entity-centred lists, the off-focus weight, time
windows (cairn.retrieval.entity_lists). Each test also recalls with the analysis's lists
and weights switched off, and shows that the answer is then missed."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import attrs
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import BASE_TIME, turn

from cairn import MemoryConfig, Turn
from cairn.testing import FixedDomainClock

WITHOUT_ANALYSIS = attrs.evolve(
    TEST_CONFIG,
    weight_entity_lexical=0.0,
    weight_entity_vector=0.0,
    weight_entity_mention=0.0,
    weight_entity_graph=0.0,
    weight_current_state=0.0,
    weight_time_window=0.0,
    off_focus_weight=1.0,
)


def _at(days: int) -> dt.datetime:
    return BASE_TIME + dt.timedelta(days=days)


def _conversation(name: str = "Ana", called: str = "Ana") -> list[Turn]:
    """``name``'s hobbies, one per session, among Bo's turns that call her ``called``
    and use the question's own words."""
    turns: list[Turn] = []
    sessions = [
        (
            "I signed up for a pottery class yesterday.",
            f"{called}, which activities do you enjoy most?",
        ),
        (
            "We went camping by the lake with the kids.",
            f"{called}, I enjoy activities like chess, what about you?",
        ),
        (
            "I swim laps every morning before work.",
            f"{called}, do you enjoy outdoor activities in winter?",
        ),
    ]
    for number, (ana, bo) in enumerate(sessions, start=1):
        session = f"s{number}"
        day = 10 * number
        turns += [
            turn(f"{session}-bo", bo, session=session, speaker="Bo", at=_at(day)),
            turn(f"{session}-ana", ana, session=session, speaker=name, at=_at(day)),
            turn(
                f"{session}-bo2",
                f"Thanks for telling me, {called}! I enjoy hearing about it.",
                session=session,
                speaker="Bo",
                at=_at(day),
            ),
        ]
    return turns


async def _top(
    data_dir: Path, config: MemoryConfig, turns: list[Turn], question: str, k: int
) -> list[str]:
    async with open_test_memory(
        data_dir, config, clock=FixedDomainClock(_at(60))
    ) as memory:
        await memory.ingest("a", turns)
        await memory.wait_idle("a")
        recall = await memory.recall("a", question, k=10)
    refs = dict.fromkeys(ref for item in recall.items for ref in item.source_refs)
    return list(refs)[:k]


ANSWERS = {"s1-ana", "s2-ana", "s3-ana"}


async def test_an_entity_question_is_answered_from_three_sessions(
    tmp_path: Path,
) -> None:
    question = "What activities does Ana enjoy?"
    found = await _top(tmp_path / "on", TEST_CONFIG, _conversation(), question, 3)
    assert set(found) == ANSWERS
    # Without the analysis the turns calling her by name, with the question's words, win.
    missed = await _top(
        tmp_path / "off", WITHOUT_ANALYSIS, _conversation(), question, 3
    )
    assert set(missed) != ANSWERS


async def test_a_nickname_in_the_question_finds_her_turns(tmp_path: Path) -> None:
    # Bo only ever calls her Mel: the name is hers because it begins hers.
    turns = _conversation(name="Melanie", called="Mel")
    question = "What activities does Mel enjoy?"
    assert set(await _top(tmp_path / "on", TEST_CONFIG, turns, question, 3)) == ANSWERS
    missed = await _top(tmp_path / "off", WITHOUT_ANALYSIS, turns, question, 3)
    assert set(missed) != ANSWERS


async def test_a_chinese_question_finds_an_english_turn_through_the_place(
    tmp_path: Path,
) -> None:
    turns = [
        turn("t1", "I spent a week in Lisbon in March.", speaker="Ana", at=_at(1)),
        *(
            turn(
                f"n{i}",
                f"Ana, tell me more about the weather {i}.",
                speaker="Bo",
                at=_at(2),
            )
            for i in range(8)
        ),
    ]
    question = "谁去过里斯本？"
    assert (await _top(tmp_path / "on", TEST_CONFIG, turns, question, 1)) == ["t1"]
    assert "t1" not in await _top(
        tmp_path / "off", WITHOUT_ANALYSIS, turns, question, 1
    )


async def test_a_time_anchored_question_reads_its_window(tmp_path: Path) -> None:
    now = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
    turns = [
        turn(
            "summer",
            "We hiked in the Alps.",
            at=dt.datetime(2025, 7, 12, tzinfo=dt.UTC),
        ),
        turn("spring", "We hiked in Wales.", at=dt.datetime(2025, 4, 2, tzinfo=dt.UTC)),
        turn(
            "winter", "We hiked in Norway.", at=dt.datetime(2025, 12, 20, tzinfo=dt.UTC)
        ),
    ]
    question = "Where did we hike last summer?"

    async def first(directory: Path, config: MemoryConfig) -> str:
        async with open_test_memory(
            directory, config, clock=FixedDomainClock(now)
        ) as memory:
            await memory.ingest("a", turns)
            await memory.wait_idle("a")
            recall = await memory.recall("a", question, k=3)
        return recall.items[0].source_refs[0]

    assert await first(tmp_path / "on", TEST_CONFIG) == "summer"
    assert await first(tmp_path / "off", WITHOUT_ANALYSIS) != "summer"


async def test_a_chinese_question_naming_the_user_answers_the_changed_fact_first(
    tmp_path: Path,
) -> None:
    # The user is named in the question and speaks every user turn, so the entity lists
    # find all of her turns: the one after the assistant's word for the computer, and
    # those asking "什么" too, must not rank above the claim of what she uses now.
    def said(number: int, text: str, day: int, role: str = "user") -> Turn:
        speaker = "罗敏" if role == "user" else None
        at = _at(day) + dt.timedelta(minutes=number)
        return turn(f"t{number}", text, role=role, speaker=speaker, at=at)

    turns = [
        said(1, "阳台上的绿萝叶子发黄了怎么办？", 1),
        said(2, "可能是浇水太多了，等土表面干了再浇。", 1, "assistant"),
        said(3, "我用ThinkPad办公。", 1),
        said(4, "那款电脑的键盘很好。", 1, "assistant"),
        said(5, "同事要离职了，送什么礼物好？", 1),
        said(6, "一本好看的笔记本或者一盆小绿植都很合适。", 1, "assistant"),
        said(7, "脖子很僵硬，有什么拉伸动作？", 30),
        said(8, "慢慢把头向一侧肩膀倾斜，保持二十秒。", 30, "assistant"),
        said(9, "我换了一台MacBook，续航特别好。", 30),
        said(10, "M系列芯片续航确实强。", 30, "assistant"),
    ]
    async with open_test_memory(
        tmp_path / "data", TEST_CONFIG, clock=FixedDomainClock(_at(60))
    ) as memory:
        await memory.ingest("a", turns)
        await memory.wait_idle("a")
        recall = await memory.recall("a", "罗敏用什么电脑？", k=10)
    assert "MacBook" in recall.items[0].text


def _neighbours(speaker: str, place: str) -> list[Turn]:
    """Lin Wei's move among two others', in the language of ``place``'s turns."""
    chinese = not place.isascii()
    said = {
        "Mei": "我住在乌得勒支。" if chinese else "I live in Utrecht.",
        "Bo": "我住在代尔夫特。" if chinese else "I live in Delft.",
        speaker: place,
    }
    return [
        turn(f"t-{index}", text, speaker=who, at=_at(index + 1))
        for index, (who, text) in enumerate(said.items())
    ]


async def test_a_question_finds_a_person_by_the_name_in_the_other_script(
    tmp_path: Path,
) -> None:
    # No turn gives both forms of the name: 林伟 is Lin Wei by its pinyin.
    english = _neighbours("Lin Wei", "I moved to Rotterdam last spring.")
    question = "林伟住在哪里？"
    assert await _top(tmp_path / "en-on", TEST_CONFIG, english, question, 1) == ["t-2"]
    assert await _top(tmp_path / "en-off", WITHOUT_ANALYSIS, english, question, 1) != [
        "t-2"
    ]
    chinese = _neighbours("林伟", "我去年春天搬到了鹿特丹。")
    question = "Where does Lin Wei live?"
    assert await _top(tmp_path / "zh-on", TEST_CONFIG, chinese, question, 1) == ["t-2"]
    assert await _top(tmp_path / "zh-off", WITHOUT_ANALYSIS, chinese, question, 1) != [
        "t-2"
    ]
