"""Recurring claims: a first-person sentence stating a repeat ("I have a standup at 9am
every day", "我每周四下午去游泳") becomes a ``recurring`` claim with its
:class:`~cairn.domain.temporal.Recurrence`.

Runs after the per-language rules, on their drafts for the same sentence, in both
languages: a fact, state, plan or event draft whose span holds the repeat pattern becomes
recurring (its time is the recurrence's window, not the single day a weekday would name);
a preference stays a preference ("I hate Mondays"). When no rule drew anything from the
clause, the clause itself is the claim, its subject named ("Ana has a standup at 9am every
day", "Ana每周四下午去游泳"). Questions, hedged, negated, reported and stative sentences
("I'm tired every day", "我每天都很累") yield nothing: a habit is something one does.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import attrs

from cairn.domain.claim import ClaimKind
from cairn.ingestion.extract_common import CONFIDENCE_PLAN, make_draft, split_clauses
from cairn.ingestion.extract_grammar_en import Who, rewrite, third
from cairn.ingestion.temporal_candidate import recurrence_window
from cairn.ingestion.temporal_recurrence import find_recurrence, might_recur

if TYPE_CHECKING:
    from cairn.domain.claim import ClaimDraft
    from cairn.ingestion.extract_common import Sentence
    from cairn.ingestion.temporal_recurrence import RecurrenceMatch

__all__ = ["with_recurrence"]

_CONVERTIBLE = frozenset(
    {ClaimKind.FACT, ClaimKind.STATE, ClaimKind.PLAN, ClaimKind.EVENT}
)

_F = re.IGNORECASE
_EN_NOT_A_HABIT = re.compile(
    r"\b(?:if|would|could|might|maybe|perhaps|should|wish|hope|think|thought|guess|"
    r"wonder|imagine|unless|whether|supposed|said|says|told|asked|never|not|no\s+longer|"
    r"don['’]?t|doesn['’]?t|didn['’]?t|won['’]?t|can['’]?t|cannot|used\s+to)\b|[\"“”]",
    _F,
)
# A colon between digits is a clock time ("7:30"), not a clause break.
_EN_CLAUSE_BREAK = re.compile(
    r"\s*(?:[;()\[\]—–]|(?<!\d):|:(?!\d))\s*|\s*,?\s+(?:and|but|so|because|while|then|plus)\s+"
    r"(?=(?:i|my|we)\b)",
    _F,
)
_EN_DISCOURSE = re.compile(
    r"(?:(?:oh|well|yeah|yes|actually|honestly|so|and|but|also|btw|anyway|ok|okay|"
    r"by\s+the\s+way|fun\s+fact)\b[\s,!.:]*)+",
    _F,
)
# "I [usually] <verb> ...": the verb decides whether it is a habit at all.
_EN_SUBJECT = re.compile(
    r"\b(?-i:I)\s+(?P<adv>(?:(?:usually|always|often|normally|generally|typically|still|"
    r"also|now|regularly)\s+)+)?(?P<verb>[a-z]+)\b(?P<rest>.*)",
    _F,
)
_EN_STATIVE = frozenset(
    {
        "am", "was", "feel", "felt", "get", "got", "want", "wanted", "need", "needed",
        "like", "love", "hate", "enjoy", "prefer", "mean", "plan", "try", "tried",
        "will", "may", "must", "can", "had", "did", "went", "used", "forgot",
    }
)  # fmt: skip
_ZH_NOT_A_HABIT = re.compile(
    r"如果|要是|假如|可能|也许|大概|应该|希望|想要|想|打算|觉得|认为|好像|听说|据说|说过|"
    r"不|没|别|很|太|挺|好累|[他她]说|[“”「」\"]"
)
_ZH_CLAUSE_BREAK = re.compile(r"\s*(?:[，,；;]|(?<!\d)[：:]|[：:](?!\d))\s*")
_ZH_DISCOURSE = re.compile(
    r"(?:(?:其实|另外|还有|而且|但是|不过|所以|然后|对了|嗯+|哦+|说实话|老实说|最近)[，,！!\s]*)+"
)
_ZH_SUBJECT = re.compile(r"我(?!们)")


def with_recurrence(
    sentence: Sentence, drafts: list[ClaimDraft], *, chinese: bool
) -> list[ClaimDraft]:
    """``drafts`` of ``sentence`` with the recurrences it states (see module doc).

    Clause by clause ("I swim every Monday and I run every Friday" states two); a clause's
    end ("until June", "，到年底") may come later in the sentence.
    """
    if sentence.is_question or not might_recur(
        sentence.text, sentence.start, sentence.end
    ):
        return drafts
    hedge = _ZH_NOT_A_HABIT if chinese else _EN_NOT_A_HABIT
    if hedge.search(sentence.text, sentence.start, sentence.end):
        return drafts
    breaks = _ZH_CLAUSE_BREAK if chinese else _EN_CLAUSE_BREAK
    result = list(drafts)
    for start, end in split_clauses(sentence, breaks):
        found = find_recurrence(
            sentence.text,
            sentence.reference,
            sentence.timezone,
            start=start,
            end=end,
            until_end=sentence.end,
        )
        if found is None:
            continue
        window = recurrence_window(found.recurrence)
        covering = [
            index for index, draft in enumerate(result) if _covers(draft, found)
        ]
        for index in covering:
            if result[index].kind in _CONVERTIBLE:
                result[index] = attrs.evolve(
                    result[index],
                    kind=ClaimKind.RECURRING,
                    temporal=window,
                    recurrence=found.recurrence,
                )
        if covering:
            continue
        own = (_zh_claim if chinese else _en_claim)(sentence, start, end, found)
        if own is not None:
            result.append(
                attrs.evolve(own, temporal=window, recurrence=found.recurrence)
            )
    return result


def _covers(draft: ClaimDraft, found: RecurrenceMatch) -> bool:
    return any(
        span.start < found.end and found.start < span.end for span in draft.spans
    )


def _en_claim(
    sentence: Sentence, start: int, end: int, found: RecurrenceMatch
) -> ClaimDraft | None:
    text = sentence.text
    if discourse := _EN_DISCOURSE.match(text, start, end):
        start = discourse.end()
    subject = _EN_SUBJECT.search(text, start, end)
    if subject is None or subject["verb"].lower() in _EN_STATIVE:
        return None
    lead = text[start : subject.start()].strip(" ,")
    if lead and found.start != start:
        # "After work I ...": the subject opens the clause or follows the repeat.
        return None
    rest = rewrite(
        subject["rest"].rstrip(" ,"),
        Who(sentence.display, f"{sentence.display}'s", plural=False),
    )
    if rest is None:
        return None
    adverb = " ".join((subject["adv"] or "").split())
    words = [sentence.display, *([adverb] if adverb else []), third(subject["verb"])]
    claim = " ".join(words) + rest
    if lead:
        claim += " " + lead[0].lower() + lead[1:]
    return make_draft(
        sentence, ClaimKind.RECURRING, claim, [(start, end)], CONFIDENCE_PLAN
    )


def _zh_claim(
    sentence: Sentence, start: int, end: int, found: RecurrenceMatch
) -> ClaimDraft | None:
    text = sentence.text
    if discourse := _ZH_DISCOURSE.match(text, start, end):
        start = discourse.end()
    subject = _ZH_SUBJECT.search(text, start, end)
    # 我 opens the clause ("我每周四...") or follows the repeat ("每周四我...").
    if subject is None or subject.start() not in {start, found.end}:
        return None
    if subject.end() >= end:
        return None
    body = text[start:end].rstrip("啊呀哦哈啦嘛哟~～!！ ")
    claim = body.replace("我", sentence.display, 1)
    if "我" in claim:
        return None
    return make_draft(
        sentence, ClaimKind.RECURRING, claim, [(start, end)], CONFIDENCE_PLAN
    )
