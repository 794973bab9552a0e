"""Directives: standing instructions in their own trust plane.

Only an explicit user action makes a directive active (``create`` by the user, or
``approve`` of a draft); anything a model proposes is a draft. A ``suppress_topic``
directive hides recall candidates that mention its topic. Topics match by normalised text:
a CJK topic as a substring (Chinese has no word boundaries), any other topic as a whole
word sequence. A topic too broad to mean anything (fewer than two visible base characters,
or only stopwords) is refused on write and ignored if found in old data
(tests/runtime/test_directives.py).
"""

from __future__ import annotations

import enum
import functools
import re
import unicodedata

import attrs

__all__ = [
    "ActiveDirective",
    "Directive",
    "DirectiveKind",
    "DirectiveStatus",
    "TopicMatcher",
    "normalise_topic",
    "topic_problem",
]


class DirectiveKind(enum.StrEnum):
    INSTRUCTION = "instruction"
    SUPPRESS_TOPIC = "suppress_topic"


class DirectiveStatus(enum.StrEnum):
    DRAFT = "draft"
    ACTIVE = "active"
    REVOKED = "revoked"


@attrs.frozen
class Directive:
    directive_id: str
    kind: DirectiveKind
    text: str
    status: DirectiveStatus
    created_at: str
    updated_at: str


@attrs.frozen
class ActiveDirective:
    """An active directive as recall uses it: rendered into the directive block and, for
    ``suppress_topic``, matched against candidates (``cairn.store.directives``
    ``active_directives`` reads them; ``cairn.retrieval`` renders and filters with them)."""

    directive_id: str
    kind: DirectiveKind
    text: str


# Han, kana and Hangul: scripts written without spaces between words.
_CJK_PATTERN = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"


@functools.cache
def _cjk() -> re.Pattern[str]:
    # Compiled on first use: the ranges cost milliseconds to compile, and every IPC client
    # imports this module for the Directive type alone (tests/ipc/test_light_client.py).
    return re.compile(_CJK_PATTERN)


# Words too common to be a topic on their own ("the", "and", "of", ...).
_BROAD_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "he",
        "her",
        "him",
        "his",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "you",
        "your",
    ]
)
MAX_TOPIC_CHARS = 200


def normalise_topic(text: str) -> str:
    """NFKC, case-folded, whitespace folded: the form both topics and texts are compared in."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _base_characters(text: str) -> int:
    """Visible base characters: letters and digits (combining marks, spaces, punctuation
    and symbols do not count)."""
    return sum(1 for char in text if unicodedata.category(char)[0] in {"L", "N"})


def topic_problem(text: str) -> str | None:
    """Why ``text`` cannot be a suppressed topic, or ``None`` if it can."""
    topic = normalise_topic(text)
    if len(topic) > MAX_TOPIC_CHARS:
        return f"a topic is at most {MAX_TOPIC_CHARS} characters"
    if _base_characters(topic) < 2:
        return "a topic needs at least two visible letters or digits"
    if not _cjk().search(topic):
        words = re.findall(r"[^\W_]+", topic)
        if all(word in _BROAD_WORDS for word in words):
            return "a topic made only of common words would hide almost everything"
    return None


def _compact(text: str) -> str:
    return "".join(normalise_topic(text).split())


@attrs.frozen
class TopicMatcher:
    """Decides whether a text mentions any of a set of suppressed topics."""

    substrings: tuple[str, ...]
    pattern: re.Pattern[str] | None

    @classmethod
    def build(cls, topics: list[str] | tuple[str, ...]) -> TopicMatcher:
        """Broad or malformed topics (old data) are skipped, never widened into a filter."""
        substrings: list[str] = []
        words: list[str] = []
        for topic in topics:
            if topic_problem(topic) is not None:
                continue
            normal = normalise_topic(topic)
            if _cjk().search(normal):
                substrings.append(_compact(normal))
            else:
                parts = [re.escape(part) for part in normal.split()]
                # Whole words, any whitespace between them, a plural ending allowed.
                words.append(r"\s+".join(parts) + r"(?:e?s)?")
        pattern = None
        if words:
            pattern = re.compile(r"(?<![^\W_])(?:" + "|".join(words) + r")(?![^\W_])")
        return cls(tuple(substrings), pattern)

    def __bool__(self) -> bool:
        return bool(self.substrings) or self.pattern is not None

    def matches(self, text: str) -> bool:
        if self.substrings:
            compact = _compact(text)
            if any(topic in compact for topic in self.substrings):
                return True
        return self.pattern is not None and bool(
            self.pattern.search(normalise_topic(text))
        )
