"""Lexical normal form shared by documents and queries.

FTS5's unicode61 tokenizer splits Latin text into words but treats a run of Han characters as
one token, so a two-character Chinese query would never find a longer sentence. We therefore
rewrite CJK runs into overlapping bigrams (a lone character stays a unigram) before the text
reaches FTS5, and run the very same function on the query
(tests/store/test_fts.py::test_two_character_chinese_query_finds_longer_memory).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = [
    "STOPWORDS",
    "index_text",
    "owner_token",
    "query_terms",
    "quote_term",
    "scope_token",
]

# Han, Hiragana, Katakana, Hangul syllables and compatibility ideographs.
_CJK_RUN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "don",
        "did",
        "what's",
        "whats",
        "anything",
        "something",
        "ever",
        "also",
        "get",
        "got",
        "tell",
        "told",
        "say",
        "said",
        "like",
        "的",
        "了",
        "是",
        "在",
        "我",
        "你",
        "他",
        "她",
        "吗",
        "呢",
        "吧",
        "啊",
        "和",
        "就",
        "都",
        "也",
        "很",
        "这",
        "那",
        "有",
    ]
)


def _cjk_grams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[index : index + 2] for index in range(len(run) - 1)]


def _tokens(text: str) -> list[str]:
    normal = unicodedata.normalize("NFKC", text).casefold()
    tokens: list[str] = []
    position = 0
    for match in _CJK_RUN.finditer(normal):
        tokens.extend(_WORD.findall(normal[position : match.start()]))
        tokens.extend(_cjk_grams(match.group()))
        position = match.end()
    tokens.extend(_WORD.findall(normal[position:]))
    return tokens


def index_text(text: str) -> str:
    """The text FTS5 indexes for a document: words, with CJK runs as bigrams."""
    return " ".join(_tokens(text))


def query_terms(text: str) -> list[str]:
    """Distinct, non-stopword terms of a query in first-seen order."""
    seen: dict[str, None] = {}
    for token in _tokens(text):
        bare = token.replace("’", "'").split("'")[0]
        if bare and bare not in STOPWORDS and (len(bare) > 1 or _CJK_RUN.match(bare)):
            seen.setdefault(bare, None)
    return list(seen)


def quote_term(term: str) -> str:
    """A term as an FTS5 string literal: never parsed as syntax, whatever it contains."""
    return '"' + term.replace('"', '""') + '"'


def _token(prefix: str, value: str) -> str:
    # A letter and decimal digits: unicode61 keeps it one token and porter has no suffix
    # to strip, so document and query sides always agree.
    digest = hashlib.blake2b(value.encode(), digest_size=10).digest()
    return prefix + str(int.from_bytes(digest, "big"))


def owner_token(agent_id: str) -> str:
    return _token("o", agent_id)


def scope_token(scope: str, key: str | None) -> str:
    return "sagent" if key is None else _token("s" + scope[0], key)
