"""Rule extractor: every draft cites a verbatim span of user text; only user turns are read;
questions, hypotheticals, hedges and reported speech yield nothing; the claim names the
speaker (or "user") and keeps the key words; plans, events and changes carry the time of
their own evidence; state claims carry a (subject, predicate) a later claim can supersede."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.domain.evidence import Role
from cairn.domain.ids import EventId, SessionId
from cairn.domain.temporal import TimePrecision
from cairn.ingestion.extract import ExtractionInput, RuleExtractor

WEDNESDAY = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)


def _event(
    text: str,
    *,
    speaker: str | None = "Caroline",
    role: Role = Role.USER,
    at: dt.datetime = WEDNESDAY,
    event_id: str = "e1",
) -> ExtractionInput:
    return ExtractionInput(
        event_id=EventId(event_id),
        role=role,
        text=text,
        occurred_at=at,
        speaker=speaker,
        session_id=SessionId("s1"),
    )


def _extract(
    text: str,
    timezone: str = "UTC",
    *,
    speaker: str | None = "Caroline",
    role: Role = Role.USER,
    at: dt.datetime = WEDNESDAY,
) -> list[ClaimDraft]:
    event = _event(text, speaker=speaker, role=role, at=at)
    return RuleExtractor().extract([event], timezone)


def _one(
    text: str,
    timezone: str = "UTC",
    *,
    speaker: str | None = "Caroline",
    at: dt.datetime = WEDNESDAY,
) -> ClaimDraft:
    drafts = _extract(text, timezone, speaker=speaker, at=at)
    assert len(drafts) == 1, drafts
    return drafts[0]


def _from(draft: ClaimDraft) -> str:
    assert draft.temporal is not None
    assert draft.temporal.valid_from is not None
    return draft.temporal.valid_from.date().isoformat()


@pytest.mark.parametrize(
    ("text", "kind", "claim"),
    [
        (
            "I love painting sunsets.",
            ClaimKind.PREFERENCE,
            "Caroline loves painting sunsets",
        ),
        ("I really enjoy jazz", ClaimKind.PREFERENCE, "Caroline really enjoys jazz"),
        (
            "I don't like horror movies.",
            ClaimKind.PREFERENCE,
            "Caroline doesn't like horror movies",
        ),
        (
            "I hate waiting in lines!",
            ClaimKind.PREFERENCE,
            "Caroline hates waiting in lines",
        ),
        (
            "I'm a big fan of Studio Ghibli.",
            ClaimKind.PREFERENCE,
            "Caroline is a big fan of Studio Ghibli",
        ),
        (
            "My favourite food is sushi.",
            ClaimKind.PREFERENCE,
            "Caroline's favourite food is sushi",
        ),
        ("My name is Caroline.", ClaimKind.FACT, "Caroline's name is Caroline"),
        (
            "I'm a software engineer at Google.",
            ClaimKind.FACT,
            "Caroline is a software engineer at Google",
        ),
        ("I live in Berlin.", ClaimKind.FACT, "Caroline lives in Berlin"),
        ("I work at a hospital.", ClaimKind.FACT, "Caroline works at a hospital"),
        ("I work as a nurse.", ClaimKind.FACT, "Caroline works as a nurse"),
        ("I have a dog named Rex.", ClaimKind.FACT, "Caroline has a dog named Rex"),
        (
            "My sister's name is Anna.",
            ClaimKind.FACT,
            "Caroline's sister's name is Anna",
        ),
        ("I'm 32 years old.", ClaimKind.FACT, "Caroline is 32 years old"),
        ("I'm allergic to peanuts.", ClaimKind.FACT, "Caroline is allergic to peanuts"),
        ("I'm from Toronto.", ClaimKind.FACT, "Caroline is from Toronto"),
        ("I no longer eat meat.", ClaimKind.STATE, "Caroline no longer eats meat"),
        (
            "I don't live in Paris anymore.",
            ClaimKind.STATE,
            "Caroline no longer lives in Paris",
        ),
        (
            "I live in Vancouver now.",
            ClaimKind.STATE,
            "Caroline lives in Vancouver now",
        ),
    ],
)
def test_english_statements(text: str, kind: ClaimKind, claim: str) -> None:
    draft = _one(text)
    assert (draft.kind, draft.text) == (kind, claim)
    assert draft.subject == "Caroline"


@pytest.mark.parametrize(
    ("text", "kind", "claim"),
    [
        ("我喜欢喝绿茶。", ClaimKind.PREFERENCE, "小明喜欢喝绿茶"),
        ("我不喜欢吃辣。", ClaimKind.PREFERENCE, "小明不喜欢吃辣"),
        ("我最喜欢的水果是芒果。", ClaimKind.PREFERENCE, "小明最喜欢的水果是芒果"),
        ("我对摄影很感兴趣。", ClaimKind.PREFERENCE, "小明对摄影很感兴趣"),
        ("我叫李明。", ClaimKind.FACT, "小明叫李明"),
        ("我是一名护士。", ClaimKind.FACT, "小明是一名护士"),
        ("我住在上海。", ClaimKind.FACT, "小明住在上海"),
        ("我在腾讯工作。", ClaimKind.FACT, "小明在腾讯工作"),
        ("我有一只猫叫咪咪。", ClaimKind.FACT, "小明有一只猫叫咪咪"),
        ("我今年30岁。", ClaimKind.FACT, "小明今年30岁"),
        ("我妈妈叫王芳。", ClaimKind.FACT, "小明妈妈叫王芳"),
        ("我是北京人。", ClaimKind.FACT, "小明是北京人"),
        ("我现在住在北京。", ClaimKind.STATE, "小明现在住在北京"),
        ("我不再吃肉了。", ClaimKind.STATE, "小明不再吃肉了"),
    ],
)
def test_chinese_statements_substitute_the_speaker(
    text: str, kind: ClaimKind, claim: str
) -> None:
    draft = _one(text, speaker="小明")
    assert (draft.kind, draft.text) == (kind, claim)
    assert draft.subject == "小明"


def test_unknown_speaker_is_the_user() -> None:
    english = _one("I love jazz.", speaker=None)
    assert (english.subject, english.text) == ("user", "The user loves jazz")
    chinese = _one("我喜欢爵士乐。", speaker="  ")
    assert (chinese.subject, chinese.text) == ("user", "用户喜欢爵士乐")


def test_rewrite_keeps_possessives_readable() -> None:
    draft = _one("I'm going to visit my parents next week.")
    assert draft.text == "Caroline is going to visit Caroline's parents next week"


def test_unsafe_rewrite_falls_back_to_quoting() -> None:
    draft = _one("We're going to throw our own party tomorrow.")
    assert (
        draft.text == "Caroline and others are going to throw their own party tomorrow"
    )
    quoted = _one("I'm going to tell my boss we need help next week.")
    assert quoted.text == "Caroline: I'm going to tell my boss we need help next week"


@pytest.mark.parametrize(
    ("text", "start", "precision"),
    [
        (
            "I'm going to visit my grandmother next week.",
            "2024-05-06",
            TimePrecision.WEEK,
        ),
        ("Tomorrow I'm flying to Tokyo.", "2024-05-02", TimePrecision.DAY),
        ("I'll pick up the kids on Friday.", "2024-05-03", TimePrecision.DAY),
        ("I'm planning to run a marathon in June.", "2024-06-01", TimePrecision.MONTH),
        (
            "I have a dentist appointment the day after tomorrow.",
            "2024-05-03",
            TimePrecision.DAY,
        ),
        ("We're going to the beach this weekend.", "2024-05-04", TimePrecision.DAY),
        ("On 2024-06-15 I'm getting married!", "2024-06-15", TimePrecision.DAY),
        ("我下周三要去北京出差。", "2024-05-08", TimePrecision.DAY),
        ("明天我打算去爬山。", "2024-05-02", TimePrecision.DAY),
        ("我们下个月去日本旅游。", "2024-06-01", TimePrecision.MONTH),
        ("我三天后要考试。", "2024-05-04", TimePrecision.DAY),
    ],
)
def test_plans_carry_their_time(
    text: str, start: str, precision: TimePrecision
) -> None:
    draft = _one(text)
    assert draft.kind is ClaimKind.PLAN
    assert _from(draft) == start
    assert draft.temporal is not None
    assert draft.temporal.precision is precision
    assert draft.confidence == pytest.approx(0.8)


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("I went to a support group yesterday.", "2024-04-30"),
        ("I visited the Louvre 3 days ago.", "2024-04-28"),
        ("Last week I visited my parents in Ohio.", "2024-04-22"),
        (
            "I adopted a kitten on Monday!",
            "2024-04-29",
        ),  # a past tense reads "on" backwards
        ("我昨天去了北京。", "2024-04-30"),
        ("我上周开始学吉他。", "2024-04-22"),
        ("上周六我和老公去了迪士尼。", "2024-04-27"),
    ],
)
def test_past_events_carry_their_time(text: str, start: str) -> None:
    draft = _one(text)
    assert draft.kind is ClaimKind.EVENT
    assert _from(draft) == start


@pytest.mark.parametrize(
    "text",
    [
        "I'm going to Paris.",  # a plan needs a time
        "I went to a concert.",  # an event needs a date
        "I went to a concert tomorrow.",  # and a past one
        "I'll visit Rome yesterday.",
        "我要去北京。",
    ],
)
def test_undated_or_contradictory_plans_and_events_yield_nothing(text: str) -> None:
    assert _extract(text) == []


def test_time_is_resolved_against_the_evidence_not_now() -> None:
    earlier = dt.datetime(2019, 7, 4, 9, 0, tzinfo=dt.UTC)
    assert _from(_one("I'm flying to Lisbon tomorrow.", at=earlier)) == "2019-07-05"


def test_time_is_counted_in_the_given_zone() -> None:
    evening_utc = dt.datetime(
        2024, 5, 1, 20, 0, tzinfo=dt.UTC
    )  # 2 May, 04:00 in Shanghai
    draft = _one("明天我要去上海。", timezone="Asia/Shanghai", at=evening_utc)
    assert draft.temporal is not None
    assert draft.temporal.timezone == "Asia/Shanghai"
    assert draft.temporal.valid_from == dt.datetime(2024, 5, 2, 16, 0, tzinfo=dt.UTC)


def test_state_changes_share_a_predicate_and_stay_open_ended() -> None:
    lives = _one("I live in Paris.")
    moved = _one("I moved to Berlin last month.")
    chinese = _one("我上个月搬到了深圳。")
    assert (lives.subject, lives.predicate) == ("Caroline", "lives_in")
    assert (moved.kind, moved.subject, moved.predicate) == (
        ClaimKind.STATE,
        "Caroline",
        "lives_in",
    )
    assert _from(moved) == "2024-04-01"
    assert moved.temporal is not None
    assert moved.temporal.valid_until is None
    assert (chinese.kind, chinese.predicate) == (ClaimKind.STATE, "lives_in")


def test_a_planned_move_does_not_supersede_where_one_lives() -> None:
    draft = _one("我下个月搬到杭州。")
    assert draft.kind is ClaimKind.PLAN
    assert draft.predicate is None


@pytest.mark.parametrize(
    "text",
    [
        "Please remember that my son is allergic to peanuts.",
        "Remember: I take my coffee black.",
        "Don't forget that I'm vegetarian.",
        "请记住，我对花生过敏。",
        "记住我女儿的生日是六月一号。",
    ],
)
def test_explicit_remember_requests(text: str) -> None:
    draft = _one(text)
    assert draft.kind is ClaimKind.FACT
    assert draft.confidence == pytest.approx(0.95)
    assert "remember" in draft.text or "记住" in draft.text


def test_remember_survives_a_conditional() -> None:
    draft = _one("Remember that if I ask for coffee, I mean decaf.")
    assert "decaf" in draft.text


@pytest.mark.parametrize(
    "text",
    [
        "Do you like jazz?",
        "Do you think I love jazz",
        "What do you think I should cook tonight?",
        "If I had more time, I would learn the piano.",
        "I'd love to visit Iceland someday.",
        "I might go to the beach tomorrow.",
        "I'm not sure whether I like sushi.",
        "I think I'll go to Paris next week.",
        "I'm not going to Paris next week.",
        "I will never go back there next year.",
        "Imagine if I lived in Paris!",
        "Can you remember that I'm vegan?",
        "Remember when we went to Rome?",
        "I love it.",
        "I'll do it tomorrow.",
        "你喜欢绿茶吗？",
        "你喜不喜欢绿茶",
        "我喜欢什么？",
        "如果明天下雨，我就不去跑步了。",
        "要是我有时间，我会去学画画。",
        "我觉得我可能会喜欢这本书。",
        "我希望明年能去欧洲旅行。",
        "我爱你。",
        "我叫了外卖。",
    ],
)
def test_questions_and_hypotheticals_yield_nothing(text: str) -> None:
    assert _extract(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "My friend loves skiing.",
        "She said I love cats.",
        "She told me she is moving to Seattle next month.",
        "My mom is going to Paris next week.",
        "我朋友特别喜欢打篮球。",
        "他说他下周要搬家。",
        "小王说我喜欢猫。",
    ],
)
def test_other_peoples_statements_are_not_the_speakers(text: str) -> None:
    assert _extract(text) == []


@pytest.mark.parametrize("role", [Role.ASSISTANT, Role.TOOL, Role.EVENT])
def test_only_user_turns_are_read(role: Role) -> None:
    text = "I love hiking. Remember that I live in Paris. 我喜欢喝绿茶。"
    assert len(_extract(text)) == 3
    assert _extract(text, role=role) == []


def test_multi_sentence_turns_cite_each_sentence_in_place() -> None:
    text = "Hi there! I love jazz. Also, I hate rain; tomorrow I'm flying to Rome."
    drafts = _extract(text)
    cited = [text[draft.spans[0].start : draft.spans[0].end] for draft in drafts]
    assert cited == ["I love jazz", "I hate rain", "tomorrow I'm flying to Rome"]


def test_clauses_split_at_conjunctions_before_a_new_subject() -> None:
    drafts = _extract("Oh, I hate waiting in lines, but I love hiking.")
    assert [draft.text for draft in drafts] == [
        "Caroline hates waiting in lines",
        "Caroline loves hiking",
    ]


def test_chinese_dropped_subject_is_carried() -> None:
    drafts = _extract("我叫李小明，是一名程序员。", speaker="小明")
    assert [draft.text for draft in drafts] == ["小明叫李小明", "小明是一名程序员"]


def test_abbreviations_do_not_end_sentences() -> None:
    draft = _one("I'm a nurse at St. Mary's Hospital.")
    assert draft.text == "Caroline is a nurse at St. Mary's Hospital"


def test_the_same_claim_twice_cites_both_events() -> None:
    events = [
        _event("I love jazz.", event_id="a"),
        _event("Honestly, I love jazz!", event_id="b"),
    ]
    drafts = RuleExtractor().extract(events)
    assert len(drafts) == 1
    assert drafts[0].source_event_ids == ("a", "b")


def test_confidence_by_kind() -> None:
    assert _one("I love jazz.").confidence == pytest.approx(0.85)
    assert _one("I live in Rome.").confidence == pytest.approx(0.85)
    assert _one("I went to Rome yesterday.").confidence == pytest.approx(0.8)


def test_caller_errors_raise() -> None:
    with pytest.raises(ValueError, match="timezone"):
        RuleExtractor().extract([_event("I love jazz")], "Nowhere/Special")
    with pytest.raises(ValueError, match="timezone-aware"):
        _event("I love jazz", at=dt.datetime(2024, 5, 1))  # noqa: DTZ001


# -- span invariant ---------------------------------------------------------------------------

_SPEAKERS = st.sampled_from([None, "Caroline", "小明", "Ana María", "  "])
_FRAGMENTS = st.sampled_from(
    [
        "I love painting sunsets",
        "I'm going to visit my parents next week",
        "Tomorrow I'm flying to Tokyo",
        "I went to a support group yesterday",
        "Please remember that my son is allergic to peanuts",
        "My favourite band is Radiohead",
        "I moved to Berlin last month",
        "I have a dog named Rex",
        "I don't live in Paris anymore",
        "We're going to the beach on Saturday",
        "Do you like jazz",
        "If I had money, I would buy a boat",
        "我喜欢喝绿茶",
        "我下周要去上海出差",
        "明天我打算去爬山",
        "我上个月搬到了深圳",
        "请记住，我对花生过敏",
        "我有一只猫叫咪咪",
        "你喜欢绿茶吗",
        "St. Mary's",
        "Oh,",
        "and",
    ]
)
_GLUE = st.sampled_from(
    [". ", "! ", "? ", ", ", "; ", " ", "\n", "。", "，", "！", "？", "  "]
)


@st.composite
def _turns(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(st.tuples(_FRAGMENTS, _GLUE), min_size=1, max_size=5))
    noise = draw(st.text(max_size=12))
    text = draw(st.sampled_from(["", " ", "\t"])) + "".join(a + b for a, b in pieces)
    return text + noise if draw(st.booleans()) else noise + text


@settings(max_examples=400)
@given(text=_turns(), speaker=_SPEAKERS)
def test_spans_are_verbatim_substrings(text: str, speaker: str | None) -> None:
    event = _event(text, speaker=speaker)
    for draft in RuleExtractor().extract([event]):
        assert draft.spans
        assert draft.text.strip() == draft.text
        assert draft.subject == ((speaker or "").strip() or "user")
        for span in draft.spans:
            assert span.event_id == event.event_id
            assert 0 <= span.start < span.end <= len(text)
            cited = text[span.start : span.end]
            assert cited == cited.strip()
            assert cited.strip(",;:，；：、") == cited


@settings(max_examples=300)
@given(text=st.text(max_size=120), speaker=_SPEAKERS)
def test_arbitrary_text_never_raises(text: str, speaker: str | None) -> None:
    for draft in RuleExtractor().extract(
        [_event(text, speaker=speaker)], "Europe/Berlin"
    ):
        for span in draft.spans:
            assert 0 <= span.start < span.end <= len(text)
