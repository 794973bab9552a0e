"""Which attribute a question asks about, so the value that settles it can rank first.

"Where does Ravi live now?" shares only the name with "We relocated to Denver in March",
and every turn of Ravi's carries the name; lexically the move is one hit among many. But
the claim extracted from it has the predicate ``lives_in``, and the question asks for
exactly that attribute. A candidate claim that holds (at the recall's moment) a value of an
attribute the question names goes into its own fused list, ``claim_attribute``, subject
named in the question first, newest evidence first (tests/retrieval/test_attributes.py).

The lexicon is small and closed, English and Chinese: the question words of the fixed
attributes (homes, jobs, occupations, partners), and for keyed attributes
(``uses:<category>``, ``favourite:<category>``, ``plan:<event>``, ``attitude:<object>``)
the key's own words plus the Chinese names of the common categories. A question it does
not understand adds no list, and recall ranks as before.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

import attrs

from cairn.retrieval.keys import CandidateKey
from cairn.retrieval.succession import standing_at
from cairn.retrieval.types import Standing

if TYPE_CHECKING:
    import datetime as dt

    from cairn.domain.claim import Claim
    from cairn.retrieval.candidates import Candidates

__all__ = ["ATTRIBUTE_LIST", "AskedQuestion", "attribute_list", "with_attribute_list"]

ATTRIBUTE_LIST = "claim_attribute"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Question words per fixed predicate (Latin words compared whole, after a plural or verb
# ending is dropped; Chinese ones as substrings).
_ASKING: dict[str, frozenset[str]] = {
    "lives_in": _words(
        "live reside based home city town move moved relocate 住 居住 搬 哪个城市 住址"
    ),
    "works_at": _words(
        "work employer company job office workplace 工作 上班 公司 单位 就职"
    ),
    "occupation": _words(
        "job work role title position profession occupation career 工作 职业 职位"
        " 做什么 干什么"
    ),
    "partner": _words(
        "partner girlfriend boyfriend wife husband spouse dating fiance fiancee"
        " 女朋友 男朋友 对象 伴侣 老公 老婆 妻子 丈夫 未婚妻 未婚夫"
    ),
}
# Words a question uses for the category of a keyed attribute, beyond the key's own.
_CATEGORY_WORDS: dict[str, frozenset[str]] = {
    "editor": _words("editor ide 编辑器"),
    "phone": _words("phone smartphone 手机"),
    "laptop": _words("laptop computer notebook 电脑 笔记本"),
    "browser": _words("browser 浏览器"),
    "os": _words("os operating system 操作系统 系统"),
    "language": _words("language 编程语言 语言"),
    "framework": _words("framework 框架"),
    "car": _words("car drive 车"),
    "tablet": _words("tablet 平板"),
    "watch": _words("watch smartwatch 手表"),
    "notes": _words("notes note 笔记"),
    "colour": _words("colour color 颜色"),
    "drink": _words("drink 喝 饮料"),
    "food": _words("food dish meal eat 吃 食物 菜"),
    "movie": _words("movie film 电影"),
    "book": _words("book 书"),
    "song": _words("song 歌"),
    "sport": _words("sport 运动"),
    "season": _words("season 季节"),
}
_KEYED = ("uses", "favourite", "plan", "attitude")
_FAVOURITE = _words("favourite favorite 最喜欢")
_LATIN = re.compile(r"[a-z0-9][a-z0-9+#.'-]*")
_SUFFIXES = ("ing", "ed", "es", "s")


def _stem(word: str) -> str:
    """A rough English stem, enough to meet "lives"/"living"/"moved" halfway."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@attrs.frozen
class AskedQuestion:
    """A question's words, normalised for matching attribute words."""

    text: str
    stems: frozenset[str]

    @classmethod
    def of(cls, query: str) -> AskedQuestion:
        text = unicodedata.normalize("NFKC", query).casefold()
        return cls(text, frozenset(_stem(word) for word in _LATIN.findall(text)))

    def names(self, words: frozenset[str]) -> bool:
        """Whether the question uses any of ``words``."""
        for word in words:
            if word.isascii():
                parts = word.split()
                if all(_stem(part) in self.stems for part in parts):
                    return True
            elif word in self.text:
                return True
        return False

    def asks_for(self, predicate: str) -> bool:
        """Whether the question asks for the attribute ``predicate`` keys."""
        fixed = _ASKING.get(predicate)
        if fixed is not None:
            return self.names(fixed)
        head, _, key = predicate.partition(":")
        if head not in _KEYED or not key:
            return False
        if head == "favourite" and not self.names(_FAVOURITE):
            return False
        return self.names(frozenset([key]) | _CATEGORY_WORDS.get(key, frozenset()))

    def mentions(self, subject: str) -> bool:
        return unicodedata.normalize("NFKC", subject).casefold() in self.text


def attribute_list(
    candidates: Candidates, question: AskedQuestion, moment: dt.datetime, *, as_of: bool
) -> list[CandidateKey]:
    """Candidate claims holding, at ``moment``, a value of an attribute the question asks
    for: subject named in the question first, then newest evidence first."""
    chosen: list[Claim] = [
        claim
        for claim in candidates.claims.values()
        if claim.predicate is not None
        and standing_at(claim, moment, as_of=as_of) is Standing.CURRENT
        and question.asks_for(claim.predicate)
    ]
    chosen.sort(
        key=lambda claim: (
            not (claim.subject is not None and question.mentions(claim.subject)),
            -(claim.evidence_at.timestamp() if claim.evidence_at else 0.0),
            claim.rowid,
        )
    )
    return [CandidateKey.claim(claim.rowid) for claim in chosen]


def with_attribute_list(
    candidates: Candidates, question: AskedQuestion, moment: dt.datetime, *, as_of: bool
) -> Candidates:
    """``candidates`` with the :data:`ATTRIBUTE_LIST` fused list added (when not empty)."""
    ranked = attribute_list(candidates, question, moment, as_of=as_of)
    if not ranked:
        return candidates
    return attrs.evolve(candidates, lists={**candidates.lists, ATTRIBUTE_LIST: ranked})
