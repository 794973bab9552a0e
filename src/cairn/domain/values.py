"""Whether two statements of one attribute say the same value.

"Mei moved to Lisbon last month" and "Mei lives in Lisbon now" are two statements of the
attribute ``(Mei, lives_in)`` with one value: the second restates the first, it does not
replace it. The test reads the value's words: a statement's words less the attribute's
phrasing ("lives", "moved to", "住在", "搬到"), the time words around it ("now", "last
month", "现在"), the value a change left behind ("from Manchester") and the subject's name; two statements say the same value when they agree
on negation and one's value words lie within the other's.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["restates", "same_value", "value_words"]

_CJK: Final = re.compile(r"[\u3400-\u9fff]")
_NEGATION: Final = re.compile(
    r"\b(?:no longer|not|never|anymore|any more|don't|doesn't|didn't|isn't|aren't)\b"
    r"|不再|不|没有|没",
    re.IGNORECASE,
)
# Words of the attribute's phrasing and of the time around it, not of its value.
_FRAME_TEXT: Final = (
    "the user user i my me is am are was a an to in at on of from for as now"
    " lives live living moved move relocated settled based works work working joined"
    " started job title uses use using switched switch got new favourite favorite"
    " prefer prefers partner girlfriend boyfriend wife husband name dating married"
    " no longer not anymore with has have"
    " just recently currently still since last this next ago month months week weeks"
    " year years day days today yesterday"
)
_FRAME_WORDS: Final = frozenset(_FRAME_TEXT.split())
_ZH_FRAME: Final = re.compile(
    r"用户|我|的|了|现在|目前|已经|刚|上个月|上周|去年|今年|最近|住在|搬到|搬去|搬回|家在"
    r"|在|工作|入职|加入|跳槽到|上班|是|叫"
    r"|改用|换成|用的是|开的是|开始用|用|最喜欢|喜欢|更|不再|不|没有|没"
)
_WORD: Final = re.compile(r"\w+")
# The value a change leaves behind is not the value it states: "moved from Manchester to
# Leeds" says Leeds, "从上海搬到北京" says 北京.
_LEFT_BEHIND: Final = re.compile(
    r"\bfrom\b.*?(?=\b(?:to|into)\b)|\b(?:instead of|rather than)\s+\w+(?:\s+\w+)?"
    r"|从.*?(?=搬到|搬去|搬回|换成|改用|换到|跳槽到|到)",
    re.IGNORECASE,
)
_ZH_CHUNKS: Final = re.compile(r"[\s，。,.!！?？]+")


def value_words(text: str, subject: str | None = None) -> frozenset[str]:
    """The words of ``text`` that name its value (see the module's docstring)."""
    if subject:
        # Bounded by Latin letters only: "Mei住在里斯本" names Mei too.
        name = rf"(?<![a-z0-9]){re.escape(subject)}(?![a-z0-9])"
        text = re.sub(name, " ", text, flags=re.IGNORECASE)
    text = _LEFT_BEHIND.sub(" ", text)
    if _CJK.search(text):
        rest = _ZH_FRAME.sub(" ", text)
        return frozenset(chunk.casefold() for chunk in _ZH_CHUNKS.split(rest) if chunk)
    return frozenset(
        word for word in _WORD.findall(text.casefold()) if word not in _FRAME_WORDS
    )


def same_value(one: str, other: str) -> bool:
    """Whether two statements of one attribute do not differ in value ("lives in
    Lisbon", "moved to Lisbon"): the same negation, and one's value words within the
    other's. A statement with no value words differs from none."""
    if bool(_NEGATION.search(one)) != bool(_NEGATION.search(other)):
        return False
    first, second = value_words(one), value_words(other)
    return first <= second or second <= first


def restates(older: str, newer: str, subject: str | None) -> bool:
    """Whether ``newer`` restates ``older``'s value: both name a value (beyond the
    subject's name), the same one. Stricter than :func:`same_value`: a statement whose
    value cannot be read is taken as a new value, since keeping an old value current
    beside a new one is the worse mistake."""
    if bool(_NEGATION.search(older)) != bool(_NEGATION.search(newer)):
        return False
    first, second = value_words(older, subject), value_words(newer, subject)
    if not first or not second:
        return False
    return first <= second or second <= first
