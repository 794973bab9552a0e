"""Lexical normal form shared by documents and queries.

FTS5's unicode61 tokenizer splits Latin text into words but treats a run of Han characters as
one token, so a two-character Chinese query would never find a longer sentence. We therefore
rewrite CJK runs into overlapping bigrams (a lone character stays a unigram) before the text
reaches FTS5, and run the very same function on the query
(tests/store/test_fts.py::test_two_character_chinese_query_finds_longer_memory).

Every token is namespaced: glued to a prefix derived from the owning agent (and, for
claims, the scope). An agent's query can then only ever match its own rows, inside the FTS
index and before LIMIT, at no extra cost: a shared `owner` column ANDed into the query made
FTS5 walk the agent's whole doclist (10 ms at 100k rows). Document frequencies and bm25
statistics become per agent too. The prefix uses consonants only, so the porter stemmer's
vowel/consonant measure, and with it every stem, is the same as without it.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = [
    "STOPWORDS",
    "index_text",
    "namespace",
    "query_terms",
    "quote_term",
    "tokens",
]

# Han, Hiragana, Katakana, Hangul syllables and compatibility ideographs.
_CJK_RUN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# Chinese question words, the counterpart of "what", "who", "where" among the English
# stopwords: a query's CJK run is cut at them before it is read as bigrams, so "高翔用什么
# 编程语言" searches 高翔, 编程, 语言 … and not 什么 (in every question the user asked) or
# the 用什 and 么编 that straddle it. Longest first, as the alternation is tried in order.
_ZH_QUESTION_WORDS = re.compile(
    "为什么|什么|怎么样|怎么|怎样|哪里|哪儿|哪些|哪个|多少|为何|何时|哪|谁|几|吗|呢|啥"
)

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


def tokens(text: str) -> list[str]:
    normal = unicodedata.normalize("NFKC", text).casefold()
    tokens: list[str] = []
    position = 0
    for match in _CJK_RUN.finditer(normal):
        tokens.extend(_WORD.findall(normal[position : match.start()]))
        tokens.extend(_cjk_grams(match.group()))
        position = match.end()
    tokens.extend(_WORD.findall(normal[position:]))
    return tokens


def index_text(text: str, prefix: str = "") -> str:
    """The text FTS5 indexes for a document: words, CJK runs as bigrams, all namespaced."""
    return " ".join(prefix + token for token in tokens(text))


def query_terms(text: str) -> list[str]:
    """Distinct, non-stopword terms of a query in first-seen order."""
    seen: dict[str, None] = {}
    for token in tokens(_ZH_QUESTION_WORDS.sub(" ", text)):
        bare = token.replace("’", "'").split("'")[0]
        if bare and bare not in STOPWORDS and (len(bare) > 1 or _CJK_RUN.match(bare)):
            seen.setdefault(bare, None)
    return list(seen)


def quote_term(term: str) -> str:
    """A term as an FTS5 string literal: never parsed as syntax, whatever it contains."""
    return '"' + term.replace('"', '""') + '"'


_CONSONANTS = (
    "bcdfghjklmnpqrstvwxz"  # no vowels and no "y": porter's measure ignores them
)


def namespace(agent_id: str, scope: str | None = None, key: str | None = None) -> str:
    """The token prefix of an agent's (and scope's) lexical rows: 14 consonants."""
    payload = "\x00".join([agent_id, scope or "", key or ""]).encode()
    number = int.from_bytes(hashlib.blake2b(payload, digest_size=8).digest(), "big")
    letters = []
    for _ in range(14):  # 20**14 > 2**60: collisions are not a practical concern
        number, digit = divmod(number, len(_CONSONANTS))
        letters.append(_CONSONANTS[digit])
    return "".join(letters)
