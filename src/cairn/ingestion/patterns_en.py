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
from collections.abc import Callable

import attrs

from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.domain.temporal import TemporalSpan
from cairn.ingestion.extract_common import (
    CONFIDENCE_FACT,
    CONFIDENCE_PLAN,
    CONFIDENCE_REMEMBER,
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
    EVENT_NOUNS,
    IDENTITIES,
    NUMBER_WORDS,
    OCCUPATIONS,
    PAST_VERBS,
    PETS_AND_FAMILY,
    PROGRESSIVE_VERBS,
    RELATIONS,
    UNCERTAIN_PAST,
)
from cairn.ingestion.temporal import Direction, TemporalMatch

__all__ = ["extract_sentence"]

_F = re.IGNORECASE

# -- sentence filters -------------------------------------------------------------------------

_HEDGE = re.compile(
    r"\b(?:if|would|wouldn['’]?t|could|couldn['’]?t|might|maybe|perhaps|possibly|probably|"
    r"supposing|imagine|wish|unless|whether|hypothetically|pretend|should|"
    r"shouldn['’]?t|ought|someday|hope|hopefully|wonder|wondering|dream|dreamed|dreamt|"
    r"kidding|joking|sarcastic|pretending)\b|\bi['’]d\b|\bwhat\s+if\b|\bnot\s+sure\b|"
    r"\bone\s+day\b|\bi\s+(?:think|thought|believe|guess|suppose|feel\s+like|doubt|suspect|"
    r"bet)\b",
    _F,
)
_REPORTED = re.compile(
    r"\b(?:said|says|told|tells|asked|asks|claims|claimed|wrote|writes|according\s+to)\b"
    r"|[\"“”]",
    _F,
)
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
    r"guess\s+what|by\s+the\s+way|to\s+be\s+honest|tbh|in\s+fact|plus|then)\b[\s,!.:]*)+",
    _F,
)
_WHO = re.compile(
    r"(?P<i>i)(?=[\s'’])|(?P<we>we)(?=[\s'’])"
    r"|(?:my\s+(?P<rel>"
    + RELATIONS
    + r")|(?P<named>(?-i:[A-Z])[a-z]+))\s+and\s+i(?=\s)",
    _F,
)

# -- pattern pieces ---------------------------------------------------------------------------

_AP = "['’]"
_BE = rf"(?:{_AP}m|{_AP}re|\s+am|\s+are)\s+"
_ADV = (
    r"(?P<adv>(?:(?:really|absolutely|totally|truly|just|also|still|genuinely|honestly|"
    r"definitely|seriously|so|kinda|kind\s+of|sort\s+of|actually|especially|"
    r"particularly|always|simply|deeply|quite|finally|officially|already|even|"
    r"very\s+much)\s+)*)"
)
_CUT = (
    r"(?=\s*(?:[,;:()\[\]—–]|\s-\s|$)|\s+(?:because|but|cause|since|though|although|while"
    r"|whereas|which|so\s+that|and\s+then)\b)"
)
_OBJ = r"(?P<obj>[^\s,;:].*?)" + _CUT
_NAME_WORD = r"(?-i:[A-Z])[\w'’-]*"
_NAME = (
    rf"(?P<name>{_NAME_WORD}(?:\s+{_NAME_WORD}){{0,2}})"
    r"(?=\s*(?:[,;:.!)]|$)|\s+(?:and|but|because|so|too)\b)"
)
_NEGATED_START = re.compile(r"(?:not|never|no)\b", _F)
_PRONOUN_OBJECT = re.compile(
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
_RELATIVE_TIME_START = re.compile(
    r"(?:today|tonight|tomorrow|tmrw?|yesterday|next|last|this|in|on|the|earlier|later|"
    r"over|during|early|late|mid)\b",
    _F,
)


@attrs.frozen
class _Who:
    display: str
    possessive: str
    plural: bool


@attrs.frozen
class _Clause:
    """A clause from ``start`` (after discourse words) to ``end``; the predicate starts at
    ``subject_end``."""

    sentence: Sentence
    start: int
    subject_end: int
    end: int
    who: _Who


def _rewrite(fragment: str, who: _Who) -> str | None:
    """Third-person ``fragment``, or ``None`` if a first-person word would remain."""
    if who.plural:
        fragment = _OUR.sub("their", fragment)
        fragment = _US.sub("them", fragment)
    fragment = _MY.sub(who.possessive, fragment)
    fragment = _ME.sub(who.display, fragment)
    return None if _UNRESOLVED.search(fragment) else fragment


def _adv(match: re.Match[str]) -> str:
    words = (match.groupdict().get("adv") or "").split()
    return " ".join(words) + " " if words else ""


def _be(plural: bool) -> str:
    return "are" if plural else "is"


def _third(verb: str, plural: bool = False) -> str:
    """Present tense third person of a single verb ("go" → "goes", "have" → "has")."""
    lower = verb.lower()
    if plural:
        return verb
    if lower in {"have", "do", "go", "be"}:
        return {"have": "has", "do": "does", "go": "goes", "be": "is"}[lower]
    if re.search(r"(?:s|sh|ch|x|z|o)$", lower):
        return verb + "es"
    if re.search(r"[^aeiou]y$", lower):
        return verb[:-1] + "ies"
    return verb + "s"


# -- rule machinery ---------------------------------------------------------------------------

Verb = Callable[[re.Match[str], _Who], str]
Predicate = Callable[[re.Match[str]], str | None]
Check = Callable[[re.Match[str]], bool]


@attrs.frozen
class _TimeNeed:
    prefer: Direction
    accept: TimeCheck
    required: bool = True
    open_ended: bool = False


_PLAN_TIME = _TimeNeed("future", is_not_past)
_STRICT_PLAN_TIME = _TimeNeed("future", is_future)
_EVENT_TIME = _TimeNeed("past", is_not_future)
_SINCE_TIME = _TimeNeed("past", is_not_future, required=False, open_ended=True)


@attrs.frozen
class _Rule:
    pattern: re.Pattern[str]
    kind: ClaimKind
    verb: Verb
    confidence: float = CONFIDENCE_FACT
    time: _TimeNeed | None = None
    predicate: Predicate = lambda _: None
    check: Check = lambda _: True
    plural_ok: bool = False
    kind_for: Callable[[re.Match[str]], ClaimKind] | None = None

    def build(self, match: re.Match[str], clause: _Clause) -> ClaimDraft | None:
        if not self.check(match):
            return None
        sentence = clause.sentence
        obj = match.groupdict().get("obj") or ""
        time: TemporalMatch | None = None
        if self.time is not None:
            time = sentence.choose_time(
                clause.start, clause.end, self.time.prefer, self.time.accept
            )
            if time is None and self.time.required:
                return None
        head = f"{clause.who.display} {self.verb(match, clause.who)}".rstrip()
        rest = _rewrite(obj, clause.who) if obj else ""
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
                text = f"{text} {_time_words(time.text)}"
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


def _time_words(text: str) -> str:
    return text[0].lower() + text[1:] if _RELATIVE_TIME_START.match(text) else text


def _p(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, _F)


def _fixed(words: str) -> Verb:
    return lambda match, _: _adv(match) + words


def _conjugated(singular: str, plural: str) -> Verb:
    return lambda match, who: _adv(match) + (plural if who.plural else singular)


def _not_negated(match: re.Match[str]) -> bool:
    return not _NEGATED_START.match(match["obj"])


def _concrete_object(match: re.Match[str]) -> bool:
    obj = match["obj"].strip()
    return not _PRONOUN_OBJECT.match(obj) and len(obj.split()) <= 20


def _place(match: re.Match[str]) -> bool:
    obj = match["obj"]
    return bool(re.search(r"(?-i:[A-Z])", obj) or re.match(r"(?:a|an|the)\s", obj, _F))


def _lives_in(_: re.Match[str]) -> str:
    return "lives_in"


def _attitude(match: re.Match[str]) -> str:
    return f"attitude:{key(match['obj'])}"


_LIKING = frozenset({"like", "love", "enjoy"})
_DIETS = frozenset({"vegan", "vegetarian", "pescatarian"})


def _habit_predicate(match: re.Match[str]) -> str:
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
    return f"habit:{lowered}"


def _habit_kind(match: re.Match[str]) -> ClaimKind:
    return ClaimKind.PREFERENCE if match["verb"].lower() in _LIKING else ClaimKind.STATE


def _being_predicate(match: re.Match[str]) -> str:
    obj = key(match["obj"])
    last = obj.rsplit(" ", 1)[-1]
    if last in OCCUPATIONS:
        return "occupation"
    return "diet" if last in _DIETS else f"is:{obj}"


def _identity_predicate(match: re.Match[str]) -> str:
    head = match["head"].lower()
    return "occupation" if head in OCCUPATIONS else f"is_a:{head}"


def _is_identity(match: re.Match[str]) -> bool:
    head = match["head"].lower()
    return head in OCCUPATIONS or head in IDENTITIES


def _age(match: re.Match[str]) -> bool:
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


def _dated_past(match: re.Match[str]) -> bool:
    verb = match["verb"].lower()
    rest = (match["obj"] or "").strip()
    if verb in UNCERTAIN_PAST or _NEGATED_START.match(rest):
        return False
    return verb not in {"was", "were"} or bool(re.match(r"(?:at|in)\s", rest, _F))


_NOW = r"(?P<now>(?:now|currently)\s+)?"
_NOW_AT_END = re.compile(r"\s(?:now|these\s+days|at\s+the\s+moment)$", _F)


def _state_if_now(match: re.Match[str]) -> ClaimKind:
    if match.groupdict().get("now") or _NOW_AT_END.search(match["obj"] or ""):
        return ClaimKind.STATE
    return ClaimKind.FACT


_AGE_WORDS = (
    r"\d{1,3}|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[-\s](?:one|two|three|four|five|six|seven|eight|nine))?|"
    + "|".join(NUMBER_WORDS)
)

# Rules after a subject, in priority order: state changes, plans, events, preferences, facts.
_SUBJECT_RULES: tuple[_Rule, ...] = (
    # -- state changes
    _Rule(
        _p(rf"(?:{_AP}ve|\s+have)?\s+{_ADV}moved\s+to\s+" + _OBJ),
        ClaimKind.STATE,
        _fixed("moved to"),
        time=_SINCE_TIME,
        predicate=_lives_in,
        check=_place,
        plural_ok=True,
    ),
    _Rule(
        _p(r"\s+no\s+longer\s+(?P<verb>[a-z]+)(?P<obj>(?:\s+.*?)?)" + _CUT),
        ClaimKind.STATE,
        lambda match, _: f"no longer {_third(match['verb'])}",
        predicate=_habit_predicate,
        kind_for=_habit_kind,
    ),
    _Rule(
        _p(
            rf"\s+(?:don{_AP}?t|do\s+not)\s+(?P<verb>[a-z]+)(?P<obj>(?:\s+.*?)?)"
            r"\s+any\s?(?:more|longer)" + _CUT
        ),
        ClaimKind.STATE,
        lambda match, _: f"no longer {_third(match['verb'])}",
        predicate=_habit_predicate,
        kind_for=_habit_kind,
    ),
    _Rule(
        _p(rf"(?:{_AP}m|\s+am)\s+no\s+longer\s+" + _OBJ),
        ClaimKind.STATE,
        _fixed("is no longer"),
        predicate=_being_predicate,
    ),
    _Rule(
        _p(
            rf"(?:{_AP}ve|\s+have)?\s+{_ADV}(?:started|began|got|landed|accepted)\s+"
            r"(?P<what>(?:a\s+|my\s+)?(?:new\s+)?(?:job|position|role)|working)\s+"
            r"(?P<prep>at|for|as|with)\s+" + _OBJ
        ),
        ClaimKind.STATE,
        lambda match, _: (
            _adv(match)
            + "started "
            + ("working" if match["what"] == "working" else "a new job")
            + f" {match['prep']}"
        ),
        time=_SINCE_TIME,
        predicate=lambda match: (
            "occupation" if match["prep"].lower() == "as" else "works_at"
        ),
    ),
    _Rule(
        _p(
            rf"(?:{_AP}ve|\s+have)?\s+{_ADV}(?:quit|left)\s+my\s+job(?:\s+(?:at|with)\s+{_OBJ})?"
        ),
        ClaimKind.STATE,
        lambda match, who: (
            _adv(match) + f"quit {who.possessive} job" + (" at" if match["obj"] else "")
        ),
        time=_SINCE_TIME,
        predicate=lambda _: "works_at",
    ),
    _Rule(
        _p(
            rf"(?:{_AP}m\s+now|\s+am\s+now|\s+became|{_AP}ve\s+become|\s+have\s+become)\s+"
            r"(?P<obj>(?:a|an)\s+(?:[\w'’-]+\s+){0,3}?(?P<head>[a-z-]+))" + _CUT
        ),
        ClaimKind.STATE,
        _fixed("is now"),
        time=_SINCE_TIME,
        predicate=_identity_predicate,
        check=_is_identity,
    ),
    _Rule(
        _p(rf"(?:{_BE}|\s+){_NOW}(?:living|live)\s+in\s+" + _OBJ),
        ClaimKind.FACT,
        lambda match, _: ("now " if match["now"] else "") + "lives in",
        predicate=_lives_in,
        check=_place,
        kind_for=_state_if_now,
    ),
    # -- plans
    _Rule(
        _p(rf"{_BE}{_ADV}(?:going\s+to|gonna)\s+" + _OBJ),
        ClaimKind.PLAN,
        lambda match, who: f"{_be(who.plural)} {_adv(match)}going to",
        time=_PLAN_TIME,
        check=_not_negated,
        plural_ok=True,
    ),
    _Rule(
        _p(rf"(?:{_AP}ll|\s+will)\s+{_ADV}" + _OBJ),
        ClaimKind.PLAN,
        _fixed("will"),
        time=_PLAN_TIME,
        check=_not_negated,
        plural_ok=True,
    ),
    _Rule(
        _p(
            rf"{_BE}{_ADV}(?P<verb>planning|scheduled|due|set)\s+(?P<prep>to|on)\s+"
            + _OBJ
        ),
        ClaimKind.PLAN,
        lambda match, who: (
            f"{_be(who.plural)} {_adv(match)}{match['verb']} {match['prep']}"
        ),
        time=_PLAN_TIME,
        check=_not_negated,
        plural_ok=True,
    ),
    _Rule(
        _p(
            rf"(?:\s+|{_AP}ve\s+|\s+have\s+){_ADV}(?P<verb>plan|intend|decided)\s+to\s+"
            + _OBJ
        ),
        ClaimKind.PLAN,
        lambda match, who: (
            _adv(match)
            + (
                match["verb"]
                if who.plural or match["verb"] == "decided"
                else _third(match["verb"])
            )
            + " to"
        ),
        time=_PLAN_TIME,
        plural_ok=True,
    ),
    _Rule(
        _p(
            rf"{_BE}{_ADV}(?P<verb>{PROGRESSIVE_VERBS})\b(?:\s+(?P<obj>[^\s,;:].*?))?"
            + _CUT
        ),
        ClaimKind.PLAN,
        lambda match, who: f"{_be(who.plural)} {_adv(match)}{match['verb']}",
        time=_STRICT_PLAN_TIME,
        plural_ok=True,
    ),
    _Rule(
        _p(
            rf"(?:\s+have|{_AP}ve\s+got|\s+have\s+got)\s+(?P<obj>(?:a|an|my|the|another|"
            rf"two|three)\s+(?:[\w'’-]+\s+){{0,3}}?(?:{EVENT_NOUNS})s?\b.*?)" + _CUT
        ),
        ClaimKind.PLAN,
        _conjugated("has", "have"),
        time=_PLAN_TIME,
        plural_ok=True,
    ),
    # -- dated past events
    _Rule(
        _p(
            r"\s+(?P<adv>(?:(?:just|finally|also|actually|recently|first|already|even|"
            rf"once)\s+)*)(?P<verb>{PAST_VERBS}|[a-z]{{2,}}ed|was|were)\b"
            r"(?P<obj>(?:\s+.*?)?)" + _CUT
        ),
        ClaimKind.EVENT,
        lambda match, _: _adv(match) + match["verb"],
        time=_EVENT_TIME,
        check=_dated_past,
        plural_ok=True,
    ),
    # -- preferences
    _Rule(
        _p(
            rf"\s+{_ADV}(?P<verb>like|love|enjoy|adore|prefer|hate|dislike|detest|loathe|"
            rf"can{_AP}?t\s+stand|cannot\s+stand)\s+" + _OBJ
        ),
        ClaimKind.PREFERENCE,
        lambda match, _: (
            _adv(match)
            + (match["verb"] if " " in match["verb"] else _third(match["verb"]))
        ),
        predicate=_attitude,
        check=_concrete_object,
    ),
    _Rule(
        _p(
            r"\s+(?P<pre>(?:really|just|honestly|absolutely|truly|generally|usually)\s+)?"
            rf"(?:don{_AP}?t|do\s+not)\s+{_ADV}(?P<verb>like|love|enjoy|care\s+for|eat|"
            r"drink|smoke)\s+" + _OBJ
        ),
        ClaimKind.PREFERENCE,
        lambda match, _: f"{match['pre'] or ''}doesn't {_adv(match)}{match['verb']}",
        predicate=_attitude,
        check=_concrete_object,
        kind_for=lambda match: (
            ClaimKind.FACT
            if match["verb"].lower() in {"eat", "drink", "smoke"}
            else ClaimKind.PREFERENCE
        ),
    ),
    _Rule(
        _p(
            rf"(?:{_AP}m|\s+am)\s+{_ADV}(?P<neg>not\s+(?:really\s+)?)?(?P<what>(?:a|an|such\s+a)"
            r"\s+(?:(?:big|huge|great|massive|total|real)\s+)?fan\s+of|into|passionate\s+about|"
            r"obsessed\s+with|crazy\s+about|keen\s+on|fond\s+of|interested\s+in|"
            r"addicted\s+to)\s+" + _OBJ
        ),
        ClaimKind.PREFERENCE,
        lambda match, _: (
            f"is {_adv(match)}{match['neg'] or ''}{' '.join(match['what'].split())}"
        ),
        predicate=_attitude,
        check=_concrete_object,
    ),
    # -- personal facts
    _Rule(
        _p(
            rf"(?:{_AP}m|\s+am)\s+(?P<adv>(?:severely|very|really|deathly|highly|also)\s+)?allergic\s+to\s+"
            + _OBJ
        ),
        ClaimKind.FACT,
        _fixed("is allergic to"),
        predicate=lambda match: f"allergic_to:{key(match['obj'])}",
    ),
    _Rule(
        _p(
            rf"(?:{_AP}m|\s+am)\s+{_NOW}(?P<adv>(?:also|strictly|fully|a)\s+)?"
            r"(?P<obj>vegan|vegetarian|pescatarian|gluten-free|lactose\s+intolerant|sober)"
            + _CUT
        ),
        ClaimKind.FACT,
        lambda match, _: (
            ("now " if match["now"] else "")
            + "is"
            + (" a" if "a" in _adv(match).split() else "")
        ),
        predicate=lambda _: "diet",
        kind_for=_state_if_now,
    ),
    _Rule(
        _p(
            rf"(?:{_AP}m|\s+am)\s+(?P<adv>(?:also|actually|still|currently)\s+)?"
            r"(?P<obj>(?:a|an)\s+(?:[\w'’-]+\s+){0,3}?(?P<head>[a-z-]+)"
            r"(?:\s+(?:at|for|in|with|from|of|on)\s+.*?)?)" + _CUT
        ),
        ClaimKind.FACT,
        _fixed("is"),
        predicate=_identity_predicate,
        check=_is_identity,
    ),
    _Rule(
        _p(r"\s+" + _NOW + r"work\s+(?P<prep>at|for|as|in)\s+" + _OBJ),
        ClaimKind.FACT,
        lambda match, _: ("now " if match["now"] else "") + f"works {match['prep']}",
        predicate=lambda match: {"as": "occupation", "in": "works_in"}.get(
            match["prep"].lower(), "works_at"
        ),
        kind_for=_state_if_now,
    ),
    _Rule(
        _p(
            rf"(?:\s+have|{_AP}ve\s+got|\s+have\s+got)\s+(?P<obj>(?:a|an|one|two|three|four|"
            rf"five|six|\d+)\s+(?:[\w'’-]+\s+){{0,3}}?(?P<head>{PETS_AND_FAMILY})(?:e?s)?"
            r"(?:\s*,?\s+(?:named|called)\s+(?-i:[A-Z])[\w'’-]*(?:(?:\s*,\s*|\s+and\s+)"
            r"(?-i:[A-Z])[\w'’-]*){0,5})?)"
            r"(?=\s*(?:[,;:.!)]|$)|\s+(?:and|who|that|which|at|in|from|too|as\s+well)\b)"
        ),
        ClaimKind.FACT,
        _fixed("has"),
        predicate=lambda match: f"has:{match['head'].lower()}",
    ),
    _Rule(
        _p(
            rf"(?:{_AP}m|\s+am)\s+(?:now\s+)?(?P<n>{_AGE_WORDS})(?:\s+years?|\s+yrs?)\s+old\b"
        ),
        ClaimKind.FACT,
        lambda match, _: f"is {match['n']} years old",
        predicate=lambda _: "age",
        check=_age,
    ),
    _Rule(
        _p(rf"(?:{_AP}m|\s+am)\s+(?:originally\s+)?from\s+" + _OBJ),
        ClaimKind.FACT,
        _fixed("is from"),
        predicate=lambda _: "from",
        check=_place,
    ),
    _Rule(
        _p(r"\s+was\s+born\s+(?:and\s+raised\s+)?in\s+" + _OBJ),
        ClaimKind.FACT,
        _fixed("was born in"),
        predicate=lambda _: "born_in",
        check=_place,
    ),
    _Rule(
        _p(rf"(?:{_AP}m|\s+am)\s+called\s+" + _NAME),
        ClaimKind.FACT,
        lambda match, _: f"is called {match['name']}",
        predicate=lambda _: "name",
    ),
)

# Rules at the clause start ("my ...", "call me ...") for the speaker alone.
_HEAD_RULES: tuple[_Rule, ...] = (
    _Rule(
        _p(r"my\s+name\s+is\s+" + _NAME),
        ClaimKind.FACT,
        lambda match, _: f"name is {match['name']}",
        predicate=lambda _: "name",
    ),
    _Rule(
        _p(r"(?:you\s+can\s+|please\s+|just\s+)?call\s+me\s+" + _NAME),
        ClaimKind.FACT,
        lambda match, _: f"goes by {match['name']}",
        predicate=lambda _: "nickname",
    ),
    _Rule(
        _p(
            r"my\s+(?P<adv>(?:all[-\s]time|absolute|very|most)\s+)?(?P<fav>favou?rite)\s+"
            r"(?P<cat>[\w'’ -]{1,40}?)\s+(?P<be>is|are|has\s+to\s+be)\s+" + _OBJ
        ),
        ClaimKind.PREFERENCE,
        lambda match, _: f"{_adv(match)}{match['fav']} {match['cat']} {match['be']}",
        predicate=lambda match: f"favourite:{key(match['cat'])}",
    ),
    _Rule(
        _p(
            r"my\s+(?P<rel>(?:(?:best|older|younger|little|big|baby|twin|step)\s+)?(?:"
            + RELATIONS
            + rf"))(?:{_AP}s\s+name\s+is|\s+is\s+(?:named|called)|{_AP}s\s+called)\s+"
            + _NAME
        ),
        ClaimKind.FACT,
        lambda match, _: f"{match['rel']}'s name is {match['name']}",
        predicate=lambda match: f"name_of:{key(match['rel'])}",
    ),
    _Rule(
        _p(
            r"my\s+(?P<what>birthday|bday|anniversary|wedding\s+anniversary)\s+is\s+"
            + _OBJ
        ),
        ClaimKind.FACT,
        lambda match, _: f"{match['what']} is",
        predicate=lambda match: key(match["what"]).replace(" ", "_"),
    ),
)
_POSSESSIVE_HEADS = {_HEAD_RULES[0], _HEAD_RULES[2], _HEAD_RULES[3], _HEAD_RULES[4]}

_REMEMBER = _p(
    r"(?:(?:please|pls|plz|and|also|so)\s*,?\s+)*(?:(?:can|could|would)\s+you\s+)?"
    rf"(?P<verb>remember|don{_AP}?t\s+forget|do\s+not\s+forget|never\s+forget|"
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


def _clauses(sentence: Sentence) -> list[tuple[int, int]]:
    bounds: list[tuple[int, int]] = []
    start = sentence.start
    for match in _CLAUSE_BREAK.finditer(sentence.text, sentence.start, sentence.end):
        if match.start() > start:
            bounds.append((start, match.start()))
        start = match.end()
    if sentence.end > start:
        bounds.append((start, sentence.end))
    return bounds


def _speaker(sentence: Sentence) -> _Who:
    return _Who(sentence.display, f"{sentence.display}'s", plural=False)


def _who(sentence: Sentence, match: re.Match[str]) -> _Who:
    speaker = _speaker(sentence)
    if match["i"]:
        return speaker
    if match["we"]:
        return _Who(
            f"{sentence.display} and others", f"{sentence.display}'s", plural=True
        )
    partner = f"{speaker.possessive} {match['rel']}" if match["rel"] else match["named"]
    return _Who(
        f"{sentence.display} and {partner}", f"{sentence.display}'s", plural=True
    )


def _clause_claim(sentence: Sentence, start: int, end: int) -> ClaimDraft | None:
    text = sentence.text
    position = _skip_discourse(sentence, start, end)
    span_start = position
    for rule in _HEAD_RULES:
        if match := rule.pattern.match(text, position, end):
            who = _speaker(sentence)
            if rule in _POSSESSIVE_HEADS:
                who = _Who(who.possessive, who.possessive, plural=False)
            return rule.build(match, _Clause(sentence, span_start, position, end, who))
    subject = _WHO.match(text, position, end)
    if subject is None:
        lead = sentence.leading_time(position, end)
        if lead is None:
            return None
        position = lead.end
        while position < end and text[position] in " \t,":
            position += 1
        subject = _WHO.match(text, position, end)
        if subject is None:
            return None
    who = _who(sentence, subject)
    clause = _Clause(sentence, span_start, subject.end(), end, who)
    for rule in _SUBJECT_RULES:
        if who.plural and not rule.plural_ok:
            continue
        match = rule.pattern.match(text, subject.end(), end)
        if match is not None and (draft := rule.build(match, clause)) is not None:
            return draft
    return None


def extract_sentence(sentence: Sentence) -> list[ClaimDraft]:
    """Claims stated in one English sentence (possibly none)."""
    start = _skip_discourse(sentence, sentence.start, sentence.end)
    remembered = _remember(sentence, start)
    if remembered is not None:
        return [remembered]
    body = sentence.body
    if (
        sentence.is_question
        or _QUESTION_START.match(sentence.text, start, sentence.end)
        or _HEDGE.search(body)
        or _REPORTED.search(body)
    ):
        return []
    drafts: list[ClaimDraft] = []
    for clause_start, clause_end in _clauses(sentence):
        draft = _clause_claim(sentence, clause_start, clause_end)
        if draft is not None:
            drafts.append(draft)
    return drafts
