"""English rules: clear first-person statements to claim drafts.

A sentence is dropped whole if it is a question, hedged or hypothetical ("if", "would",
"maybe", "I think") or reports someone else's words ("she said", quotes); an explicit
"remember that ..." is kept even when conditional. The rest is cut into clauses at
separators and at conjunctions followed by I/my/we. A clause may open with discourse
words and a time ("Oh, tomorrow I'm ..."), then needs a subject: I, we, "my wife and I",
"Anna and I", or a "my ..." / "call me" head. The first rule that matches after the
subject and whose conditions hold (plans need a future time, events a past one) makes the
claim; rules that describe the speaker alone (preferences, facts) ignore "we".

Claim text names the subject and keeps the clause's words: "I love painting sunsets" by
Caroline is "Caroline loves painting sunsets" (the verb is conjugated from a closed list,
"my" becomes "Caroline's"). When the rest of the clause still says I/we/us the rewrite
is unsafe and the claim reads "Caroline: I ..." verbatim instead.
"""

from __future__ import annotations

import re

from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.ingestion.extract_common import (
    CONFIDENCE_REMEMBER,
    Sentence,
    make_draft,
    split_clauses,
)
from cairn.ingestion.extract_grammar_en import AP, Clause, Who, compile_en
from cairn.ingestion.extract_lexicon_en import RELATIONS
from cairn.ingestion.extract_rules_en import (
    HEAD_RULES,
    MOVED_BY_OTHERS,
    POSSESSIVE_HEADS,
    RESCHEDULED,
    SUBJECT_CHAIN,
    SUBJECT_RULES,
)

__all__ = ["extract_sentence"]

_F = re.IGNORECASE

# -- sentence filters -------------------------------------------------------------------------

# Sentence filters run on ASCII-lower-cased text without IGNORECASE, which Python's re
# evaluates several times faster on long alternations.
_HEDGED_OR_REPORTED = re.compile(
    # hedged or hypothetical
    r"\b(?:if|would|wouldn['’]?t|could|couldn['’]?t|might|maybe|perhaps|possibly|probably|"
    r"supposing|imagine|wish|unless|whether|hypothetically|pretend|should|"
    r"shouldn['’]?t|ought|someday|hope|hopefully|wonder|wondering|dream|dreamed|dreamt|"
    r"kidding|joking|sarcastic|pretending)\b|\bi['’]d\b|\bwhat\s+if\b|\bnot\s+sure\b|"
    r"\bone\s+day\b|\bi\s+(?:think|thought|believe|guess|suppose|feel\s+like|doubt|suspect|"
    r"bet)\b"
    # someone else's words
    r"|\b(?:said|says|told|tells|asked|asks|claims|claimed|wrote|writes|according\s+to)\b"
    r"|[\"“”]"
)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_QUESTION_START = re.compile(
    r"(?:do|does|did|are|is|was|were|can|could|would|will|should|shall|have|has|had|may|"
    r"might|what|why|how|when|where|who|whom|which|whose|isn['’]t|aren['’]t|don['’]t|"
    r"doesn['’]t|didn['’]t|won['’]t|wouldn['’]t|have\s+you|any\s+idea)\b",
    _F,
)

# -- clause structure -------------------------------------------------------------------------

_CLAUSE_BREAK = re.compile(
    r"\s*[,;:()\[\]—–]\s*|\s+-\s+|\s+(?:and|but|so|because|cause|since|though|although|"
    r"while|plus|also|then|and\s+then|and\s+also|but\s+also)\s+(?=(?:i|my|we)\b)",
    _F,
)
_DISCOURSE = re.compile(
    r"(?:(?:oh|ah|well|yeah|yes|yep|yup|actually|honestly|so|and|but|also|btw|anyway|"
    r"anyways|haha+|lol|hey|hi|hello|ok|okay|um+|uh+|wow|great|cool|sure|fun\s+fact|"
    r"guess\s+what|by\s+the\s+way|to\s+be\s+honest|tbh|in\s+fact|plus|then|now|"
    r"nowadays|these\s+days|update)\b[\s,!.:]*)+",
    _F,
)
_WHO = re.compile(
    r"(?P<i>i)(?=[\s'’])|(?P<we>we)(?=[\s'’])"
    r"|(?:my\s+(?P<rel>"
    + RELATIONS
    + r")|(?P<named>(?-i:[A-Z])[a-z]+))\s+and\s+i(?=\s)",
    _F,
)

_FIRST_PERSON = re.compile(r"\b(?:i|my|we|me)\b")  # on lower-cased text
_HEAD_GATE = compile_en(r"my\s|(?:you\s+can\s+|please\s+|just\s+)?call\s+me\s")
# A plan moved without a first-person word ("The dentist got moved to Thursday").
_RESCHEDULE_GATE = compile_en(r"(?:the|our)\s")
# A plan someone else moved ("The dentist moved my appointment to Thursday").
_MOVER_GATE = compile_en(r"(?:the|my|our|they|he|she|someone|somebody)\s")
_RESCHEDULE_WORDS = re.compile(
    r"\b(?:moved|postponed|pushed|rescheduled|bumped|shifted|delayed|changed|put\s+off|"
    r"moving|brought\s+forward|now)\b"
)
_HAS_SUBJECT = compile_en(r"\b(?:i|we)\b")
_LEAD_PREPOSITION = compile_en(r"(?:on|by|at)\s+")

_REMEMBER = compile_en(
    r"(?:(?:please|pls|plz|and|also|so)\s*,?\s+)*(?:(?:can|could|would)\s+you\s+)?"
    rf"(?P<verb>remember|don{AP}?t\s+forget|do\s+not\s+forget|never\s+forget|"
    r"keep\s+in\s+mind|make\s+a\s+note|note\s+down|take\s+note)"
    r"(?:\s+(?:this|that|of\s+this))?(?:\s+that\b|\s*[:,\-–—]|\s+(?=(?:i|my|we|our)\b))"
    r"\s*(?P<obj>\S.*)"
)
_REMEMBER_NOT = re.compile(r"(?:when|to|the\s+time|how|what|where|who|why)\b", _F)


def _remember(sentence: Sentence, position: int) -> ClaimDraft | None:
    match = _REMEMBER.match(sentence.text, position, sentence.end)
    if match is None or _REMEMBER_NOT.match(match["obj"]) or sentence.is_question:
        return None
    return make_draft(
        sentence,
        ClaimKind.FACT,
        f"{sentence.display} asked to remember: {match['obj']}",
        [(position, sentence.end)],
        CONFIDENCE_REMEMBER,
    )


def _skip_discourse(sentence: Sentence, position: int, end: int) -> int:
    match = _DISCOURSE.match(sentence.text, position, end)
    return match.end() if match else position


def _speaker(sentence: Sentence) -> Who:
    return Who(sentence.display, f"{sentence.display}'s", plural=False)


def _who(sentence: Sentence, match: re.Match[str]) -> Who:
    speaker = _speaker(sentence)
    if match["i"]:
        return speaker
    if match["we"]:
        return Who(
            f"{sentence.display} and others", f"{sentence.display}'s", plural=True
        )
    partner = f"{speaker.possessive} {match['rel']}" if match["rel"] else match["named"]
    return Who(
        f"{sentence.display} and {partner}", f"{sentence.display}'s", plural=True
    )


def _head_claim(sentence: Sentence, position: int, end: int) -> ClaimDraft | None:
    for rule in HEAD_RULES:
        if match := rule.pattern.match(sentence.text, position, end):
            who = _speaker(sentence)
            if rule in POSSESSIVE_HEADS:
                who = Who(who.possessive, who.possessive, plural=False)
            return rule.build(match, Clause(sentence, position, position, end, who))
    return None


def _subject_after_time(sentence: Sentence, position: int, end: int) -> int | None:
    """Where the subject starts after a leading time ("Tomorrow, I ...", "On May 5 we ...")."""
    text = sentence.text
    if preposition := _LEAD_PREPOSITION.match(text, position, end):
        lead = sentence.leading_time(position, end) or sentence.leading_time(
            preposition.end(), end
        )
    else:
        lead = sentence.leading_time(position, end)
    if lead is None:
        return None
    position = lead.end
    while position < end and text[position] in " \t,":
        position += 1
    return position


def _clause_claim(sentence: Sentence, start: int, end: int) -> ClaimDraft | None:
    text = sentence.text
    position = _skip_discourse(sentence, start, end)
    span_start = position
    if (
        _MOVER_GATE.match(text, position, end)
        and _RESCHEDULE_WORDS.search(text, position, end)
        and (moved := MOVED_BY_OTHERS.pattern.match(text, position, end))
    ):
        who = _speaker(sentence)
        clause = Clause(
            sentence,
            position,
            position,
            end,
            Who(who.possessive, who.possessive, plural=False),
        )
        if (draft := MOVED_BY_OTHERS.build(moved, clause)) is not None:
            return draft
    if _HEAD_GATE.match(text, position, end):
        return _head_claim(sentence, position, end)
    if _RESCHEDULE_GATE.match(text, position, end) and (
        moved := RESCHEDULED.pattern.match(text, position, end)
    ):
        who = _speaker(sentence)
        clause = Clause(
            sentence,
            position,
            position,
            end,
            Who(who.possessive, who.possessive, plural=False),
        )
        if (draft := RESCHEDULED.build(moved, clause)) is not None:
            return draft
    if not _HAS_SUBJECT.search(text, position, end):
        return None
    subject = _WHO.match(text, position, end)
    if subject is None:
        subject_start = _subject_after_time(sentence, position, end)
        if subject_start is None:
            return None
        subject = _WHO.match(text, subject_start, end)
        if subject is None:
            return None
    who = _who(sentence, subject)
    clause = Clause(sentence, span_start, subject.end(), end, who)
    for index, match in SUBJECT_CHAIN.matches(text, subject.end(), end):
        rule = SUBJECT_RULES[index]
        if who.plural and not rule.plural_ok:
            continue
        if (draft := rule.build(match, clause)) is not None:
            return draft
    return None


def extract_sentence(sentence: Sentence) -> list[ClaimDraft]:
    """Claims stated in one English sentence (possibly none)."""
    start = _skip_discourse(sentence, sentence.start, sentence.end)
    remembered = _remember(sentence, start)
    if remembered is not None:
        return [remembered]
    body = sentence.body.translate(_ASCII_LOWER)
    if (
        not (_FIRST_PERSON.search(body) or _RESCHEDULE_WORDS.search(body))
        or sentence.is_question
        or _QUESTION_START.match(sentence.text, start, sentence.end)
        or _HEDGED_OR_REPORTED.search(body)
    ):
        return []
    drafts: list[ClaimDraft] = []
    for clause_start, clause_end in split_clauses(sentence, _CLAUSE_BREAK):
        draft = _clause_claim(sentence, clause_start, clause_end)
        if draft is not None:
            drafts.append(draft)
    return drafts
