"""When two claim texts say the same thing: the near-duplicate rule of the merge pass.

The rule is built to be *precise*: a merge that joins two different facts loses one of
them, a merge missed only leaves a duplicate. Two texts are near-duplicates when, after

- intensifiers and articles are dropped on both sides ("really", "very", "the"; 非常, 很),
- light verbs are set apart ("drinking", "having"; 喝, 吃), and
- a plural or third-person ``s`` is folded ("loves" = "love"),

their remaining *core* tokens are the same sequence up to one moved block (word order:
"On Monday Ana has a meeting" = "Ana has a meeting on Monday", but "Ana likes Bob" is
not "Bob likes Ana"), and the light verbs are the same or present on one side only
("loves tea" = "loves drinking tea", but "drinking tea" is not "growing tea"). Every
other word is core: a different name, place, number, date or a negation is a different
fact. Under a negation the intensifiers are core too ("doesn't really like" is not
"doesn't like"). Chinese runs are compared character by character (no word segmentation
offline), with the same three steps.

:func:`near_duplicates` adds the embedding check the pass combines with the rule: when
both claims have stored vectors of one identity, their cosine must reach
:data:`COSINE_FLOOR` (tests/maintenance/test_merge_rule.py measures both on a labelled
English and Chinese pair set).
"""

from __future__ import annotations

import collections
import re
import unicodedata
from typing import TYPE_CHECKING, Final

import attrs
import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy.typing as npt

__all__ = [
    "COSINE_FLOOR",
    "Wording",
    "best_cosine",
    "near_duplicates",
    "same_wording",
    "token_similarity",
    "wording",
]

COSINE_FLOOR: Final = 0.5
"""The least cosine of two near-duplicates' vectors (when both have one): a veto for texts
that pass the token rule but were said about unrelated things."""

MIN_CORE: Final = 2
"""Fewer core tokens than this are too little to judge: never merged."""

MIN_SIMILARITY: Final = 0.5
"""Light verbs alone may not outweigh what the texts share."""

_CJK: Final = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)
_WORD: Final = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

# Dropped on both sides: they make a statement stronger or smoother, not different.
_SOFT: Final = frozenset(
    {
        "a",
        "an",
        "the",
        "really",
        "very",
        "so",
        "truly",
        "totally",
        "absolutely",
        "definitely",
        "quite",
        "super",
        "extremely",
        "deeply",
        "genuinely",
        "actually",
        "just",
        "especially",
        "particularly",
        "incredibly",
        "seriously",
        "honestly",
    }
)
_ARTICLES: Final = frozenset({"a", "an", "the"})
_NEGATIONS: Final = frozenset(
    {"not", "no", "never", "nor", "none", "nothing", "without", "hardly", "barely"}
)
_CJK_NEGATIONS: Final = frozenset("不没未无")
_SOFT_PHRASES: Final = re.compile(r"\b(?:a\s+lot|so\s+much|very\s+much)\b")
# Set apart: "loves tea" and "loves drinking tea" say the same, but two different light
# verbs ("drinking tea", "growing tea") are not the same statement.
_LIGHT: Final = frozenset(
    {
        "drink",
        "drinking",
        "eat",
        "eating",
        "have",
        "has",
        "having",
        "do",
        "doing",
        "get",
        "getting",
        "play",
        "playing",
        "watch",
        "watching",
        "go",
        "going",
        "make",
        "making",
        "take",
        "taking",
    }
)
# Longest first, removed from Chinese runs before comparing: "very", "really" and kin.
_CJK_SOFT: Final = (
    "非常",
    "特别",
    "十分",
    "真的",
    "超级",
    "相当",
    "极其",
    "格外",
    "很",
    "挺",
    "蛮",
)
_CJK_LIGHT: Final = frozenset("喝吃玩去")


@attrs.frozen
class Wording:
    """A claim text as the rule compares it."""

    core: tuple[str, ...]
    """Content tokens in order (Chinese characters one by one)."""
    light: tuple[str, ...]
    """Light verbs, sorted."""


def _fold(token: str) -> str:
    """A plural or third-person ``s`` folded; short words and ``-ss`` kept as they are."""
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if (
        len(token) > 3
        and token.endswith("s")
        and not token.endswith(("ss", "us", "is"))
    ):
        return token[:-1]
    return token


def _negated(folded: str) -> bool:
    words = _WORD.findall(folded.replace("’", "'"))
    return any(w in _NEGATIONS or w.endswith("n't") for w in words) or any(
        char in _CJK_NEGATIONS for run in _CJK.findall(folded) for char in run
    )


def wording(text: str) -> Wording:
    folded = unicodedata.normalize("NFKC", text).casefold()
    # Under a negation an intensifier changes the statement ("doesn't really like" is
    # not "doesn't like"): then only the articles are dropped.
    negated = _negated(folded)
    soft = _ARTICLES if negated else _SOFT
    if not negated:
        folded = _SOFT_PHRASES.sub(" ", folded)
    core: list[str] = []
    light: list[str] = []
    position = 0

    def latin(part: str) -> None:
        for word in _WORD.findall(part.replace("’", "'")):
            if word in soft:
                continue
            if word in _LIGHT:
                light.append(word)
            else:
                core.append(_fold(word))

    for match in _CJK.finditer(folded):
        latin(folded[position : match.start()])
        run = match.group()
        for intensifier in () if negated else _CJK_SOFT:
            run = run.replace(intensifier, "")
        for char in run:
            (light if char in _CJK_LIGHT else core).append(char)
        position = match.end()
    latin(folded[position:])
    return Wording(tuple(core), tuple(sorted(light)))


def _one_block_apart(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether ``b`` is ``a`` with at most one contiguous block moved elsewhere."""
    if list(a) == list(b):
        return True
    if len(a) != len(b) or collections.Counter(a) != collections.Counter(b):
        return False
    # Strip the common prefix and suffix: the move happens inside what is left.
    start = 0
    while a[start] == b[start]:
        start += 1
    end = len(a)
    while a[end - 1] == b[end - 1]:
        end -= 1
    left, right = list(a[start:end]), list(b[start:end])
    if len(left) < 3:
        # Two neighbours swapped ("dog house", "house dog") name another thing.
        return False
    # Moving one block inside a window is the same as rotating the window.
    return any(left[cut:] + left[:cut] == right for cut in range(1, len(left)))


def same_wording(a: Wording, b: Wording) -> bool:
    """The token rule: same core up to one moved block, light verbs on one side only."""
    if len(a.core) < MIN_CORE or len(b.core) < MIN_CORE:
        return False
    if a.light and b.light and a.light != b.light:
        return False
    return _one_block_apart(a.core, b.core) and token_similarity(a, b) >= MIN_SIMILARITY


def token_similarity(a: Wording, b: Wording) -> float:
    """Jaccard similarity of the two token multisets (core and light)."""
    left = collections.Counter(a.core) + collections.Counter(a.light)
    right = collections.Counter(b.core) + collections.Counter(b.light)
    union = sum((left | right).values())
    return sum((left & right).values()) / union if union else 0.0


def best_cosine(
    left: Sequence[npt.NDArray[np.float32]], right: Sequence[npt.NDArray[np.float32]]
) -> float | None:
    """The highest cosine between any vector of ``left`` and any of ``right``; ``None``
    when either side has none."""
    if not left or not right:
        return None
    a = np.stack(left).astype(np.float32)
    b = np.stack(right).astype(np.float32)
    a /= np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b /= np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return float((a @ b.T).max())


def near_duplicates(
    a: str,
    b: str,
    cosine: float | None = None,
) -> bool:
    """The merge decision for two texts: the token rule, and the vectors' cosine when
    both have vectors (``None``: the rule alone decides)."""
    if not same_wording(wording(a), wording(b)):
        return False
    return cosine is None or cosine >= COSINE_FLOOR
