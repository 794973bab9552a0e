"""Chinese rules: clear first-person statements (我/我们) to claim drafts.

A sentence is dropped whole if it is a question (？, 吗/呢 at the end, A-not-A such as
喜不喜欢, question words), hedged or hypothetical (如果, 要是, 可能, 觉得...) or reports
someone else's words (他说, 听说, quotes); an explicit 记住/请记住 is kept even when
conditional. Clauses split at ，：. A clause may open with discourse words and a time
(明天我要...), then needs the subject 我 or 我们 (a clause opening with a predicate word
inherits the previous clause's subject: 我叫李明，是一名程序员); a time may also follow
the subject (我明天要...).
The first rule that matches after the subject and whose conditions hold makes the claim:
plans need a future time, events a past one, and present-tense facts and preferences are
not read into a clause that is dated in the past (我去年在北京工作 is not a current job).

Claim text substitutes the speaker for 我 (我们 → "<speaker>等人") and keeps the rest of
the clause verbatim: 小明's "我喜欢喝绿茶" is "小明喜欢喝绿茶".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

import attrs

from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.ingestion.extract_attributes import (
    EVENT_NOUNS_ZH,
    favourite_category,
    plan_key_zh,
    preference_predicate,
    product_category,
    uses_predicate,
)
from cairn.ingestion.extract_common import (
    CONFIDENCE_FACT,
    CONFIDENCE_PLAN,
    CONFIDENCE_REMEMBER,
    PatternChain,
    Sentence,
    is_future,
    is_not_future,
    is_not_past,
    key,
    make_draft,
    open_ended,
    split_clauses,
)
from cairn.ingestion.temporal import TemporalMatch

__all__ = ["extract_sentence"]

# -- sentence filters -------------------------------------------------------------------------

_QUESTION = re.compile(
    r"[?？]|[吗嘛么呢]\s*[。！!…～~]*$|([\u4e00-\u9fff])[不没]\1|什么|哪|谁|怎么|为什么|为何|"
    r"多少|(?<![好这那前后头])几(?:点|天|个|号|月|年|岁|次|时)"
)
_HEDGE = re.compile(
    r"如果|(?<![主只])要是|假如|假设|假使|万一|的话|也许|可能|或许|大概|估计|好像|似乎|希望|"
    r"但愿|倘若|若是|说不定|不确定|不一定|应该|觉得|认为|以为|感觉|梦见|梦到|想象|假装|"
    r"开玩笑|除非"
)
_REPORTED = re.compile(r"[他她它]们?说|[爸妈友人家]说|听说|据说|告诉我|[“”「」『』\"]")

# -- clause structure -------------------------------------------------------------------------

# Not before 叫 and a name: "我养了一只猫，叫豆豆" names the cat in one clause.
_CLAUSE_BREAK = re.compile(r"\s*(?:[，,](?!\s*[它他她]?叫[^我你他她])|[：:])\s*")
_DISCOURSE = re.compile(
    r"(?:(?:其实|另外|还有|而且|但是|不过|所以|因为|可是|然后|并且|同时|对了|哈+|嗯+|啊+|哦+|噢|诶|"
    r"嘿|好的|是的|对|顺便说一下|顺便说一句|顺便提一下|说实话|老实说|告诉你|跟你说|我跟你说|"
    r"你知道吗|最近|话说)[，,！!～~\s]*)+"
)
_TRAILING_PARTICLES = "啊呀哦哈啦嘛哟~～!！ "

# -- lexicons ---------------------------------------------------------------------------------

_ACTIONS = (
    "去|回|到|飞|见|参加|参观|访问|拜访|买|卖|开始|完成|结束|毕业|结婚|订婚|离婚|搬|跑|爬|吃|喝|"
    "做|学|认识|领养|收养|换|辞职|入职|加入|庆祝|举办|带|陪|玩|旅行|旅游|考|通过|赢|输|拿到|"
    "得到|收到|写|画|唱|报名|上|出发|出差|休假|请假|面试|开会|加班|值班|坐|骑|游|逛|约|请|办|"
    "参与|开|打|踢|练|听|发|跟|和|与|看了|看到|看完|遇到|碰到|接|送|交|过生日|生了"
)
_PETS_AND_FAMILY = (
    "猫咪|小猫|猫|小狗|狗狗|狗|兔子|仓鼠|鹦鹉|金鱼|鱼|乌龟|宠物|孩子|小孩|儿子|女儿|宝宝|"
    "双胞胎|哥哥|姐姐|弟弟|妹妹|男朋友|女朋友|老公|老婆|丈夫|妻子|车"
)
_RELATIONS = (
    "妈妈|妈|爸爸|爸|母亲|父亲|哥哥|姐姐|弟弟|妹妹|老公|老婆|丈夫|妻子|儿子|女儿|男朋友|"
    "女朋友|对象|猫咪|猫|狗狗|狗|宠物|老板|室友|闺蜜|最好的朋友|好朋友|爷爷|奶奶|外公|外婆|"
    "宝宝|孩子"
)
_WORK_END = re.compile("(?:工作|上班)了?$")
_JOB_END = re.compile(
    r"(?:师|员|家|者|生|手|工|长|官|总监|主管|总|医生|护士|老师|教授|律师|记者|会计|司机|警察|经理|老板|"
    r"主播|博主|翻译|销售|模特|主妇|妈妈|爸爸|农民|军人|商人|创始人|合伙人)$"
)
_OCCUPATION_END = re.compile(
    r"(?:师|员|家|工|长|官|医生|护士|老师|教授|律师|记者|会计|司机|警察|经理|老板|主播|博主|"
    r"翻译|销售|模特|农民|军人|商人|创始人|合伙人|学生|研究生|博士生|大学生)$"
)
_PERSONAL = re.compile("[我你他她的]")
_NOT_A_JOB = re.compile("[我你他她它这那的不]")
_LIKING = re.compile("(?:喜欢|爱)(.+)")
_WORKING_AT = re.compile("在.+(?:工作|上班)")
_STATIVE_START = re.compile("[不没很太非常有点挺特别好真]")
_ACTION_START = re.compile(_ACTIONS)
_PERFECTIVE = re.compile("[了过]")
_PRONOUN = re.compile(r"^(?:你|他|她|它|这|那|了|死|上了|得)")
_NOT_A_NAME = re.compile(r"[我你他她它了过着的]|^(?:外卖|快递|车|醒|人|妈|爸|起来)$")
_NOT_A_PLACE_START = frozenset("一个好坏普正老聪年有穷懒大小男女成这那什怎外本当")
_NUMBER = r"(?:\d{1,3}|[一两二三四五六七八九十]{1,3})"
_CLASSIFIER = r"(?:个|只|条|位|匹|头|对|名|辆|套)"
_NAME = r"(?P<name>[\u4e00-\u9fff]{1,4}|[A-Za-z][A-Za-z .'-]{0,30})"


# -- rule machinery ---------------------------------------------------------------------------


@attrs.frozen
class _Clause:
    sentence: Sentence
    start: int  # supporting span start (after discourse words)
    lead: TemporalMatch | None  # a time before the subject
    subject_end: int
    end: int
    plural: bool


# none: present tense, not in a clause dated in the past; plan: a time not yet over;
# plan_strict: a time after the evidence; event: a time already begun; since: an optional
# past start (open-ended); move: like since, or a plan when the time is in the future;
# replan: a time not yet over, read from the object alone (从周二改到周四 is 周四).
Timing = Literal["none", "plan", "plan_strict", "event", "since", "move", "replan"]


@attrs.frozen
class _Rule:
    pattern: re.Pattern[str]
    kind: ClaimKind
    predicate: Callable[[re.Match[str]], str | None] = lambda _: None
    check: Callable[[re.Match[str]], bool] = lambda _: True
    plural_ok: bool = False
    timing: Timing = "none"
    kind_for: Callable[[re.Match[str]], ClaimKind] | None = None


_rule = _Rule
_p = re.compile


def _object(match: re.Match[str]) -> str:
    groups = match.groupdict()
    return groups.get("obj") or groups.get("obj2") or groups.get("obj3") or ""


def _concrete(match: re.Match[str]) -> bool:
    obj = _object(match)
    return bool(obj) and not _PRONOUN.match(obj) and len(obj) <= 30


def _attitude(match: re.Match[str]) -> str:
    return f"attitude:{key(_object(match))}"


def _name_ok(match: re.Match[str]) -> bool:
    return not _NOT_A_NAME.search(match["name"])


def _place_ok(match: re.Match[str]) -> bool:
    place = match["place"]
    return place[0] not in _NOT_A_PLACE_START and not _PERSONAL.search(place)


def _job(match: re.Match[str]) -> bool:
    obj = _object(match)
    return bool(_JOB_END.search(obj)) and not _NOT_A_JOB.search(obj)


def _job_predicate(match: re.Match[str]) -> str:
    obj = _object(match)
    return "occupation" if _OCCUPATION_END.search(obj) else f"is_a:{key(obj)}"


def _no_longer_kind(match: re.Match[str]) -> ClaimKind:
    return ClaimKind.PREFERENCE if _LIKING.match(_object(match)) else ClaimKind.STATE


def _no_longer_predicate(match: re.Match[str]) -> str:
    obj = _object(match)
    if liked := _LIKING.match(obj):
        return f"attitude:{key(liked[1])}"
    if obj.startswith(("住在", "住")):
        return "lives_in"
    if _WORKING_AT.match(obj):
        return "works_at"
    if obj.startswith(("用", "使用")) and (
        uses := uses_predicate(obj.removesuffix("了"))
    ):
        return uses
    return f"habit:{key(obj.removesuffix('了'))}"


def _clean(text: str | None) -> str:
    return (text or "").removesuffix("了").strip()


def _tool_predicate(match: re.Match[str]) -> str | None:
    groups = match.groupdict()
    return uses_predicate(_clean(groups.get("obj")), _clean(groups.get("old")))


def _tool_known(match: re.Match[str]) -> bool:
    return _tool_predicate(match) is not None


def _product_known(match: re.Match[str]) -> bool:
    # A bare 用 needs a product name: 我用手机看视频 says nothing about which phone.
    return product_category(_object(match)) is not None


def _plan_predicate(match: re.Match[str]) -> str | None:
    groups = match.groupdict()
    event = plan_key_zh(groups.get("event") or _object(match))
    return f"plan:{event}" if event else None


def _plan_known(match: re.Match[str]) -> bool:
    return _plan_predicate(match) is not None


def _employer_ok(match: re.Match[str]) -> bool:
    obj = _object(match)
    return (
        0 < len(obj) <= 16
        and obj[0] not in "一个这那"
        and not _PERSONAL.search(obj)
        and not _CLUB_END.search(obj)
    )


def _partner_ok(match: re.Match[str]) -> bool:
    name = match["name"]
    return (
        _name_ok(match)
        and not _JOB_END.search(name)
        and not _NOT_A_PARTNER.search(name)
    )


def _home_ok(match: re.Match[str]) -> bool:
    place = _object(match)
    return (
        place not in _NOT_A_HOME
        and place[0] not in _NOT_A_HOME_START
        and not _PERSONAL.search(place)
    )


def _prefer_predicate(match: re.Match[str]) -> str:
    chosen = _clean(_object(match))
    return (
        preference_predicate(chosen)
        or preference_predicate(re.sub("^(?:喝|吃|用|听|看|玩)", "", chosen))
        or _attitude(match)
    )


def _event_like(match: re.Match[str]) -> bool:
    obj = _object(match)
    if _STATIVE_START.match(obj):
        return False
    return bool(_ACTION_START.match(obj) or _PERFECTIVE.search(obj))


_STATE_WORDS = "(?:现在|目前|如今)"
_PARTNERS = "男朋友|女朋友|男友|女友|老公|老婆|丈夫|妻子|对象|未婚夫|未婚妻|爱人"
_CLUB_END = re.compile("(?:会|群|俱乐部|队|社|班|小组|组织|活动)$")
_NOT_A_PARTNER = re.compile("^(?:谁|一个|个|好人|什么)")
# 我现在在X: a city or a country, not a room, an errand or an activity.
_NOT_A_HOME = frozenset(
    [
        "家",
        "家里",
        "公司",
        "路上",
        "外面",
        "学校",
        "单位",
        "医院",
        "机场",
        "办公室",
        "车上",
        "床上",
        "这里",
        "那里",
        "这儿",
        "那儿",
        "楼下",
        "附近",
        "国外",
        "上班",
        "上课",
        "上学",
        "开会",
        "加班",
        "出差",
        "休假",
        "度假",
        "健身房",
        "地铁上",
        "高铁上",
        "飞机上",
        "排队",
    ]
)
_NOT_A_HOME_START = frozenset("开吃喝看忙做写读玩等休睡洗加路这那附准想学找听")
_CHANGED_TO = r"(?:推迟|延期|延后|改|挪|调整|调|提前|推|换|定)(?:到|至|成|在)了?"

_RULES: tuple[_Rule, ...] = (
    # -- a rescheduled plan: 我把会议改到周三, 我的面试推迟到了下周一
    _rule(
        _p(
            r"(?:们)?(?:的|把)(?P<event>[^，,。把]{1,10}?)(?:又|也|已经|被)*"
            + _CHANGED_TO
            + r"(?P<obj>.+)"
        ),
        ClaimKind.PLAN,
        predicate=_plan_predicate,
        check=_plan_known,
        plural_ok=True,
        timing="replan",
    ),
    # -- state changes
    _rule(
        _p(
            r"(?:已经|刚|刚刚|最近|终于|也|都|又|还|就)*"
            r"(?:搬到|搬去|搬家到|搬来|搬回|搬回到|定居到)了?"
            r"(?P<obj>.+)"
        ),
        ClaimKind.STATE,
        predicate=lambda _: "lives_in",
        plural_ok=True,
        timing="move",
    ),
    _rule(
        _p(_STATE_WORDS + r"(?:住在|生活在|定居在|住)(?P<obj>.+)"),
        ClaimKind.STATE,
        predicate=lambda _: "lives_in",
    ),
    _rule(
        _p(_STATE_WORDS + r"在(?P<obj>.+?)(?:工作|上班|任职)"),
        ClaimKind.STATE,
        predicate=lambda _: "works_at",
    ),
    _rule(
        _p(_STATE_WORDS + r"(?:人)?(?:在|住)(?P<obj>[^，,。]{2,8})$"),
        ClaimKind.STATE,
        predicate=lambda _: "lives_in",
        check=_home_ok,
    ),
    _rule(
        _p(
            r"(?:已经|刚|刚刚|最近|终于|也|正式)*(?:入职了?|加入了?|跳槽到了?|跳槽去了?|跳槽进了?|"
            r"换到了?|去了?)(?P<obj>[^，,。]+?)(?:工作|上班)?了?$"
        ),
        ClaimKind.STATE,
        predicate=lambda _: "works_at",
        check=lambda match: (
            _employer_ok(match)
            and not (
                match[0].lstrip("已经刚最近终于也正式").startswith("去")
                and not _WORK_END.search(match[0])
            )
        ),
        timing="since",
    ),
    _rule(
        _p(r"从(?P<old>[^，,。]+?)跳槽到了?(?P<obj>[^，,。]+?)(?:工作|上班)?了?$"),
        ClaimKind.STATE,
        predicate=lambda _: "works_at",
        check=_employer_ok,
        timing="since",
    ),
    _rule(
        _p(r"在(?P<obj>[^，,。我你他她]+?)找到了?(?:一份)?(?:新)?工作"),
        ClaimKind.STATE,
        predicate=lambda _: "works_at",
        check=_employer_ok,
        timing="since",
    ),
    _rule(
        _p(
            r"(?:已经|刚|刚刚|终于|也)*(?:升职为|升职成了?|升为|晋升为|升成了?|当上了?|成为了?|"
            r"转行做了?)(?:一名|一个|一位|名|位)?(?P<obj>[^，,。]{1,12}?)了?$"
        ),
        ClaimKind.STATE,
        predicate=lambda _: "occupation",
        check=_job,
        timing="since",
    ),
    # -- partners
    _rule(
        _p(
            r"(?:的)?(?:现在的|新)?(?:的)?(?P<rel>"
            + _PARTNERS
            + r")(?:现在)?(?:是|叫|名叫)"
            + _NAME
            + "$"
        ),
        ClaimKind.FACT,
        predicate=lambda _: "partner",
        check=_partner_ok,
        kind_for=lambda match: (
            ClaimKind.STATE
            if "新" in match[0] or "现在" in match[0]
            else ClaimKind.FACT
        ),
    ),
    _rule(
        _p(
            r"(?:已经|刚|刚刚|终于|也|现在)*(?:和|跟|与)"
            + _NAME
            + r"(?:在一起了|交往了|在交往|结婚了|订婚了|分手了|离婚了|谈恋爱了|在谈恋爱|恋爱了)$"
        ),
        ClaimKind.STATE,
        predicate=lambda _: "partner",
        check=_partner_ok,
        timing="since",
    ),
    # -- tools: 我改用Vim了, 我把iPhone换成了Pixel, 我现在用Emacs
    _rule(
        _p(r"把(?P<old>[^，,。]+?)(?:换成|改成|换为)了?(?P<obj>.+)"),
        ClaimKind.STATE,
        predicate=_tool_predicate,
        check=_tool_known,
        timing="since",
    ),
    _rule(
        _p(r"从(?P<old>[^，,。]+?)(?:换到|换成|转到|改用|切换到|转向)了?(?P<obj>.+)"),
        ClaimKind.STATE,
        predicate=_tool_predicate,
        check=_tool_known,
        timing="since",
    ),
    _rule(
        _p(
            r"(?:已经|最近|也|都|终于|现在|目前|如今)*(?:改用|换成|换用|改成|转用|切换到|"
            r"开始用|开始使用|用上了|换了)了?(?:一(?:个|台|部|款))?(?:新的?)?(?P<obj>.+)"
        ),
        ClaimKind.STATE,
        predicate=_tool_predicate,
        check=_tool_known,
        timing="since",
    ),
    _rule(
        _p(
            r"(?:现在|目前|如今)?(?:平时|一直)?(?:用|开|使用)的(?:是|一直是)(?P<obj>.+)"
        ),
        ClaimKind.FACT,
        predicate=_tool_predicate,
        check=_tool_known,
    ),
    _rule(
        _p(
            r"(?P<now>现在|目前|如今)?(?:都|主要|一直|平时)?(?:在)?(?:用|使用)(?P<obj>.+)"
        ),
        ClaimKind.FACT,
        predicate=_tool_predicate,
        check=_product_known,
        kind_for=lambda match: ClaimKind.STATE if match["now"] else ClaimKind.FACT,
    ),
    _rule(
        _p(
            r"(?:已经)?不再(?P<obj>.+)|已经不(?P<obj2>.+)了|不(?P<obj3>(?:住|用|在).+)了$"
        ),
        ClaimKind.STATE,
        predicate=_no_longer_predicate,
        kind_for=_no_longer_kind,
    ),
    _rule(
        _p(r"(?:已经|刚|刚刚|终于)?(?:辞职|离职|辞掉了?(?:.{0,6})工作|把工作辞了)"),
        ClaimKind.STATE,
        predicate=lambda _: "works_at",
        timing="since",
    ),
    # -- plans
    _rule(
        _p(
            r"(?:也|还|就|都|一定|肯定|必须|又|马上|即将|正|已经)*(?:打算|计划|准备|将要|要|将|会)"
            r"(?!不)(?P<obj>.{2,})"
        ),
        ClaimKind.PLAN,
        predicate=_plan_predicate,
        plural_ok=True,
        timing="plan",
    ),
    _rule(
        _p(r"(?:也|还|就|都|又|马上|一起)*(?P<obj>(?:" + _ACTIONS + r").+)"),
        ClaimKind.PLAN,
        predicate=_plan_predicate,
        plural_ok=True,
        timing="plan_strict",
    ),
    _rule(
        _p(
            r"(?:还|也|又)?有(?:个|一个|场|一场|次|一次|节|一节)?(?P<obj>[^，,。]{0,6}?(?:"
            + EVENT_NOUNS_ZH
            + r"))$"
        ),
        ClaimKind.PLAN,
        predicate=_plan_predicate,
        plural_ok=True,
        timing="plan",
    ),
    # -- dated past events
    _rule(
        _p(r"(?:也|还|就|都|刚|刚刚|已经|终于|又|第一次|一起)*(?P<obj>.+)"),
        ClaimKind.EVENT,
        check=_event_like,
        plural_ok=True,
        timing="event",
    ),
    # -- preferences
    _rule(
        _p(
            r"(?:现在|目前|如今)?最{1,2}(?:喜欢|爱)的(?P<cat>[^，,。是]{1,12}?)"
            r"(?:现在)?(?:是|就是|变成了|换成了)(?P<obj>.+)"
        ),
        ClaimKind.PREFERENCE,
        predicate=lambda match: f"favourite:{favourite_category(match['cat'])}",
    ),
    _rule(
        _p(
            r"(?:现在|目前|如今)?(?:更喜欢|更爱|比较喜欢|改喜欢|开始喜欢|偏爱)(?P<obj>.+)"
        ),
        ClaimKind.PREFERENCE,
        predicate=_prefer_predicate,
        check=_concrete,
    ),
    _rule(
        _p(
            r"(?:很|非常|特别|真的|真|超|超级|也|还|一直|都|挺|蛮|比较|从来|从小就|就|最|好|可|太)*"
            r"(?:不太喜欢|不喜欢|不爱|讨厌|厌恶|受不了|恨|更喜欢|喜欢|热爱|喜爱|钟爱|偏爱|爱上了|"
            r"迷上了|爱)(?P<obj>.+)"
        ),
        ClaimKind.PREFERENCE,
        predicate=_attitude,
        check=_concrete,
    ),
    _rule(
        _p(r"对(?P<obj>.+?)(?:很|非常|特别|超|也|挺|比较)?(?:感兴趣|有兴趣|着迷)"),
        ClaimKind.PREFERENCE,
        predicate=_attitude,
        check=_concrete,
    ),
    # -- personal facts
    _rule(
        _p(r"对(?P<obj>.+?)(?:严重|有点|很|非常)?过敏"),
        ClaimKind.FACT,
        predicate=lambda match: f"allergic_to:{key(_object(match))}",
        check=_concrete,
    ),
    _rule(
        _p(r"(?:的名字)?(?:叫做|叫|名叫|的名字是|的名字叫)" + _NAME + "$"),
        ClaimKind.FACT,
        predicate=lambda _: "name",
        check=_name_ok,
    ),
    _rule(
        _p(
            r"的?(?P<rel>"
            + _RELATIONS
            + r")(?:叫|的名字是|的名字叫|名叫)"
            + _NAME
            + "$"
        ),
        ClaimKind.FACT,
        predicate=lambda match: f"name_of:{match['rel']}",
        check=_name_ok,
    ),
    _rule(_p(r"的生日是(?P<obj>.+)"), ClaimKind.FACT, predicate=lambda _: "birthday"),
    _rule(
        _p(r"是(?P<place>[\u4e00-\u9fff]{2,6}?)人$"),
        ClaimKind.FACT,
        predicate=lambda _: "from",
        check=_place_ok,
    ),
    _rule(
        _p(r"来自(?P<obj>.+)|是从(?P<obj2>.+?)来的$"),
        ClaimKind.FACT,
        predicate=lambda _: "from",
    ),
    _rule(
        _p(
            r"(?:现在|目前)?(?:也|还|都)?是(?:一名|一个|一位|个|名|位)?(?P<obj>[^，,。]{1,12})$"
        ),
        ClaimKind.FACT,
        predicate=_job_predicate,
        check=_job,
    ),
    _rule(
        _p(r"(?:家)?(?:住在|生活在|定居在)(?P<obj>.+)|家在(?P<obj2>.+)"),
        ClaimKind.FACT,
        predicate=lambda _: "lives_in",
    ),
    _rule(
        _p(r"在(?P<obj>[^我你他她]+?)(?:工作|上班|任职|实习)"),
        ClaimKind.FACT,
        predicate=lambda _: "works_at",
    ),
    _rule(
        _p(
            r"(?:有|养了|养着|养)(?P<obj>"
            + _NUMBER
            + "?"
            + _CLASSIFIER
            + r"[\u4e00-\u9fff]{0,4}?"
            r"(?P<head>"
            + _PETS_AND_FAMILY
            + r"))(?:[，,]?\s*(?:它|他|她)?叫"
            + _NAME
            + ")?$"
            r"|有"
            + _NUMBER
            + "?"
            + _CLASSIFIER
            + "叫"
            + _NAME.replace("name", "name2")
            + r"的(?P<head2>"
            + _PETS_AND_FAMILY
            + ")$"
        ),
        ClaimKind.FACT,
        predicate=lambda match: f"has:{match['head'] or match['head2']}",
    ),
    _rule(
        _p(r"(?P<obj>" + _NUMBER + r")(?:周)?岁了?$"),
        ClaimKind.FACT,
        predicate=lambda _: "age",
    ),
)

_CHAIN = PatternChain([rule.pattern for rule in _RULES])

_REMEMBER = re.compile(
    r"(?:(?:请你?|麻烦你?|帮我|你要|要|一定要|千万要)?(?:记住|记下|记一下|记好|别忘了|别忘记|"
    r"不要忘了|不要忘记|千万别忘了)|(?:请你?|你要|要|一定要)记得)了?(?:这件事|这个|一下)?"
    r"[，,：:\s]*(?P<obj>.+)"
)
_IMPLIED_SUBJECT = re.compile(
    r"是|在|现在|目前|如今|也|还|又|并且|已经|今年|住|有|喜欢|爱|讨厌|最|打算|计划|准备|要|"
    r"正在|刚|就|对|搬|改用|换成|入职|跳槽|加入"
)
_PAST_DATED_FACT_KINDS = frozenset(
    {ClaimKind.FACT, ClaimKind.PREFERENCE, ClaimKind.STATE}
)


def _substitute(text: str, display: str) -> str:
    return text.replace("我们", f"{display}等人").replace("我", display)


def _rest_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1] in _TRAILING_PARTICLES:
        end -= 1
    return end


def _timed(
    rule: _Rule, clause: _Clause, match: re.Match[str]
) -> tuple[bool, TemporalMatch | None, ClaimKind]:
    """Whether the rule's time condition holds, the time it uses, and the final kind."""
    sentence = clause.sentence
    window = (clause.start, clause.end)
    if rule.timing == "replan":
        time = sentence.choose_time(
            match.start("obj"), clause.end, "future", is_not_past, clause_only=True
        )
        return time is not None, time, rule.kind
    if rule.timing in {"plan", "plan_strict"}:
        accept = is_future if rule.timing == "plan_strict" else is_not_past
        time = sentence.choose_time(*window, "future", accept)
        return time is not None, time, rule.kind
    if rule.timing == "event":
        time = sentence.choose_time(*window, "past", is_not_future)
        return time is not None, time, rule.kind
    if rule.timing in {"since", "move"}:
        time = sentence.choose_time(*window, "past", is_not_future)
        if time is not None:
            return True, attrs.evolve(time, span=open_ended(time.span)), rule.kind
        if rule.timing == "move":
            planned = sentence.choose_time(*window, "future", is_future)
            if planned is not None:
                return True, planned, ClaimKind.PLAN
        return True, None, rule.kind
    # Present-tense facts are not read into a clause dated in the past (去年, 上周). A time
    # that is past only when read backwards (周末 in 我周末喜欢钓鱼) is a habit, not a date.
    if rule.kind in _PAST_DATED_FACT_KINDS:
        for past in sentence.times(*window, "past"):
            if _inherently_past(sentence, past):
                return False, None, rule.kind
    return True, None, rule.kind


def _inherently_past(sentence: Sentence, past: TemporalMatch) -> bool:
    for forward in sentence.times(past.start, past.end, "future"):
        until = forward.span.valid_until
        if (
            forward.start == past.start
            and until is not None
            and until <= sentence.reference
        ):
            return True
    return False


def _build(rule: _Rule, match: re.Match[str], clause: _Clause) -> ClaimDraft | None:
    if not rule.check(match):
        return None
    holds, time, kind = _timed(rule, clause, match)
    if not holds:
        return None
    sentence = clause.sentence
    if rule.kind_for is not None:
        kind = rule.kind_for(match)
    # A planned move says nothing yet about where the speaker lives.
    planned_move = kind is ClaimKind.PLAN and rule.kind is not ClaimKind.PLAN
    predicate = None if planned_move else rule.predicate(match)
    display = f"{sentence.display}等人" if clause.plural else sentence.display
    lead = clause.lead.text if clause.lead is not None else ""
    rest = sentence.text[clause.subject_end : clause.end]
    ranges = [(clause.start, clause.end)]
    if time is not None and not clause.start <= time.start < clause.end:
        ranges.append((time.start, time.end))
    return make_draft(
        sentence,
        kind,
        display + lead + _substitute(rest, sentence.display),
        ranges,
        CONFIDENCE_PLAN
        if kind in {ClaimKind.PLAN, ClaimKind.EVENT}
        else CONFIDENCE_FACT,
        temporal=time.span if time is not None else None,
        predicate=predicate,
    )


# 周五下午, 明天晚上八点: the part of the day (and a clock time) after a day belongs to it.
_PART_OF_DAY = re.compile(
    r"(?:上午|下午|中午|晚上|早上|早晨|傍晚|凌晨|夜里|白天)"
    r"(?:[\d一二三四五六七八九十两]{1,3}点(?:半|[\d一二三四五六七八九十]{1,3}分)?)?"
)


def _after_part_of_day(text: str, position: int, end: int) -> int:
    match = _PART_OF_DAY.match(text, position, end)
    return match.end() if match else position


def _skip_discourse(sentence: Sentence, position: int, end: int) -> int:
    match = _DISCOURSE.match(sentence.text, position, end)
    return match.end() if match else position


# 会议推迟到下周一: a planned event moved, said without 我.
_RESCHEDULED = _rule(
    _p(
        r"(?:这次|那个|这个|下周的|明天的|周[一二三四五六日天]的)?(?P<event>[^，,。把我]{1,10}?)"
        r"(?:又|也|已经|被)*" + _CHANGED_TO + r"(?P<obj>.+)"
    ),
    ClaimKind.PLAN,
    predicate=_plan_predicate,
    check=_plan_known,
    timing="replan",
)
_RESCHEDULE_WORDS = re.compile(_CHANGED_TO)
_OTHERS = re.compile("[你他她它]")


def _rescheduled(sentence: Sentence, position: int, end: int) -> ClaimDraft | None:
    match = _RESCHEDULED.pattern.match(sentence.text, position, end)
    # 他的会议推迟了 is someone else's plan.
    if match is None or not _plan_known(match) or _OTHERS.search(match["event"]):
        return None
    clause = _Clause(sentence, position, None, position, end, plural=False)
    holds, time, _ = _timed(_RESCHEDULED, clause, match)
    if not holds or time is None:
        return None
    return make_draft(
        sentence,
        ClaimKind.PLAN,
        f"{sentence.display}的{sentence.text[position:end]}",
        [(position, end)],
        CONFIDENCE_PLAN,
        temporal=time.span,
        predicate=_plan_predicate(match),
    )


def _clause_claim(
    sentence: Sentence, start: int, end: int, carried: bool | None
) -> tuple[ClaimDraft | None, bool | None]:
    """The clause's claim, and its subject (plural?) for a following subjectless clause.

    ``carried`` is the previous clause's subject: Chinese drops a repeated subject
    (我叫李小明，是一名程序员), so a clause opening with a predicate word inherits it.
    """
    text = sentence.text
    end = _rest_end(text, start, end)
    position = _skip_discourse(sentence, start, end)
    span_start = position
    lead = None
    if not text.startswith("我", position) and (
        lead := sentence.leading_time(position, end)
    ):
        position = _skip_discourse(
            sentence, _after_part_of_day(text, lead.end, end), end
        )
    if text.startswith("我", position):
        plural = text.startswith("我们", position)
        subject_end = position + (2 if plural else 1)
    elif carried is not None and _IMPLIED_SUBJECT.match(text, position, end):
        plural, subject_end = carried, position
    else:
        return _rescheduled(sentence, span_start, end), None
    predicate_start = subject_end
    if (middle := sentence.leading_time(subject_end, end)) is not None:
        predicate_start = _after_part_of_day(text, middle.end, end)
    clause = _Clause(sentence, span_start, lead, subject_end, end, plural)
    for index, match in _CHAIN.matches(text, predicate_start, end):
        rule = _RULES[index]
        if plural and not rule.plural_ok:
            continue
        if (draft := _build(rule, match, clause)) is not None:
            return draft, plural
    return None, plural


def _remember(sentence: Sentence, position: int) -> ClaimDraft | None:
    match = _REMEMBER.match(sentence.text, position, sentence.end)
    if match is None or sentence.is_question:
        return None
    obj = match["obj"]
    if match[0].find("记得") >= 0 and "我" not in obj:
        return None  # 记得带伞 is a reminder to act, not something about the user
    return make_draft(
        sentence,
        ClaimKind.FACT,
        f"{sentence.display}请求记住：{obj}",
        [(position, sentence.end)],
        CONFIDENCE_REMEMBER,
    )


def extract_sentence(sentence: Sentence) -> list[ClaimDraft]:
    """Claims stated in one Chinese sentence (possibly none)."""
    start = _skip_discourse(sentence, sentence.start, sentence.end)
    remembered = _remember(sentence, start)
    if remembered is not None:
        return [remembered]
    body = sentence.body
    if (
        ("我" not in body and not _RESCHEDULE_WORDS.search(body))
        or sentence.is_question
        or _QUESTION.search(body)
        or _HEDGE.search(body)
        or _REPORTED.search(body)
    ):
        return []
    drafts: list[ClaimDraft] = []
    carried: bool | None = None
    for clause_start, clause_end in split_clauses(sentence, _CLAUSE_BREAK):
        draft, carried = _clause_claim(sentence, clause_start, clause_end, carried)
        if draft is not None:
            drafts.append(draft)
    return drafts
