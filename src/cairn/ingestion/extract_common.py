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
    "Sentence",
    "TimeCheck",
    "is_future",
    "is_not_future",
    "is_not_past",
    "key",
    "make_draft",
    "open_ended",
    "split_sentences",
]

CONFIDENCE_REMEMBER = 0.95  # "remember that ...", "请记住..."
CONFIDENCE_FACT = 0.85  # preferences, personal facts, states
CONFIDENCE_PLAN = 0.8  # plans and dated past events

# A sentence ends at CJK terminal punctuation, ! and ?, a full stop followed by a blank or
# the end (not "3.5"), a semicolon or a line break; closing quotes stay with the sentence.
_SENTENCE_END = re.compile(r"(?:[。！？；!?…]+|\.+(?=[\s\"'”’)」]|$)|;)[\"'”’)」]*|\n+")
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
        windows = [(start, end)] if clause_only else [(start, end), (self.start, self.end)]
        for window in windows:
            for match in self.times(*window, prefer):
                if accept(match.span, self.reference):
                    return match
        return None

    def span(self, start: int, end: int) -> SourceSpan | None:
        """A trimmed span of the event text, or ``None`` if nothing is left."""
        while start < end and self.text[start] in _TRIM:
            start += 1
        while end > start and self.text[end - 1] in _TRIM:
            end -= 1
        return SourceSpan(self.event_id, start, end) if end > start else None


TimeCheck = Callable[[TemporalSpan, dt.datetime], bool]


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


def split_sentences(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, terminal)`` of each non-blank sentence; ``text[start:end]`` is its body."""
    position = 0
    for match in _SENTENCE_END.finditer(text):
        yield from _bounded(text, position, match.end())
        position = match.end()
    yield from _bounded(text, position, len(text))


def _bounded(text: str, start: int, end: int) -> Iterator[tuple[int, int, str]]:
    body_end = end
    while body_end > start and text[body_end - 1] in _TERMINAL:
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
