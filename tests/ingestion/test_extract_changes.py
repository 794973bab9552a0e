"""Facts that change: every phrasing of one attribute gets the same (subject, predicate),
in English and Chinese, so a later claim supersedes the earlier one (design/
knowledge_update.md). Each positive is paired with a near miss that must not claim the
attribute: a question, a hypothetical, a negation, someone else's fact."""

from __future__ import annotations

import datetime as dt

import pytest

from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.domain.evidence import Role
from cairn.domain.ids import EventId, SessionId
from cairn.ingestion.extract import ExtractionInput, RuleExtractor

WEDNESDAY = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)


def _extract(
    text: str, *, speaker: str | None = "Mei", role: Role = Role.USER
) -> list[ClaimDraft]:
    event = ExtractionInput(
        event_id=EventId("e1"),
        role=role,
        text=text,
        occurred_at=WEDNESDAY,
        speaker=speaker,
        session_id=SessionId("s1"),
    )
    return RuleExtractor().extract([event])


def _keyed(text: str, predicate: str) -> list[ClaimDraft]:
    return [draft for draft in _extract(text) if draft.predicate == predicate]


# (statement, its predicate, a word the claim keeps, a near miss without the claim)
CHANGES_EN = [
    (
        "We relocated to Porto in March.",
        "lives_in",
        "Porto",
        "If we relocated to Porto we'd be happier.",
    ),
    (
        "I moved from Berlin to Lisbon.",
        "lives_in",
        "Lisbon",
        "My sister moved from Berlin to Lisbon.",
    ),
    ("I'm based in Austin.", "lives_in", "Austin", "Are you based in Austin?"),
    ("I'm in Lisbon now.", "lives_in", "Lisbon", "I'm in Paris for a conference."),
    (
        "I've been living in Madrid for six years.",
        "lives_in",
        "Madrid",
        "My brother has been living in Madrid for six years.",
    ),
    ("I settled in Hamburg.", "lives_in", "Hamburg", "Maybe I settled in Hamburg."),
    ("I joined Stripe last week.", "works_at", "Stripe", "I joined Sarah for lunch."),
    ("I started at Shopify on Monday.", "works_at", "Shopify", "I started at 9am."),
    ("I left Google for Meta.", "works_at", "Meta", "Should I leave Google for Meta?"),
    (
        "I'm now working at Figma.",
        "works_at",
        "Figma",
        "My husband is now working at Figma.",
    ),
    (
        "I work as a data engineer at Zalando in Berlin.",
        "works_at",
        "Zalando",
        "My brother works as a data engineer at Zalando.",
    ),
    (
        "I got promoted to head nurse this spring.",
        "occupation",
        "head nurse",
        "I hope I get promoted to head nurse.",
    ),
    (
        "My new job title is staff engineer.",
        "occupation",
        "staff engineer",
        "What is my new job title?",
    ),
    (
        "I eat fish now, so I'm pescatarian rather than vegetarian.",
        "diet",
        "pescatarian",
        "My sister is pescatarian rather than vegetarian.",
    ),
    ("I'm vegan now.", "diet", "vegan", "Are you vegan now?"),
    ("My girlfriend is Anna.", "partner", "Anna", "My sister's girlfriend is Anna."),
    ("My wife's name is Sara.", "partner", "Sara", "My wife is a teacher."),
    ("I'm dating Zoe now.", "partner", "Zoe", "Are you dating Zoe now?"),
    ("I broke up with Tom.", "partner", "Tom", "I would never break up with Tom."),
    ("I switched to Neovim.", "uses:editor", "Neovim", "I didn't switch to Neovim."),
    (
        "I switched from VS Code to Neovim.",
        "uses:editor",
        "Neovim",
        "Should I switch from VS Code to Neovim?",
    ),
    ("I now use VS Code.", "uses:editor", "VS Code", "Do you use VS Code?"),
    (
        "I started using Firefox.",
        "uses:browser",
        "Firefox",
        "My dad started using Firefox.",
    ),
    (
        "I replaced my iPhone with a Pixel.",
        "uses:phone",
        "Pixel",
        "I bought my mom an iPhone.",
    ),
    ("I moved over to Helix.", "uses:editor", "Helix", "Maybe I moved over to Helix."),
    ("I got a new MacBook.", "uses:laptop", "MacBook", "I got a new haircut."),
    ("I'm using Zed now.", "uses:editor", "Zed", "Is anyone using Zed now?"),
    ("I drive a Tesla.", "uses:car", "Tesla", "I drive to work."),
    (
        "I don't use Vim anymore.",
        "uses:editor",
        "no longer",
        "I don't know Vim.",
    ),
    (
        "My favorite color is blue.",
        "favourite:colour",
        "blue",
        "What's your favorite color?",
    ),
    ("Now I prefer tea over coffee.", "favourite:drink", "tea", "Do you prefer tea?"),
    (
        "I have a dentist appointment on Tuesday.",
        "plan:dentist",
        "Tuesday",
        "Do I have a dentist appointment on Tuesday?",
    ),
    (
        "The dentist moved to Thursday.",
        "plan:dentist",
        "Thursday",
        "Did the dentist move to Thursday?",
    ),
    (
        "My interview got pushed back to next Monday.",
        "plan:interview",
        "Monday",
        "If my interview got pushed back to Monday I'd relax.",
    ),
    (
        "We moved the piano lesson to Thursday.",
        "plan:piano lesson",
        "Thursday",
        "Could we move the piano lesson to Thursday?",
    ),
    (
        "I rescheduled my haircut to Sunday.",
        "plan:haircut",
        "Sunday",
        "The release moved to Sunday.",
    ),
    (
        "The dentist moved my appointment to December 16.",
        "plan:dentist",
        "December",
        "The dentist moved his appointment to December 16.",
    ),
    (
        "The clinic moved my dentist appointment to Friday.",
        "plan:dentist",
        "Friday",
        "The clinic moved to Friday.",
    ),
    (
        "My boss moved our meeting to Friday.",
        "plan:meeting",
        "Friday",
        "My boss moved his meeting to Friday.",
    ),
    (
        "They pushed our dinner back to Saturday.",
        "plan:dinner",
        "Saturday",
        "Could they push our dinner back to Saturday?",
    ),
]

CHANGES_ZH = [
    ("我们又搬到了青岛。", "lives_in", "青岛", "如果我们搬到青岛就好了。"),
    ("我现在在杭州。", "lives_in", "杭州", "我现在在开会。"),
    ("我入职了阿里巴巴。", "works_at", "阿里巴巴", "我加入了读书会。"),
    ("我跳槽到字节跳动了。", "works_at", "字节跳动", "我要是跳槽到字节跳动就好了。"),
    ("我去美团上班了。", "works_at", "美团", "我去了北京。"),
    ("我从百度跳槽到了京东。", "works_at", "京东", "他从百度跳槽到了京东。"),
    ("我升职为产品总监了。", "occupation", "总监", "我可能会升职为产品总监。"),
    ("我男朋友是小王。", "partner", "小王", "我姐姐的男朋友是小王。"),
    ("我女朋友叫小红。", "partner", "小红", "我女朋友是老师。"),
    ("我和小美在一起了。", "partner", "小美", "你和小美在一起了吗？"),
    ("我改用Vim了。", "uses:editor", "Vim", "我应该改用Vim吗？"),
    ("我换成了安卓手机。", "uses:phone", "安卓手机", "他换成了安卓手机。"),
    ("我现在用Emacs。", "uses:editor", "Emacs", "我用手机看视频。"),
    ("我把iPhone换成了Pixel。", "uses:phone", "Pixel", "要不要把iPhone换成Pixel？"),
    ("我用的是iPhone，用了好几年了。", "uses:phone", "iPhone", "你用的是iPhone吗？"),
    ("我不用Vim了。", "uses:editor", "Vim", "我不知道Vim。"),
    (
        "我现在最喜欢的颜色是绿色。",
        "favourite:colour",
        "绿色",
        "你最喜欢的颜色是什么？",
    ),
    ("我现在更喜欢喝茶。", "favourite:drink", "茶", "你更喜欢喝茶吗？"),
    ("我周二要去看牙医。", "plan:牙医", "周二", "我周二要不要去看牙医？"),
    ("我下周一有个面试。", "plan:面试", "面试", "你下周一有面试吗？"),
    ("会议推迟到下周一。", "plan:会议", "下周一", "会议推迟到下周一了吗？"),
    ("会议推迟到下周二。", "plan:会议", "下周二", "他的会议推迟到下周二。"),
    ("我把会议改到周三了。", "plan:会议", "周三", "如果会议改到周三就好了。"),
]


@pytest.mark.parametrize(
    ("text", "predicate", "kept", "near_miss"), CHANGES_EN + CHANGES_ZH
)
def test_a_change_names_its_attribute(
    text: str, predicate: str, kept: str, near_miss: str
) -> None:
    drafts = _keyed(text, predicate)
    assert len(drafts) == 1, _extract(text)
    assert drafts[0].subject == "Mei"
    assert kept.lower() in drafts[0].text.lower()
    assert not _keyed(near_miss, predicate), _extract(near_miss)


# Phrasings of one attribute, English and Chinese, that must share one key.
SAME_ATTRIBUTE = [
    (
        "lives_in",
        [
            "I live in Berlin.",
            "I moved to Lisbon.",
            "We relocated to Porto.",
            "I'm based in Austin.",
            "I'm in Lisbon now.",
            "我住在北京。",
            "我搬到了上海。",
            "我现在住在深圳。",
            "我现在在杭州。",
        ],
    ),
    (
        "works_at",
        [
            "I work at Google.",
            "I joined Stripe.",
            "I started at Shopify.",
            "I got a job at Spotify.",
            "I left Google for Meta.",
            "我在腾讯工作。",
            "我入职了阿里巴巴。",
            "我跳槽到字节跳动了。",
        ],
    ),
    (
        "partner",
        [
            "My girlfriend is Anna.",
            "My boyfriend's name is Karim.",
            "I'm in a relationship with Maya.",
            "我男朋友是小王。",
            "我女朋友叫小红。",
            "我和小美在一起了。",
        ],
    ),
    (
        "uses:editor",
        [
            "I switched to Neovim.",
            "I now use VS Code.",
            "I started using Emacs.",
            "I replaced Vim with Helix.",
            "我改用Vim了。",
            "我现在用Emacs。",
            "我从VS Code换到了Neovim。",
        ],
    ),
    (
        "favourite:colour",
        [
            "My favourite colour is blue.",
            "My favorite color is green.",
            "我最喜欢的颜色是蓝色。",
        ],
    ),
]


@pytest.mark.parametrize(("predicate", "phrasings"), SAME_ATTRIBUTE)
def test_every_phrasing_of_an_attribute_has_one_key(
    predicate: str, phrasings: list[str]
) -> None:
    keys = {
        text: sorted({(d.subject, d.predicate) for d in _extract(text) if d.predicate})
        for text in phrasings
    }
    assert all(found == [("Mei", predicate)] for found in keys.values()), keys


def test_a_rescheduled_plan_keeps_the_key_and_takes_the_new_date() -> None:
    before = _keyed("I have a dentist appointment on Tuesday.", "plan:dentist")
    after = _keyed("The dentist moved from Tuesday to Thursday.", "plan:dentist")
    assert len(before) == len(after) == 1
    assert before[0].kind is after[0].kind is ClaimKind.PLAN
    assert after[0].temporal is not None
    assert after[0].temporal.valid_from is not None
    assert after[0].temporal.valid_from.date() == dt.date(2024, 5, 2)  # Thursday
    assert after[0].text == "Mei's dentist moved from Tuesday to Thursday"


def test_a_chinese_rescheduled_plan_reads_the_date_it_moved_to() -> None:
    (draft,) = _keyed("会议从周二改到周四。", "plan:会议")
    assert draft.temporal is not None
    assert draft.temporal.valid_from is not None
    assert draft.temporal.valid_from.date() == dt.date(2024, 5, 2)
    assert draft.text == "Mei的会议从周二改到周四"


def test_only_a_known_tool_gets_a_tool_key() -> None:
    assert [d.predicate for d in _extract("I switched to Neovim.")] == ["uses:editor"]
    assert _extract("I switched to decaf.") == []
    assert not [d for d in _extract("I use a lot of salt.") if d.predicate]


def test_no_longer_living_somewhere_is_a_change_not_a_home() -> None:
    (draft,) = _extract("I don't live in Paris anymore.")
    assert draft.predicate == "lives_in"
    assert draft.text == "Mei no longer lives in Paris"
    (zh,) = _extract("我不住在北京了。")
    assert zh.predicate == "lives_in"
    assert zh.kind is ClaimKind.STATE


@pytest.mark.parametrize(
    ("text", "predicate"),
    [
        ("I switched to Neovim.", "uses:editor"),
        ("The dentist moved to Thursday.", "plan:dentist"),
        ("我改用Vim了。", "uses:editor"),
    ],
)
def test_the_user_saying_it_makes_the_claim_the_assistant_saying_it_does_not(
    text: str, predicate: str
) -> None:
    assert [d.predicate for d in _extract(text)] == [predicate]
    assert _extract(text, role=Role.ASSISTANT) == []


def test_without_a_speaker_the_subject_is_the_user() -> None:
    (draft,) = _extract("I switched to Neovim.", speaker=None)
    assert (draft.subject, draft.predicate) == ("user", "uses:editor")
    (zh,) = _extract("我改用Vim了。", speaker=None)
    assert (zh.subject, zh.predicate) == ("user", "uses:editor")


@pytest.mark.parametrize(
    "text",
    ["我周五下午要去看牙医。", "周五下午我要去看牙医。", "我周五晚上八点要去看牙医。"],
)
def test_a_part_of_the_day_after_a_day_keeps_the_plan(text: str) -> None:
    """周五下午 is a day and its afternoon: the plan after it is still read."""
    (draft,) = _keyed(text, "plan:牙医")
    assert draft.kind is ClaimKind.PLAN
    assert draft.temporal is not None
    assert draft.temporal.valid_from is not None
    assert draft.temporal.valid_from.date() == dt.date(2024, 5, 3)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("我养了一只猫，叫豆豆。", "豆豆"),
        ("我有一只狗叫旺财。", "旺财"),
        ("我有一个妹妹，她叫小红。", "小红"),
    ],
)
def test_a_pet_or_relative_named_after_a_comma_keeps_the_name(
    text: str, named: str
) -> None:
    # The comma before 叫 does not cut the clause: the name is the claim's, and
    # "叫豆豆" is not read as the user's own name.
    (draft,) = _extract(text)
    assert draft.predicate is not None
    assert draft.predicate.startswith("has:")
    assert named in draft.text
