"""The shape of a question, English and Chinese, by closed patterns."""

from __future__ import annotations

import enum
import re

__all__ = ["QuestionShape", "Tense", "asked_task_status", "shape_of", "tense_of"]


class QuestionShape(enum.StrEnum):
    WHEN = "when"
    WHERE = "where"
    WHO = "who"
    HOW_MANY = "how_many"
    WHY = "why"
    LIST = "list"
    YES_NO = "yes_no"
    OTHER = "other"

    @property
    def wants_coverage(self) -> bool:
        """Whether the answer gathers across sessions rather than sits in one turn."""
        return self in (QuestionShape.LIST, QuestionShape.HOW_MANY)


class Tense(enum.StrEnum):
    """Whether the question asks what holds now, what held before, or does not say."""

    CURRENT = "current"
    HISTORY = "history"
    ANY = "any"


_PLURAL_OBJECT = (
    r"(?:activities|things|kinds|types|hobbies|books|movies|films|songs|games|places"
    r"|countries|cities|events|instruments|pets|foods|sports|names|items|ways|gifts"
    r"|symbols|projects|artists|bands|classes|courses|subjects|shows|paintings"
    r"|interests|plans|ideas|topics|issues|steps|tasks|challenges|goals|trips"
    r"|\w+s)\b"
)
_RULES: tuple[tuple[QuestionShape, re.Pattern[str]], ...] = (
    (
        QuestionShape.HOW_MANY,
        re.compile(r"\bhow (?:many|much|often)\b|几次|多少|几个|几"),
    ),
    (
        QuestionShape.LIST,
        re.compile(
            rf"\b(?:what|which) (?:\w+ )?{_PLURAL_OBJECT}|\blist\b|\ball (?:the )?\w+s\b"
            r"|\bwhat (?:does|do|did|has|have) \w+(?: \w+)? (?:do|like|enjoy|make|buy"
            r"|paint|play|read|watch|cook|bake)\b|哪些|都有什么|有哪些|列出|都做了什么"
            r"|都\S{0,3}什么"
        ),
    ),
    (
        QuestionShape.WHEN,
        re.compile(
            r"\bwhen\b|\bwhat (?:date|time|year|month|day)\b|什么时候|哪天|哪一天|哪年|几月|何时"
        ),
    ),
    (QuestionShape.WHERE, re.compile(r"\bwhere\b|哪里|哪儿|在哪|什么地方")),
    (QuestionShape.WHO, re.compile(r"\bwho(?:m|se)?\b|\bwhich person\b|谁")),
    (
        QuestionShape.WHY,
        re.compile(r"\bwhy\b|\bwhat (?:made|caused|motivated|inspired)\b|为什么|为何"),
    ),
    (
        QuestionShape.YES_NO,
        re.compile(
            r"^(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should)\b"
            r"|吗[？?]?$"
        ),
    ),
)
_CURRENT = re.compile(
    r"\b(?:now|currently|current|still|these days|at the moment|today)\b|现在|目前|如今|还"
)
_HISTORY = re.compile(
    r"\b(?:used to|previously|before|formerly|originally|first|earlier|last time)\b|以前|之前|原来|曾经|当初"
)


def _normal(question: str) -> str:
    return " ".join(question.casefold().split())


def shape_of(question: str) -> QuestionShape:
    text = _normal(question)
    for shape, pattern in _RULES:
        if pattern.search(text):
            return shape
    return QuestionShape.OTHER


def tense_of(question: str) -> Tense:
    text = _normal(question)
    if _HISTORY.search(text):
        return Tense.HISTORY
    if _CURRENT.search(text):
        return Tense.CURRENT
    return Tense.ANY


# Questions about the agent's tasks by status: "what is blocked?", "哪些任务失败了？".
_TASK_STATUS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("blocked", re.compile(r"\b(?:blocked|blocking|stuck|on hold)\b|阻塞|卡住|被卡")),
    ("failed", re.compile(r"\b(?:failed|failing|broke|broken|crashed)\b|失败")),
    (
        "waiting_for_input",
        re.compile(r"\b(?:waiting|needs? (?:my )?input|awaiting)\b|等待|需要我"),
    ),
    (
        "running",
        re.compile(r"\b(?:running|in progress|ongoing|underway)\b|进行中|正在进行"),
    ),
    ("done", re.compile(r"\b(?:done|finished|completed)\b|完成")),
)
_TASKISH = re.compile(
    r"\b(?:what|which|any|anything|tasks?|jobs?|builds?|deploys?|runs?)\b|任务|哪些|什么"
)


def asked_task_status(question: str) -> tuple[str, ...]:
    """The task statuses a question asks about, if it asks about tasks at all."""
    text = _normal(question)
    if not _TASKISH.search(text):
        return ()
    return tuple(status for status, pattern in _TASK_STATUS if pattern.search(text))
