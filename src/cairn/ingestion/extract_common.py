"""Shared machinery of the rule extractor: sentences, time choice, spans, drafts.

A :class:`Sentence` is one sentence of one user event plus everything a rule needs to turn a
match into a :class:`~cairn.domain.claim.ClaimDraft`: the subject, the evidence timestamp
and zone. Every draft's spans are offsets into the event's original text, trimmed of
surrounding blanks and separators, so ``event.text[start:end]`` is the verbatim support
(tests/ingestion/test_extract.py::test_spans_are_verbatim_substrings).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator, Sequence

import attrs

from cairn.domain.claim import ClaimDraft, ClaimKind, SourceSpan
from cairn.domain.ids import EventId
from cairn.domain.temporal import TemporalSpan
from cairn.ingestion.temporal import Direction, TemporalMatch, find_times

__all__ = [
    "CONFIDENCE_FACT",
    "CONFIDENCE_PLAN",
    "CONFIDENCE_REMEMBER",
    "PatternChain",
    "Sentence",
    "TimeCheck",
    "is_future",
    "is_not_future",
    "is_not_past",
    "key",
    "make_draft",
    "open_ended",
    "split_clauses",
    "split_sentences",
]

CONFIDENCE_REMEMBER = 0.95  # "remember that ...", "请记住..."
CONFIDENCE_FACT = 0.85  # preferences, personal facts, states
CONFIDENCE_PLAN = 0.8  # plans and dated past events

# A sentence ends at CJK terminal punctuation, ! and ?, a full stop followed by a blank or
# the end (not "3.5"), a semicolon or a line break; closing quotes stay with the sentence.
_SENTENCE_END = re.compile(r"(?:[。！？；!?…]+|\.+(?=[\s\"'”’)」]|$)|;)[\"'”’)」]*|\n+")
# A full stop after these is an abbreviation or an initial, not a sentence end.
_ABBREVIATION = re.compile(
    r"(?:\b(?i:mr|mrs|ms|dr|st|jr|sr|prof|vs|etc|approx|mt|ft|ave|inc|ltd|no|e\.g|i\.e)"
    r"|\b[A-Z])$"
)
# What a time expression can start with: spares finding times for "我喜欢..." or "I love".
_TIME_START = re.compile(
    r"[今明昨前后大上下这本周星礼去\d〇零一二两三四五六七八九十]|(?i:today|tonight|tomorrow|tmr|"
    r"yesterday|last|next|this|coming|on|in|the|over|at|during|early|late|mid|an?\b|one|"
    r"two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|previous|past|monday|"
    r"tuesday|wednesday|thursday|friday|saturday|sunday|jan|feb|mar|apr|may|jun|jul|aug|"
    r"sep|oct|nov|dec)"
)
_TRIM = " \t\r\n\u3000,;:，；：、-–—"
_TERMINAL = "。！？；!?….;\"'”’)」 \t\r\n\u3000"


@attrs.frozen
class Sentence:
    """One sentence of a user event: ``text[start:end]`` without its terminal punctuation."""

    event_id: EventId
    text: str
    start: int
    end: int
    terminal: str
    subject: str
    display: str
    reference: dt.datetime
    timezone: str
    # Time expressions of the whole sentence per preferred direction, found once: rules ask
    # for them clause by clause and the normaliser is the extractor's hottest path.
    _times: dict[str, list[TemporalMatch]] = attrs.field(
        factory=dict, init=False, eq=False, repr=False
    )

    @property
    def body(self) -> str:
        return self.text[self.start : self.end]

    @property
    def is_question(self) -> bool:
        return "?" in self.terminal or "？" in self.terminal

    def times(self, start: int, end: int, prefer: Direction) -> list[TemporalMatch]:
        """The sentence's time expressions lying inside ``[start, end)``."""
        found = self._times.get(prefer)
        if found is None:
            found = self._times[prefer] = find_times(
                self.text,
                self.reference,
                self.timezone,
                prefer=prefer,
                start=self.start,
                end=self.end,
            )
        return [match for match in found if start <= match.start and match.end <= end]

    def leading_time(self, position: int, end: int) -> TemporalMatch | None:
        """A time expression starting exactly at ``position`` ("Tomorrow I ...", "明天我...")."""
        if not _TIME_START.match(self.text, position, end):
            return None
        for match in self.times(position, end, "future"):
            if match.start == position:
                return match
        return None

    def choose_time(
        self,
        start: int,
        end: int,
        prefer: Direction,
        accept: TimeCheck,
        *,
        clause_only: bool = False,
    ) -> TemporalMatch | None:
        """The first acceptable time in ``[start, end)``, else anywhere in the sentence."""
        windows = (
            [(start, end)] if clause_only else [(start, end), (self.start, self.end)]
        )
        for window in windows:
            for match in self.times(*window, prefer):
                if accept(match.span, self.reference):
                    return match
        return None

    def span(self, start: int, end: int) -> SourceSpan | None:
        """A trimmed span of the event text, or ``None`` if nothing is left."""
        text = self.text
        while start < end and (text[start] in _TRIM or text[start].isspace()):
            start += 1
        while end > start and (text[end - 1] in _TRIM or text[end - 1].isspace()):
            end -= 1
        return SourceSpan(self.event_id, start, end) if end > start else None


TimeCheck = Callable[[TemporalSpan, dt.datetime], bool]


class PatternChain:
    """Ordered patterns tried at one position, first match first.

    One alternation of the patterns (group names made unique) finds the first pattern that
    matches in a single pass of the regex engine instead of one Python call per pattern;
    alternatives are tried left to right, so it is the pattern a loop would find. The
    winner is matched on its own for its named groups. A caller whose condition rejects it
    continues with the alternation of the patterns after it (compiled on first use).
    """

    def __init__(self, patterns: Sequence[re.Pattern[str]]) -> None:
        self._patterns = tuple(patterns)
        flags = {pattern.flags & re.IGNORECASE for pattern in self._patterns}
        if len(flags) > 1:
            raise ValueError(
                "a pattern chain needs patterns with the same IGNORECASE flag"
            )
        self._flags = flags.pop() if flags else 0
        self._suffixes: dict[int, re.Pattern[str]] = {}

    def _suffix(self, first: int) -> re.Pattern[str]:
        """The alternation of ``patterns[first:]``; group ``p<i>`` is pattern ``i``."""
        combined = self._suffixes.get(first)
        if combined is None:
            parts = []
            for index in range(first, len(self._patterns)):
                source = self._patterns[index].pattern
                source = re.sub(r"\(\?P<(\w+)>", rf"(?P<p{index}_\1>", source)
                source = re.sub(r"\(\?P=(\w+)\)", rf"(?P=p{index}_\1)", source)
                parts.append(f"(?P<p{index}>{source})")
            combined = self._suffixes[first] = re.compile("|".join(parts), self._flags)
        return combined

    def matches(
        self, text: str, start: int, end: int
    ) -> Iterator[tuple[int, re.Match[str]]]:
        """``(index, match)`` of each pattern matching at ``start``, in order."""
        first = 0
        while first < len(self._patterns):
            hit = self._suffix(first).match(text, start, end)
            if hit is None or hit.lastgroup is None:
                return
            index = int(hit.lastgroup[1:])
            match = self._patterns[index].match(text, start, end)
            if (
                match is not None
            ):  # always: the same pattern matched inside the alternation
                yield index, match
            first = index + 1


def is_not_past(span: TemporalSpan, reference: dt.datetime) -> bool:
    """Plans: the time has not entirely passed ("today" still counts)."""
    return span.valid_until is None or span.valid_until > reference


def is_future(span: TemporalSpan, reference: dt.datetime) -> bool:
    """Progressive plans ("I'm flying to Rome ..."): the time starts after the evidence."""
    return span.valid_from is not None and span.valid_from > reference


def is_not_future(span: TemporalSpan, reference: dt.datetime) -> bool:
    """Past events and changes: the time started no later than the evidence."""
    return span.valid_from is not None and span.valid_from <= reference


def open_ended(span: TemporalSpan) -> TemporalSpan:
    """A state holds from when it began until superseded: ``[valid_from, None)``."""
    return attrs.evolve(span, valid_until=None)


def split_clauses(
    sentence: Sentence, clause_break: re.Pattern[str]
) -> list[tuple[int, int]]:
    """``(start, end)`` of the clauses of ``sentence`` between ``clause_break`` matches."""
    bounds: list[tuple[int, int]] = []
    start = sentence.start
    for match in clause_break.finditer(sentence.text, sentence.start, sentence.end):
        if match.start() > start:
            bounds.append((start, match.start()))
        start = match.end()
    if sentence.end > start:
        bounds.append((start, sentence.end))
    return bounds


def split_sentences(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, terminal)`` of each non-blank sentence; ``text[start:end]`` is its body."""
    position = 0
    for match in _SENTENCE_END.finditer(text):
        if text[match.start()] == "." and _ABBREVIATION.search(
            text, max(position, match.start() - 6), match.start()
        ):
            continue
        yield from _bounded(text, position, match.end())
        position = match.end()
    yield from _bounded(text, position, len(text))


def _bounded(text: str, start: int, end: int) -> Iterator[tuple[int, int, str]]:
    body_end = end
    while body_end > start and (
        text[body_end - 1] in _TERMINAL or text[body_end - 1].isspace()
    ):
        body_end -= 1
    while start < body_end and text[start].isspace():
        start += 1
    if body_end > start:
        yield start, body_end, text[body_end:end]


_KEY_DROP = re.compile(r"^(?:the|a|an|my)\s+|[^\w\s:'-]+", re.IGNORECASE)


def key(text: str) -> str:
    """A normalised key for predicates: lower case, no article, single spaces."""
    return " ".join(_KEY_DROP.sub("", text.strip().lower()).split())


def make_draft(
    sentence: Sentence,
    kind: ClaimKind,
    text: str,
    ranges: Sequence[tuple[int, int]],
    confidence: float,
    *,
    temporal: TemporalSpan | None = None,
    predicate: str | None = None,
) -> ClaimDraft | None:
    """A draft citing ``ranges`` of the event text (at least one must survive trimming)."""
    spans = tuple(
        dict.fromkeys(
            span
            for start, end in ranges
            if (span := sentence.span(start, end)) is not None
        )
    )
    if not spans or not text.strip():
        return None
    return ClaimDraft(
        kind=kind,
        text=" ".join(text.split()) if " " in text else text,
        spans=spans,
        confidence=confidence,
        temporal=temporal,
        subject=sentence.subject,
        predicate=predicate,
    )
