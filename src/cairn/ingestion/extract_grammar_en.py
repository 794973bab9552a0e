"""English claim grammar: pattern pieces, the rule type and the third-person rewrite.

A :class:`Rule` is one regex matched right after a clause's subject plus how to turn the
match into a draft: the verb phrase for the subject (conjugated from a closed list), the
claim kind, the time it needs (plans a time not yet over, events one already begun,
changes an optional start), the predicate used for supersession and extra checks.
``rewrite`` turns the rest of the clause third-person ("my" → "Caroline's"); when a
first-person word would remain it gives up and the claim quotes the clause instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.ingestion.extract_attributes import (
    plan_key_en,
    preference_predicate,
    uses_predicate,
)
from cairn.ingestion.extract_common import (
    CONFIDENCE_FACT,
    CONFIDENCE_PLAN,
    Sentence,
    TimeCheck,
    is_future,
    is_not_future,
    is_not_past,
    key,
    make_draft,
    open_ended,
)
from cairn.ingestion.extract_lexicon_en import (
    IDENTITIES,
    NUMBER_WORDS,
    OCCUPATIONS,
    UNCERTAIN_PAST,
)
from cairn.ingestion.temporal import Direction, TemporalMatch

if TYPE_CHECKING:
    from cairn.domain.temporal import TemporalSpan

__all__ = [
    "ADV",
    "AGE_WORDS",
    "AP",
    "BE",
    "CUT",
    "EVENT_TIME",
    "NAME",
    "NAME_NOW",
    "NEW_PLAN_TIME",
    "NOW",
    "OBJ",
    "ORG",
    "ORG_NAME",
    "PLAN_TIME",
    "PRONOUN_OBJECT",
    "SINCE_TIME",
    "STRICT_PLAN_TIME",
    "TIME_TAIL",
    "Check",
    "Clause",
    "Predicate",
    "Rule",
    "TimeNeed",
    "Verb",
    "Who",
    "adv",
    "age",
    "attitude",
    "be",
    "being_predicate",
    "compile_en",
    "concrete_object",
    "conjugated",
    "dated_past",
    "fixed",
    "habit_kind",
    "habit_predicate",
    "identity_predicate",
    "is_identity",
    "lives_in",
    "lives_in_or_uses",
    "not_negated",
    "place",
    "place_or_tool",
    "plan_known",
    "plan_predicate",
    "prefer_predicate",
    "rewrite",
    "specific",
    "state_if_now",
    "third",
    "time_words",
    "title",
    "tool_known",
    "tool_predicate",
    "work_predicate",
]

_F = re.IGNORECASE

# -- pattern pieces ---------------------------------------------------------------------------

AP = "['’]"
BE = rf"(?:{AP}m|{AP}re|\s+am|\s+are)\s+"
ADV = (
    r"(?P<adv>(?:(?:really|absolutely|totally|truly|just|also|still|genuinely|honestly|"
    r"definitely|seriously|so|kinda|kind\s+of|sort\s+of|actually|especially|"
    r"particularly|always|simply|deeply|quite|finally|officially|already|even|recently|"
    r"very\s+much)\s+)*)"
)
CUT = (
    r"(?=\s*(?:[,;:()\[\]—–]|\s-\s|$)|\s+(?:because|but|cause|since|though|although|while"
    r"|whereas|which|so\s+that|and\s+then)\b)"
)
OBJ = r"(?P<obj>[^\s,;:].*?)" + CUT
_NAME_WORD = r"(?-i:[A-Z])[\w'’-]*"
NAME = (
    rf"(?P<name>{_NAME_WORD}(?:\s+{_NAME_WORD}){{0,2}})"
    r"(?=\s*(?:[,;:.!)]|$)|\s+(?:and|but|because|so|too)\b)"
)
# A name, optionally followed by "now": "I'm dating Zoe now".
NAME_NOW = (
    rf"(?P<name>{_NAME_WORD}(?:\s+{_NAME_WORD}){{0,2}})"
    r"(?P<tail>\s+(?:now|these\s+days))?"
    r"(?=\s*(?:[,;:.!)]|$)|\s+(?:and|but|because|so|too)\b)"
)
_CAPITAL = re.compile(r"[A-Z]")
_ARTICLE_START = re.compile(r"(?:a|an|the)\s", _F)
_AT_OR_IN = re.compile(r"(?:at|in)\s", _F)
_VAGUE = re.compile(
    r"\b(?:it|this(?!\s+(?:spring|summer|autumn|fall|winter))|that|these(?!\s+days)|"
    r"those|them|him|her|you|there|here)\b",
    _F,
)
_NEGATED_START = re.compile(r"(?:not|never|no)\b", _F)
PRONOUN_OBJECT = re.compile(
    r"(?:it|that|this|them|you|him|her|these|those|one|me|myself|everything|nothing|"
    r"anything|something|when|how|what|to\s+(?:think|say|believe|admit|hear))\b",
    _F,
)

# -- rewriting --------------------------------------------------------------------------------

_MY = re.compile(r"\b(?:my|mine)\b", _F)
_ME = re.compile(r"\b(?:me|myself)\b", _F)
_OUR = re.compile(r"\b(?:our|ours)\b", _F)
_US = re.compile(r"\b(?-i:us|ourselves)\b")
_UNRESOLVED = re.compile(r"\b(?-i:[Ii])\b|\b(?:we|us|our|ours|ourselves)\b(?!\.)", _F)
_PROPER_TIME_START = re.compile(
    r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|"
    r"april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|"
    r"jul|aug|sept?|oct|nov|dec)\b",
    _F,
)


@attrs.frozen
class Who:
    display: str
    possessive: str
    plural: bool


@attrs.frozen
class Clause:
    """A clause from ``start`` (after discourse words) to ``end``; the predicate starts at
    ``subject_end``."""

    sentence: Sentence
    start: int
    subject_end: int
    end: int
    who: Who


def rewrite(fragment: str, who: Who) -> str | None:
    """Third-person ``fragment``, or ``None`` if a first-person word would remain."""
    if who.plural:
        fragment = _OUR.sub("their", fragment)
        fragment = _US.sub("them", fragment)
    fragment = _MY.sub(who.possessive, fragment)
    fragment = _ME.sub(who.display, fragment)
    return None if _UNRESOLVED.search(fragment) else fragment


def adv(match: re.Match[str]) -> str:
    words = (match.groupdict().get("adv") or "").split()
    return " ".join(words) + " " if words else ""


def be(plural: bool) -> str:
    return "are" if plural else "is"


def third(verb: str, plural: bool = False) -> str:
    """Present tense third person of a single verb ("go" → "goes", "have" → "has")."""
    lower = verb.lower()
    if plural:
        return verb
    if lower in {"have", "do", "go", "be"}:
        return {"have": "has", "do": "does", "go": "goes", "be": "is"}[lower]
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if lower.endswith("y") and lower[-2:-1] not in {"a", "e", "i", "o", "u"}:
        return verb[:-1] + "ies"
    return verb + "s"


# -- rule machinery ---------------------------------------------------------------------------

Verb = Callable[[re.Match[str], Who], str]
Predicate = Callable[[re.Match[str]], str | None]
Check = Callable[[re.Match[str]], bool]


@attrs.frozen
class TimeNeed:
    prefer: Direction
    accept: TimeCheck
    required: bool = True
    open_ended: bool = False
    # The time is read from the object alone: "moved from Tuesday to Thursday" is Thursday.
    in_object: bool = False


PLAN_TIME = TimeNeed("future", is_not_past)
STRICT_PLAN_TIME = TimeNeed("future", is_future)
NEW_PLAN_TIME = TimeNeed("future", is_not_past, in_object=True)
EVENT_TIME = TimeNeed("past", is_not_future)
SINCE_TIME = TimeNeed("past", is_not_future, required=False, open_ended=True)


@attrs.frozen
class Rule:
    pattern: re.Pattern[str]
    kind: ClaimKind
    verb: Verb
    confidence: float = CONFIDENCE_FACT
    time: TimeNeed | None = None
    predicate: Predicate = lambda _: None
    check: Check = lambda _: True
    plural_ok: bool = False
    kind_for: Callable[[re.Match[str]], ClaimKind] | None = None

    def build(self, match: re.Match[str], clause: Clause) -> ClaimDraft | None:
        sentence = clause.sentence
        if not self.check(match) or not specific(match, sentence):
            return None
        obj = match.groupdict().get("obj") or ""
        time: TemporalMatch | None = None
        if self.time is not None:
            time = sentence.choose_time(
                match.start("obj") if self.time.in_object else clause.start,
                clause.end,
                self.time.prefer,
                self.time.accept,
                clause_only=self.time.in_object,
            )
            if time is None and self.time.required:
                return None
        head = f"{clause.who.display} {self.verb(match, clause.who)}".rstrip()
        rest = rewrite(obj, clause.who) if obj else ""
        ranges = [(clause.start, match.end())]
        if rest is None:
            text = f"{clause.who.display}: {sentence.text[clause.start : match.end()]}"
        else:
            text = f"{head} {rest}".rstrip()
        temporal: TemporalSpan | None = None
        if time is not None:
            temporal = (
                open_ended(time.span)
                if self.time and self.time.open_ended
                else time.span
            )
            if not clause.subject_end <= time.start < match.end():
                text = f"{text} {time_words(time.text)}"
            if not clause.start <= time.start < match.end():
                ranges.append((time.start, time.end))
        kind = self.kind_for(match) if self.kind_for else self.kind
        confidence = (
            CONFIDENCE_PLAN
            if kind in {ClaimKind.PLAN, ClaimKind.EVENT}
            else self.confidence
        )
        return make_draft(
            sentence,
            kind,
            text,
            ranges,
            confidence,
            temporal=temporal,
            predicate=self.predicate(match),
        )


def time_words(text: str) -> str:
    """A time moved to the end of the claim; sentence-initial capitals go, names stay."""
    return text if _PROPER_TIME_START.match(text) else text[0].lower() + text[1:]


def compile_en(source: str) -> re.Pattern[str]:
    return re.compile(source, _F)


def fixed(words: str) -> Verb:
    return lambda match, _: adv(match) + words


def conjugated(singular: str, plural: str) -> Verb:
    return lambda match, who: adv(match) + (plural if who.plural else singular)


def not_negated(match: re.Match[str]) -> bool:
    return not _NEGATED_START.match(match["obj"])


def concrete_object(match: re.Match[str]) -> bool:
    obj = match["obj"].strip()
    return not PRONOUN_OBJECT.match(obj) and len(obj.split()) <= 20


def specific(match: re.Match[str], sentence: Sentence) -> bool:
    """No pronoun whose referent only the conversation knows ("I'll do it tomorrow").

    Time expressions are left out of the test: "this weekend" is not vague.
    """
    if not match.groupdict().get("obj") or not _VAGUE.search(match["obj"]):
        return True
    start, end = match.span("obj")
    pieces, position = [], start
    for time in sentence.times(start, end, "future"):
        pieces.append(sentence.text[position : time.start])
        position = time.end
    pieces.append(sentence.text[position:end])
    return not any(_VAGUE.search(piece) for piece in pieces)


def place(match: re.Match[str]) -> bool:
    obj = match["obj"]
    return bool(_CAPITAL.search(obj) or _ARTICLE_START.match(obj))


def lives_in(_: re.Match[str]) -> str:
    return "lives_in"


def _old(match: re.Match[str]) -> str | None:
    return match.groupdict().get("old")


def tool_predicate(match: re.Match[str]) -> str | None:
    """``uses:<category>`` of the new tool, else of the one it replaced."""
    return uses_predicate(match["obj"], _old(match))


def tool_known(match: re.Match[str]) -> bool:
    return tool_predicate(match) is not None and concrete_object(match)


def lives_in_or_uses(match: re.Match[str]) -> str:
    """ "I moved to Lisbon" is a home; "I moved over to Neovim" is a tool."""
    return tool_predicate(match) or "lives_in"


def place_or_tool(match: re.Match[str]) -> bool:
    return place(match) or tool_predicate(match) is not None


def prefer_predicate(match: re.Match[str]) -> str:
    return preference_predicate(match["obj"]) or attitude(match)


def plan_known(match: re.Match[str]) -> bool:
    return plan_predicate(match) is not None


_TITLE_HEADS = frozenset({"lead", "head", "vp", "partner", "supervisor", "principal"})


def title(match: re.Match[str]) -> bool:
    head = match["head"].lower()
    return head in OCCUPATIONS or head in _TITLE_HEADS


def plan_predicate(match: re.Match[str]) -> str | None:
    """``plan:<event>`` when the plan names an event ("the dentist" → ``plan:dentist``)."""
    groups = match.groupdict()
    event = plan_key_en(groups.get("event") or groups.get("obj") or "")
    return f"plan:{event}" if event else None


def attitude(match: re.Match[str]) -> str:
    return f"attitude:{key(match['obj'])}"


_LIKING = frozenset({"like", "love", "enjoy"})
_DIETS = frozenset({"vegan", "vegetarian", "pescatarian"})
_EMPLOYER = re.compile(r"\s(?:at|for)\s+(?:the\s+)?[A-Z]")


def work_predicate(prep: str, obj: str) -> str:
    """The attribute of "work <prep> <obj>": "as a nurse" is the occupation, but "as a
    data engineer at Zalando" names the employer, which a change of job changes, so it
    shares the chain of "I now work at Spotify as a staff engineer"."""
    prep = prep.lower()
    if prep == "as":
        return "works_at" if _EMPLOYER.search(obj) else "occupation"
    return "works_in" if prep == "in" else "works_at"


def habit_predicate(match: re.Match[str]) -> str:
    verb = match["verb"].lower()
    obj = key(match["obj"] or "")
    if verb in _LIKING:
        return f"attitude:{obj}"
    lowered = f"{verb} {obj}"
    if lowered.startswith("live in"):
        return "lives_in"
    if lowered.startswith(("work at", "work for")):
        return "works_at"
    if lowered.startswith("work as"):
        return "occupation"
    if verb == "use" and (uses := uses_predicate(match["obj"])) is not None:
        return uses
    return f"habit:{lowered}"


def habit_kind(match: re.Match[str]) -> ClaimKind:
    return ClaimKind.PREFERENCE if match["verb"].lower() in _LIKING else ClaimKind.STATE


def being_predicate(match: re.Match[str]) -> str:
    obj = key(match["obj"])
    if obj.startswith(("working at ", "working for ")):
        return "works_at"
    if obj.startswith("living in "):
        return "lives_in"
    last = obj.rsplit(" ", 1)[-1]
    if last in OCCUPATIONS:
        return "occupation"
    return "diet" if last in _DIETS else f"is:{obj}"


def identity_predicate(match: re.Match[str]) -> str:
    head = match["head"].lower()
    return "occupation" if head in OCCUPATIONS else f"is_a:{head}"


def is_identity(match: re.Match[str]) -> bool:
    head = match["head"].lower()
    return head in OCCUPATIONS or head in IDENTITIES


def age(match: re.Match[str]) -> bool:
    words = re.split(r"[-\s]+", match["n"].lower())
    total = 0
    for word in words:
        if word.isdigit():
            total += int(word)
        elif word in NUMBER_WORDS:
            total += NUMBER_WORDS[word]
        else:
            return False
    return 0 < total < 130


def dated_past(match: re.Match[str]) -> bool:
    verb = match["verb"].lower()
    rest = (match["obj"] or "").strip()
    if verb in UNCERTAIN_PAST or _NEGATED_START.match(rest):
        return False
    return verb not in {"was", "were"} or bool(_AT_OR_IN.match(rest))


NOW = r"(?P<now>(?:now|currently)\s+)?"
_NOW_AT_END = re.compile(r"\s(?:now|these\s+days|at\s+the\s+moment)$", _F)


def state_if_now(match: re.Match[str]) -> ClaimKind:
    if match.groupdict().get("now") or _NOW_AT_END.search(match["obj"] or ""):
        return ClaimKind.STATE
    return ClaimKind.FACT


# An employer: capitalised words ("Stripe", "Acme Corp", "BMW"), then optionally the role
# and when ("as a designer last week"); anything else after the name ("Sarah for lunch")
# is not a job.
ORG_NAME = r"(?-i:[A-Z])[\w&.'’+-]*(?:\s+(?-i:[A-Z0-9&])[\w&.'’+-]*){0,4}"
_MONTHS = (
    r"january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec"
)
_DAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
TIME_TAIL = (
    rf"(?:last|this|earlier\s+this)\s+(?:week|month|year|spring|summer|fall|autumn|"
    rf"winter|{_DAYS})|yesterday|today|recently|(?:a|one|two|three|four|five|six|a\s+few|"
    r"few|several|a\s+couple\s+of)\s+(?:days?|weeks?|months?|years?)\s+ago|"
    rf"(?:back\s+)?in\s+(?:{_MONTHS}|(?:19|20)\d\d)\b(?:\s+\d{{4}})?|on\s+(?:{_DAYS})"
)
_AS_ROLE = r"\s+as\s+(?:a|an|the|their|its)\s+[\w'’ -]{1,40}?"
ORG = rf"(?P<obj>{ORG_NAME}(?:{_AS_ROLE})?(?:\s+(?:{TIME_TAIL}))?(?:{_AS_ROLE})?)" + CUT

AGE_WORDS = (
    r"\d{1,3}|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[-\s](?:one|two|three|four|five|six|seven|eight|nine))?|"
    + "|".join(NUMBER_WORDS)
)

# Rules after a subject, in priority order: state changes, plans, events, preferences, facts.
