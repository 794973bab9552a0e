"""The built-in rule-based extractor: clear first-person statements to claim drafts.

:class:`RuleExtractor` reads finished turns and proposes :class:`ClaimDraft` values for what
a careful reader would agree the user said about themselves: preferences, personal facts,
dated plans and past events, state changes (with ``subject``/``predicate`` so a later claim
can supersede an earlier one, e.g. ``("Ana", "lives_in")``) and explicit "remember that"
requests, in English and Chinese. Precision beats recall: questions, hedged or
hypothetical sentences and reported speech yield nothing.

Only ``Role.USER`` text is read. Assistant, tool and event turns yield no claims from this
extractor: the validator lets assistant text become memory only through a cited span, and
rules cannot tell an assistant's paraphrase of the user from its own suggestions.

Every draft cites at least one :class:`SourceSpan` such that ``event.text[start:end]`` is
the verbatim support (tests/ingestion/test_extract.py::test_spans_are_verbatim_substrings);
``subject`` is the speaker when known, else ``"user"``. Pure ``re`` with precompiled
patterns, no I/O: safe to run in a worker thread.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs

from cairn.domain.evidence import Role
from cairn.domain.ids import EventId, SessionId
from cairn.ingestion import patterns_en, patterns_zh
from cairn.ingestion.extract_common import Sentence, split_sentences
from cairn.ingestion.extract_recurring import with_recurrence

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.domain.claim import ClaimDraft

__all__ = ["ExtractionInput", "RuleExtractor"]

_CJK = re.compile(r"[\u3400-\u9fff]")
_UNKNOWN_SPEAKER = "user"
_UNKNOWN_DISPLAY_EN = "The user"
_UNKNOWN_DISPLAY_ZH = "用户"


def _aware(
    _: object, attribute: attrs.Attribute[dt.datetime], value: dt.datetime
) -> None:
    if value.utcoffset() is None:
        raise ValueError(f"{attribute.name} must be timezone-aware")


@attrs.frozen
class ExtractionInput:
    """One evidence event as the extractor sees it."""

    event_id: EventId
    role: Role
    text: str
    occurred_at: dt.datetime = attrs.field(validator=_aware)
    speaker: str | None
    session_id: SessionId


@attrs.frozen
class RuleExtractor:
    """Rule-based extraction of user claims; stateless and thread-safe."""

    def extract(
        self, events: Sequence[ExtractionInput], timezone: str = "UTC"
    ) -> list[ClaimDraft]:
        """Drafts for ``events`` in order; the same claim twice becomes one citing both.

        ``timezone`` is the IANA zone relative dates are counted in ("tomorrow" is the
        next local day after each event's own ``occurred_at``). Raises ``ValueError`` for an
        unknown zone; never raises because of odd text.
        """
        try:
            ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError) as error:
            raise ValueError(f"unknown IANA timezone {timezone!r}") from error
        merged: dict[tuple[object, ...], ClaimDraft] = {}
        for event in events:
            if event.role is not Role.USER:
                continue
            for draft in _extract_event(event, timezone):
                identity = (
                    draft.kind,
                    draft.text,
                    draft.subject,
                    draft.predicate,
                    draft.temporal,
                )
                if (earlier := merged.get(identity)) is not None:
                    spans = tuple(dict.fromkeys(earlier.spans + draft.spans))
                    merged[identity] = attrs.evolve(earlier, spans=spans)
                else:
                    merged[identity] = draft
        return list(merged.values())


def _extract_event(event: ExtractionInput, timezone: str) -> list[ClaimDraft]:
    speaker = (event.speaker or "").strip()
    drafts: list[ClaimDraft] = []
    for start, end, terminal in split_sentences(event.text):
        chinese = _CJK.search(event.text, start, end) is not None
        display = speaker or (_UNKNOWN_DISPLAY_ZH if chinese else _UNKNOWN_DISPLAY_EN)
        sentence = Sentence(
            event_id=event.event_id,
            text=event.text,
            start=start,
            end=end,
            terminal=terminal,
            subject=speaker or _UNKNOWN_SPEAKER,
            display=display,
            reference=event.occurred_at,
            timezone=timezone,
        )
        rules = patterns_zh if chinese else patterns_en
        found = rules.extract_sentence(sentence)
        drafts.extend(with_recurrence(sentence, found, chinese=chinese))
    return drafts
