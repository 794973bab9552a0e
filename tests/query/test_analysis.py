"""The offline query analysis (cairn.query): shape, tense, names, kinship, time anchors."""

from __future__ import annotations

import datetime as dt

import pytest

from cairn.entities.extract import kin_key
from cairn.query.analysis import analyse
from cairn.query.shape import QuestionShape, Tense

NOW = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("question", "shape"),
    [
        ("When did Ana move to Lisbon?", QuestionShape.WHEN),
        ("Ana什么时候搬家的？", QuestionShape.WHEN),
        ("Where does Ana live now?", QuestionShape.WHERE),
        ("她住在哪里？", QuestionShape.WHERE),
        ("Who supports Caroline?", QuestionShape.WHO),
        ("How many tournaments has Nate won?", QuestionShape.HOW_MANY),
        ("Nate赢了几次比赛？", QuestionShape.HOW_MANY),
        ("What activities does Melanie partake in?", QuestionShape.LIST),
        ("Melanie有哪些爱好？", QuestionShape.LIST),
        ("Why did Ana quit her job?", QuestionShape.WHY),
        ("Is Caroline religious?", QuestionShape.YES_NO),
        ("Ana喜欢咖啡吗？", QuestionShape.YES_NO),
        ("Tell me about the project.", QuestionShape.OTHER),
    ],
)
def test_the_shape_of_a_question(question: str, shape: QuestionShape) -> None:
    assert analyse(question, NOW).shape is shape


def test_current_state_and_history_questions() -> None:
    assert analyse("Where does Ana live now?", NOW).tense is Tense.CURRENT
    assert analyse("她现在在哪里工作？", NOW).tense is Tense.CURRENT
    assert analyse("Where did Ana live before the move?", NOW).tense is Tense.HISTORY
    assert analyse("她以前住在哪里？", NOW).tense is Tense.HISTORY
    assert analyse("Where does Ana live?", NOW).tense is Tense.ANY


def test_names_are_word_runs_and_chinese_substrings() -> None:
    analysis = analyse("Did Ed Sheeran play in 里斯本?", NOW)
    assert {"ed", "ed sheeran", "sheeran", "里斯本", "里斯"} <= set(analysis.names)
    assert "melanie" in analyse("What is Melanie's job?", NOW).names


def test_kinship_references_become_entity_keys() -> None:
    assert analyse("Where did Melanie's sister move?", NOW).kin_keys == (
        kin_key("Melanie", "sister"),
    )
    assert analyse("When is my mom's birthday?", NOW).kin_keys == (
        kin_key("user", "mother"),
    )
    assert analyse("我妹妹住在哪里？", NOW).kin_keys == (kin_key("user", "sister"),)
    assert analyse("王芳的妹妹住在哪里？", NOW).kin_keys == (kin_key("王芳", "sister"),)


def test_time_anchors_in_english_and_chinese() -> None:
    (summer,) = analyse("Where did I hike last summer?", NOW).anchors
    assert (summer.start, summer.end) == (
        dt.datetime(2025, 6, 1, tzinfo=dt.UTC),
        dt.datetime(2025, 9, 1, tzinfo=dt.UTC),
    )
    (chinese,) = analyse("我去年夏天去了哪里？", NOW).anchors
    assert (chinese.start, chinese.end) == (summer.start, summer.end)
    (year,) = analyse("去年我在哪里工作？", NOW).anchors
    assert (year.start, year.end) == (
        dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
        dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    )
    (month,) = analyse("What did Ana do in July 2025?", NOW).anchors
    assert month.start == dt.datetime(2025, 7, 1, tzinfo=dt.UTC)
    # In July, "last summer" is the year before's.
    (earlier,) = analyse("last summer", dt.datetime(2025, 7, 5, tzinfo=dt.UTC)).anchors
    assert earlier.start == dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
    assert analyse("What does Ana like?", NOW).anchors == ()


def test_a_category_question_expands_to_its_members() -> None:
    analysis = analyse("What activities does Melanie partake in?", NOW)
    assert {"pottery", "camping", "hiking"} <= set(analysis.expansion)
    assert "猫" in analyse("Melanie有什么宠物？", NOW).expansion
    assert analyse("Where does Ana live?", NOW).expansion == ()
