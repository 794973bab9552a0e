"""English rule tables: what may follow a subject (I, we, "my wife and I") or open a
clause ("my name is", "call me"), in priority order: state changes, plans, dated past
events, preferences, personal facts. The first rule whose pattern matches and whose
conditions hold makes the claim (tests/ingestion/test_extract.py).
"""

from __future__ import annotations

import re  # noqa: TC003  (re.Match in annotations the rules evaluate)

from cairn.domain.claim import ClaimKind
from cairn.ingestion.extract_attributes import favourite_category, plan_key_en
from cairn.ingestion.extract_common import PatternChain, key
from cairn.ingestion.extract_grammar_en import (
    ADV,
    AGE_WORDS,
    AP,
    BE,
    CUT,
    EVENT_TIME,
    NAME,
    NAME_NOW,
    NEW_PLAN_TIME,
    NOW,
    OBJ,
    ORG,
    ORG_NAME,
    PLAN_TIME,
    PRONOUN_OBJECT,
    SINCE_TIME,
    STRICT_PLAN_TIME,
    TIME_TAIL,
    Rule,
    Who,
    adv,
    age,
    attitude,
    be,
    being_predicate,
    compile_en,
    concrete_object,
    conjugated,
    dated_past,
    fixed,
    habit_kind,
    habit_predicate,
    identity_predicate,
    is_identity,
    lives_in,
    lives_in_or_uses,
    not_negated,
    place,
    place_or_tool,
    plan_known,
    plan_predicate,
    prefer_predicate,
    rewrite,
    state_if_now,
    third,
    title,
    tool_known,
    tool_predicate,
    work_predicate,
)
from cairn.ingestion.extract_lexicon_en import (
    CHANGE_VERBS,
    EVENT_NOUNS,
    PARTNERS,
    PAST_VERBS,
    PETS_AND_FAMILY,
    PLANNED_HEADS,
    PROGRESSIVE_VERBS,
    RELATIONS,
)

__all__ = [
    "HEAD_RULES",
    "MOVED_BY_OTHERS",
    "POSSESSIVE_HEADS",
    "RESCHEDULED",
    "SUBJECT_CHAIN",
    "SUBJECT_RULES",
]

_PARTNER = compile_en(PARTNERS)
_HAVE = rf"(?:{AP}ve|\s+have)?\s+"
_EVENT = rf"(?:[\w'’-]+\s+){{0,3}}?(?:{PLANNED_HEADS})"


def _now(match: re.Match[str]) -> str:
    groups = match.groupdict()
    return "now " if groups.get("now") or groups.get("tail") else ""


def _state_if_marked(match: re.Match[str]) -> ClaimKind:
    if _now(match):
        return ClaimKind.STATE
    return state_if_now(match) if "obj" in match.groupdict() else ClaimKind.FACT


def _old_rewritten(match: re.Match[str], who: Who) -> str:
    old = " ".join(match["old"].split())
    return rewrite(old, who) or old


def _words_between(match: re.Match[str], first: str, until: str) -> str:
    """The clause's own words from group ``first`` up to group ``until``."""
    return " ".join(match.string[match.start(first) : match.start(until)].split())


# "The dentist got moved to Thursday", "my interview is now on Friday": a planned event
# with its new time, keyed by the event so it supersedes the plan's earlier time.
RESCHEDULED = Rule(
    compile_en(
        rf"(?:the|my|our)\s+(?P<event>{_EVENT})s?\s+(?:(?:has|have|had)\s+been\s+|got\s+|"
        rf"gets\s+|was\s+|were\s+|is\s+(?:being\s+)?|are\s+|{AP}s\s+(?:been\s+)?)?"
        rf"(?P<verb>(?:now\s+)?(?:{CHANGE_VERBS})\s+(?:back\s+|forward\s+|up\s+)?"
        r"(?:from\s+[^,;:]+?\s+)?(?:to|until|till|for)|now\s+(?:on|at|set\s+for)?)\s+"
        + OBJ
    ),
    ClaimKind.PLAN,
    lambda match, _: _words_between(match, "event", "obj"),
    time=NEW_PLAN_TIME,
    predicate=plan_predicate,
    check=plan_known,
)

# "The dentist moved my appointment to Thursday", "they pushed our dinner back to
# Friday": someone else moved the speaker's plan. The plan is the speaker's (my/our/the),
# never the mover's ("he moved his meeting" is not). A professional who moves a generic
# appointment names the plan: the dentist's appointment is ``plan:dentist``.
_MOVER = r"(?:(?:the|my|our)\s+(?P<mover>[\w'’-]+)|they|he|she|someone|somebody)"


def _moved_plan_key(match: re.Match[str]) -> str | None:
    mover, event = match["mover"], match["event"]
    if mover is not None and plan_key_en(event) in {"appointment", "visit", "checkup"}:
        with_mover = plan_key_en(f"{mover} {event}")
        if with_mover is not None and with_mover != plan_key_en(event):
            return f"plan:{with_mover}"
    return plan_predicate(match)


def _moved_plan_text(match: re.Match[str], who: Who) -> str:
    event = " ".join(match["event"].split()[1:])
    mover = match["mover"]
    if mover is not None and _moved_plan_key(match) == f"plan:{plan_key_en(mover)}":
        event = f"{mover} {event}"
    tail = " ".join(match.string[match.end("event") : match.start("obj")].split())
    return f"{event} was {match['verb'].lower()}" + (f" {tail}" if tail else "")


MOVED_BY_OTHERS = Rule(
    compile_en(
        rf"{_MOVER}\s+(?:(?:has|have|had)\s+)?(?:just\s+)?(?P<verb>{CHANGE_VERBS})\s+"
        rf"(?P<event>(?:my|our|the)\s+{_EVENT})s?\s+(?:back\s+|forward\s+|up\s+)?"
        r"(?:from\s+[^,;:]+?\s+)?(?:to|until|till|for)\s+" + OBJ
    ),
    ClaimKind.PLAN,
    _moved_plan_text,
    time=NEW_PLAN_TIME,
    predicate=_moved_plan_key,
    check=lambda match: _moved_plan_key(match) is not None,
)

SUBJECT_RULES: tuple[Rule, ...] = (
    # -- state changes
    # a rescheduled plan: "we pushed the dentist back to Thursday"
    Rule(
        compile_en(
            rf"{_HAVE}{ADV}(?P<verb>{CHANGE_VERBS})\s+(?P<event>(?:the|my|our)\s+{_EVENT})s?"
            r"\s+(?:back\s+|forward\s+|up\s+)?(?:to|until|till|for)\s+" + OBJ
        ),
        ClaimKind.PLAN,
        lambda match, who: (
            adv(match) + f"{_words_between(match, 'verb', 'event')} "
            f"{rewrite(' '.join(match['event'].split()), who) or match['event']} "
            + " ".join(match.string[match.end("event") : match.start("obj")].split())
        ),
        time=NEW_PLAN_TIME,
        predicate=plan_predicate,
        check=plan_known,
        plural_ok=True,
    ),
    # -- where the speaker lives
    Rule(
        compile_en(
            rf"{_HAVE}{ADV}(?P<verb>moved|relocated)\s+(?:back\s+|over\s+|here\s+|out\s+)?"
            r"(?:from\s+(?P<old>[^,;:]+?)\s+)?to\s+" + OBJ
        ),
        ClaimKind.STATE,
        lambda match, who: (
            adv(match)
            + match["verb"].lower()
            + (f" from {_old_rewritten(match, who)}" if match["old"] else "")
            + " to"
        ),
        time=SINCE_TIME,
        predicate=lives_in_or_uses,
        check=place_or_tool,
        plural_ok=True,
    ),
    Rule(
        compile_en(rf"{_HAVE}{ADV}settled(?:\s+down)?\s+in\s+" + OBJ),
        ClaimKind.STATE,
        fixed("settled in"),
        time=SINCE_TIME,
        predicate=lives_in,
        check=place,
        plural_ok=True,
    ),
    Rule(
        compile_en(
            rf"(?:{AP}m|\s+am)\s+(?P<now>(?:now|currently)\s+)?(?P<how>based\s+(?:in|out\s+of)|"
            r"in)\s+(?P<obj>(?-i:[A-Z])[\w'’.-]*(?:\s+(?-i:[A-Z])[\w'’.-]*){0,3})"
            r"(?P<tail>\s+(?:now|these\s+days|nowadays|for\s+good|permanently))?" + CUT
        ),
        ClaimKind.FACT,
        lambda match, _: (
            "is " + _now(match) + ("based in" if match["how"].lower() != "in" else "in")
        ),
        predicate=lives_in,
        # "I'm in Paris" alone may be a trip; "now", "these days" make it a home.
        check=lambda match: match["how"].lower() != "in" or bool(_now(match)),
        kind_for=_state_if_marked,
    ),
    # -- work
    Rule(
        compile_en(
            rf"{_HAVE}{ADV}(?P<verb>joined|started\s+at|signed\s+with|took\s+a\s+(?:new\s+)?"
            r"job\s+(?:at|with)|(?:got|was|been)\s+hired\s+(?:at|by)|accepted\s+(?:an?\s+)?"
            r"(?:job\s+)?offer\s+(?:from|at))\s+" + ORG
        ),
        ClaimKind.STATE,
        lambda match, _: adv(match) + " ".join(match["verb"].split()),
        time=SINCE_TIME,
        predicate=lambda _: "works_at",
    ),
    Rule(
        compile_en(
            rf"{_HAVE}{ADV}left\s+(?P<old>{ORG_NAME})\s+(?:for|to\s+join|to\s+work\s+at)\s+"
            + ORG
        ),
        ClaimKind.STATE,
        lambda match, _: adv(match) + f"left {match['old']} for",
        time=SINCE_TIME,
        predicate=lambda _: "works_at",
    ),
    Rule(
        compile_en(rf"{BE}{NOW}{ADV}(?:working|employed)\s+(?P<prep>at|for)\s+" + ORG),
        ClaimKind.FACT,
        lambda match, _: ("now " if match["now"] else "") + f"works {match['prep']}",
        predicate=lambda _: "works_at",
        kind_for=state_if_now,
    ),
    Rule(
        compile_en(
            rf"{_HAVE}{ADV}(?:got|been|was)\s+promoted\s+to\s+(?P<obj>(?:(?:a|an)\s+)?"
            rf"(?:[\w'’-]+\s+){{0,3}}?(?P<head>[a-z-]+)(?:\s+(?:{TIME_TAIL}))?)" + CUT
        ),
        ClaimKind.STATE,
        fixed("was promoted to"),
        time=SINCE_TIME,
        predicate=lambda _: "occupation",
        check=title,
    ),
    # -- partners
    Rule(
        compile_en(
            rf"(?:{AP}m|\s+am)\s+{NOW}{ADV}(?P<verb>dating|engaged\s+to|married\s+to|"
            r"in\s+a\s+relationship\s+with|going\s+out\s+with|together\s+with)\s+"
            + NAME_NOW
        ),
        ClaimKind.FACT,
        lambda match, _: (
            f"is {_now(match)}{' '.join(match['verb'].split())} {match['name']}"
        ),
        predicate=lambda _: "partner",
        kind_for=_state_if_marked,
    ),
    Rule(
        compile_en(
            rf"{_HAVE}{ADV}(?P<verb>got\s+engaged\s+to|got\s+married\s+to|married|"
            r"started\s+dating|started\s+seeing|broke\s+up\s+with|split\s+up\s+with|"
            r"separated\s+from|divorced)\s+" + NAME
        ),
        ClaimKind.STATE,
        lambda match, _: (
            adv(match) + f"{' '.join(match['verb'].split())} {match['name']}"
        ),
        time=SINCE_TIME,
        predicate=lambda _: "partner",
    ),
    # -- tools: "I switched to Neovim", "I replaced my iPhone with a Pixel"
    Rule(
        compile_en(
            rf"{_HAVE}{ADV}(?P<verb>switched|changed|migrated|converted|transitioned|"
            r"jumped)\s+(?:over\s+|back\s+)?(?:from\s+(?P<old>[^,;:]+?)\s+)?to\s+" + OBJ
        ),
        ClaimKind.STATE,
        lambda match, who: (
            adv(match)
            + match["verb"].lower()
            + (f" from {_old_rewritten(match, who)}" if match["old"] else "")
            + " to"
        ),
        time=SINCE_TIME,
        predicate=tool_predicate,
        check=tool_known,
    ),
    Rule(
        compile_en(
            rf"{_HAVE}{ADV}(?P<verb>replaced|swapped|traded|exchanged|ditched)\s+"
            r"(?P<old>[^,;:]+?)\s+(?:with|for)\s+" + OBJ
        ),
        ClaimKind.STATE,
        lambda match, who: (
            adv(match)
            + f"{match['verb'].lower()} {_old_rewritten(match, who)} "
            + ("with" if " with " in match[0].lower() else "for")
        ),
        time=SINCE_TIME,
        predicate=tool_predicate,
        check=tool_known,
    ),
    Rule(
        compile_en(rf"{_HAVE}{ADV}(?:started|began|begun)\s+using\s+" + OBJ),
        ClaimKind.STATE,
        fixed("started using"),
        time=SINCE_TIME,
        predicate=tool_predicate,
        check=tool_known,
    ),
    Rule(
        compile_en(
            rf"(?:{AP}m|\s+am|{AP}ve\s+been|\s+have\s+been)\s+{NOW}{ADV}using\s+" + OBJ
        ),
        ClaimKind.FACT,
        lambda match, _: ("now " if match["now"] else "") + "uses",
        predicate=tool_predicate,
        check=tool_known,
        kind_for=state_if_now,
    ),
    Rule(
        compile_en(
            r"\s+(?P<now>(?:now|currently|mostly|mainly|primarily)\s+)?"
            rf"{ADV}(?:use|rely\s+on)\s+" + OBJ
        ),
        ClaimKind.FACT,
        lambda match, _: ("now " if match["now"] else "") + "uses",
        predicate=tool_predicate,
        check=tool_known,
        kind_for=lambda match: (
            ClaimKind.STATE
            if (match["now"] or "").strip().lower() == "now"
            or state_if_now(match) is ClaimKind.STATE
            else ClaimKind.FACT
        ),
    ),
    Rule(
        compile_en(
            rf"{_HAVE}{ADV}(?P<verb>got|bought|picked\s+up)\s+(?:myself\s+)?"
            r"(?P<obj>(?:a|an)\s+new\s+[^,;:]+?)" + CUT
        ),
        ClaimKind.STATE,
        lambda match, _: adv(match) + " ".join(match["verb"].split()),
        time=SINCE_TIME,
        predicate=tool_predicate,
        check=lambda match: tool_known(match) and " for " not in match["obj"],
    ),
    Rule(
        compile_en(
            r"\s+(?P<now>(?:now|currently)\s+)?"
            + ADV
            + r"drive\s+(?P<obj>(?:a|an|the)\s+.+?)"
            + CUT
        ),
        ClaimKind.FACT,
        lambda match, _: ("now " if match["now"] else "") + "drives",
        predicate=tool_predicate,
        check=lambda match: tool_predicate(match) == "uses:car",
        kind_for=state_if_now,
    ),
    Rule(
        compile_en(rf"{_HAVE}{ADV}upgraded\s+to\s+" + OBJ),
        ClaimKind.STATE,
        fixed("upgraded to"),
        time=SINCE_TIME,
        predicate=tool_predicate,
        check=tool_known,
    ),
    Rule(
        compile_en(r"\s+no\s+longer\s+(?P<verb>[a-z]+)(?P<obj>(?:\s+.*?)?)" + CUT),
        ClaimKind.STATE,
        lambda match, _: f"no longer {third(match['verb'])}",
        predicate=habit_predicate,
        kind_for=habit_kind,
    ),
    Rule(
        compile_en(
            rf"\s+(?:don{AP}?t|do\s+not)\s+(?P<verb>[a-z]+)(?P<obj>(?:\s+.*?)?)"
            r"\s+any\s?(?:more|longer)" + CUT
        ),
        ClaimKind.STATE,
        lambda match, _: f"no longer {third(match['verb'])}",
        predicate=habit_predicate,
        kind_for=habit_kind,
    ),
    Rule(
        compile_en(rf"(?:{AP}m|\s+am)\s+no\s+longer\s+" + OBJ),
        ClaimKind.STATE,
        fixed("is no longer"),
        predicate=being_predicate,
    ),
    Rule(
        compile_en(
            rf"(?:{AP}ve|\s+have)?\s+{ADV}(?:started|began|got|landed|accepted)\s+"
            r"(?P<what>(?:a\s+|my\s+)?(?:new\s+)?(?:job|position|role)|working)\s+"
            r"(?P<prep>at|for|as|with)\s+" + OBJ
        ),
        ClaimKind.STATE,
        lambda match, _: (
            adv(match)
            + "started "
            + ("working" if match["what"] == "working" else "a new job")
            + f" {match['prep']}"
        ),
        time=SINCE_TIME,
        predicate=lambda match: work_predicate(match["prep"], match["obj"]),
    ),
    Rule(
        compile_en(
            rf"(?:{AP}ve|\s+have)?\s+{ADV}(?:quit|left)\s+my\s+job(?:\s+(?:at|with)\s+{OBJ})?"
        ),
        ClaimKind.STATE,
        lambda match, who: (
            adv(match) + f"quit {who.possessive} job" + (" at" if match["obj"] else "")
        ),
        time=SINCE_TIME,
        predicate=lambda _: "works_at",
    ),
    Rule(
        compile_en(
            rf"(?:{AP}m\s+now|\s+am\s+now|\s+became|{AP}ve\s+become|\s+have\s+become)\s+"
            r"(?P<obj>(?:a|an)\s+(?:[\w'’-]+\s+){0,3}?(?P<head>[a-z-]+))" + CUT
        ),
        ClaimKind.STATE,
        fixed("is now"),
        time=SINCE_TIME,
        predicate=identity_predicate,
        check=is_identity,
    ),
    Rule(
        compile_en(
            rf"(?:{BE}|{AP}ve\s+been\s+|\s+have\s+been\s+|\s+){NOW}(?:living|live)\s+in\s+"
            + OBJ
        ),
        ClaimKind.FACT,
        lambda match, _: ("now " if match["now"] else "") + "lives in",
        predicate=lives_in,
        check=place,
        kind_for=state_if_now,
    ),
    # -- plans
    Rule(
        compile_en(rf"{BE}{ADV}(?:going\s+to|gonna)\s+" + OBJ),
        ClaimKind.PLAN,
        lambda match, who: f"{be(who.plural)} {adv(match)}going to",
        time=PLAN_TIME,
        check=not_negated,
        predicate=plan_predicate,
        plural_ok=True,
    ),
    Rule(
        compile_en(rf"(?:{AP}ll|\s+will)\s+{ADV}" + OBJ),
        ClaimKind.PLAN,
        fixed("will"),
        time=PLAN_TIME,
        check=not_negated,
        predicate=plan_predicate,
        plural_ok=True,
    ),
    Rule(
        compile_en(
            rf"{BE}{ADV}(?P<verb>planning|scheduled|due|set)\s+(?P<prep>to|on)\s+" + OBJ
        ),
        ClaimKind.PLAN,
        lambda match, who: (
            f"{be(who.plural)} {adv(match)}{match['verb']} {match['prep']}"
        ),
        time=PLAN_TIME,
        check=not_negated,
        plural_ok=True,
    ),
    Rule(
        compile_en(
            rf"(?:\s+|{AP}ve\s+|\s+have\s+){ADV}(?P<verb>plan|intend|decided)\s+to\s+"
            + OBJ
        ),
        ClaimKind.PLAN,
        lambda match, who: (
            adv(match)
            + (
                match["verb"]
                if who.plural or match["verb"] == "decided"
                else third(match["verb"])
            )
            + " to"
        ),
        time=PLAN_TIME,
        plural_ok=True,
    ),
    Rule(
        compile_en(
            rf"{BE}{ADV}(?P<verb>{PROGRESSIVE_VERBS})\b(?:\s+(?P<obj>[^\s,;:].*?))?"
            + CUT
        ),
        ClaimKind.PLAN,
        lambda match, who: f"{be(who.plural)} {adv(match)}{match['verb']}",
        time=STRICT_PLAN_TIME,
        predicate=plan_predicate,
        plural_ok=True,
    ),
    Rule(
        compile_en(
            rf"(?:\s+have|{AP}ve\s+got|\s+have\s+got)\s+(?P<obj>(?:a|an|my|the|another|"
            rf"two|three)\s+(?:[\w'’-]+\s+){{0,3}}?(?:{EVENT_NOUNS})s?\b.*?)" + CUT
        ),
        ClaimKind.PLAN,
        conjugated("has", "have"),
        time=PLAN_TIME,
        predicate=plan_predicate,
        plural_ok=True,
    ),
    # -- dated past events
    Rule(
        compile_en(
            r"\s+(?P<adv>(?:(?:just|finally|also|actually|recently|first|already|even|"
            rf"once)\s+)*)(?P<verb>{PAST_VERBS}|[a-z]{{2,}}ed|was|were)\b"
            r"(?P<obj>(?:\s+.*?)?)" + CUT
        ),
        ClaimKind.EVENT,
        lambda match, _: adv(match) + match["verb"],
        time=EVENT_TIME,
        check=dated_past,
        plural_ok=True,
    ),
    # -- preferences
    Rule(
        compile_en(r"\s+(?P<now>now\s+)?" + ADV + r"prefer\s+" + OBJ),
        ClaimKind.PREFERENCE,
        lambda match, _: ("now " if match["now"] else "") + adv(match) + "prefers",
        predicate=prefer_predicate,
        check=concrete_object,
    ),
    Rule(
        compile_en(
            rf"\s+{ADV}(?P<verb>like|love|enjoy|adore|prefer|hate|dislike|detest|loathe|"
            rf"can{AP}?t\s+stand|cannot\s+stand)\s+" + OBJ
        ),
        ClaimKind.PREFERENCE,
        lambda match, _: (
            adv(match)
            + (match["verb"] if " " in match["verb"] else third(match["verb"]))
        ),
        predicate=attitude,
        check=concrete_object,
    ),
    Rule(
        compile_en(
            r"\s+(?P<pre>(?:really|just|honestly|absolutely|truly|generally|usually)\s+)?"
            rf"(?:don{AP}?t|do\s+not)\s+{ADV}(?P<verb>like|love|enjoy|care\s+for|eat|"
            r"drink|smoke)\s+" + OBJ
        ),
        ClaimKind.PREFERENCE,
        lambda match, _: f"{match['pre'] or ''}doesn't {adv(match)}{match['verb']}",
        predicate=attitude,
        check=concrete_object,
        kind_for=lambda match: (
            ClaimKind.FACT
            if match["verb"].lower() in {"eat", "drink", "smoke"}
            else ClaimKind.PREFERENCE
        ),
    ),
    Rule(
        compile_en(
            rf"(?:{AP}m|\s+am)\s+{ADV}(?P<neg>not\s+(?:really\s+)?)?(?P<what>(?:a|an|such\s+a)"
            r"\s+(?:(?:big|huge|great|massive|total|real)\s+)?fan\s+of|into|passionate\s+about|"
            r"obsessed\s+with|crazy\s+about|keen\s+on|fond\s+of|interested\s+in|"
            r"addicted\s+to)\s+" + OBJ
        ),
        ClaimKind.PREFERENCE,
        lambda match, _: (
            f"is {adv(match)}{match['neg'] or ''}{' '.join(match['what'].split())}"
        ),
        predicate=attitude,
        check=concrete_object,
    ),
    # -- personal facts
    Rule(
        compile_en(
            rf"(?:{AP}m|\s+am)\s+(?P<adv>(?:severely|very|really|deathly|highly|also)\s+)?allergic\s+to\s+"
            + OBJ
        ),
        ClaimKind.FACT,
        fixed("is allergic to"),
        predicate=lambda match: f"allergic_to:{key(match['obj'])}",
    ),
    Rule(
        compile_en(
            rf"(?:{AP}m|\s+am)\s+{NOW}(?P<adv>(?:also|strictly|fully|a)\s+)?"
            r"(?P<obj>vegan|vegetarian|pescatarian|gluten-free|lactose\s+intolerant|sober)"
            # "… pescatarian now", "… pescatarian rather than vegetarian": the diet
            # it replaces is left out of the value.
            r"(?P<later>\s+(?:now|these\s+days|nowadays))?"
            r"(?:\s+(?:rather\s+than|instead\s+of|not)\s+(?:a\s+)?[a-z-]+)?" + CUT
        ),
        ClaimKind.FACT,
        lambda match, _: (
            "is"
            + (" now" if match["now"] or match["later"] else "")
            + (" a" if "a" in adv(match).split() else "")
        ),
        predicate=lambda _: "diet",
        kind_for=lambda match: (
            ClaimKind.STATE if match["now"] or match["later"] else ClaimKind.FACT
        ),
    ),
    Rule(
        compile_en(
            rf"(?:{AP}m|\s+am)\s+(?P<adv>(?:also|actually|still|currently)\s+)?"
            r"(?P<obj>(?:a|an)\s+(?:[\w'’-]+\s+){0,3}?(?P<head>[a-z-]+)"
            r"(?:\s+(?:at|for|in|with|from|of|on)\s+.*?)?)" + CUT
        ),
        ClaimKind.FACT,
        fixed("is"),
        predicate=identity_predicate,
        check=is_identity,
    ),
    Rule(
        compile_en(r"\s+(?P<verb>teach|study)\s+" + OBJ),
        ClaimKind.FACT,
        lambda match, _: third(match["verb"]),
        predicate=lambda match: third(match["verb"].lower()),
        check=lambda match: not PRONOUN_OBJECT.match(match["obj"]),
    ),
    Rule(
        compile_en(r"\s+" + NOW + r"work\s+(?P<prep>at|for|as|in)\s+" + OBJ),
        ClaimKind.FACT,
        lambda match, _: ("now " if match["now"] else "") + f"works {match['prep']}",
        predicate=lambda match: work_predicate(match["prep"], match["obj"]),
        kind_for=state_if_now,
    ),
    Rule(
        compile_en(
            rf"(?:\s+have|{AP}ve\s+got|\s+have\s+got)\s+(?P<obj>(?:a|an|one|two|three|four|"
            rf"five|six|\d+)\s+(?:[\w'’-]+\s+){{0,3}}?(?P<head>{PETS_AND_FAMILY})(?:e?s)?"
            r"(?:\s*,?\s+(?:named|called)\s+(?-i:[A-Z])[\w'’-]*(?:(?:\s*,\s*|\s+and\s+)"
            r"(?-i:[A-Z])[\w'’-]*){0,5})?)"
            r"(?=\s*(?:[,;:.!)]|$)|\s+(?:and|who|that|which|at|in|from|too|as\s+well)\b)"
        ),
        ClaimKind.FACT,
        fixed("has"),
        predicate=lambda match: f"has:{match['head'].lower()}",
    ),
    Rule(
        compile_en(
            rf"(?:{AP}m|\s+am)\s+(?:now\s+)?(?P<n>{AGE_WORDS})(?:\s+years?|\s+yrs?)\s+old\b"
        ),
        ClaimKind.FACT,
        lambda match, _: f"is {match['n']} years old",
        predicate=lambda _: "age",
        check=age,
    ),
    Rule(
        compile_en(rf"(?:{AP}m|\s+am)\s+(?:originally\s+)?from\s+" + OBJ),
        ClaimKind.FACT,
        fixed("is from"),
        predicate=lambda _: "from",
        check=place,
    ),
    Rule(
        compile_en(r"\s+was\s+born\s+(?:and\s+raised\s+)?(?P<prep>in|on)\s+" + OBJ),
        ClaimKind.FACT,
        lambda match, _: f"was born {match['prep']}",
        predicate=lambda _: "born",
        check=lambda match: (
            place(match) or any(char.isdigit() for char in match["obj"])
        ),
    ),
    Rule(
        compile_en(rf"(?:{AP}m|\s+am)\s+called\s+" + NAME),
        ClaimKind.FACT,
        lambda match, _: f"is called {match['name']}",
        predicate=lambda _: "name",
    ),
)

SUBJECT_CHAIN = PatternChain([rule.pattern for rule in SUBJECT_RULES])

# Rules at the clause start ("my ...", "call me ...") for the speaker alone.
_NAME_HEAD_RULES: tuple[Rule, ...] = (
    Rule(
        compile_en(r"my\s+name\s+is\s+" + NAME),
        ClaimKind.FACT,
        lambda match, _: f"name is {match['name']}",
        predicate=lambda _: "name",
    ),
    Rule(
        compile_en(r"(?:you\s+can\s+|please\s+|just\s+)?call\s+me\s+" + NAME),
        ClaimKind.FACT,
        lambda match, _: f"goes by {match['name']}",
        predicate=lambda _: "nickname",
    ),
    Rule(
        compile_en(
            r"my\s+(?P<adv>(?:all[-\s]time|absolute|very|most)\s+)?(?P<fav>favou?rite)\s+"
            r"(?P<cat>[\w'’ -]{1,40}?)\s+(?P<be>is|are|has\s+to\s+be)\s+" + OBJ
        ),
        ClaimKind.PREFERENCE,
        lambda match, _: f"{adv(match)}{match['fav']} {match['cat']} {match['be']}",
        predicate=lambda match: f"favourite:{favourite_category(match['cat'])}",
    ),
    Rule(
        compile_en(
            r"my\s+(?P<rel>(?:(?:best|older|younger|little|big|baby|twin|step)\s+)?(?:"
            + RELATIONS
            + rf"))(?:{AP}s\s+name\s+is|\s+is\s+(?:named|called)|{AP}s\s+called)\s+"
            + NAME
        ),
        ClaimKind.FACT,
        lambda match, _: f"{match['rel']}'s name is {match['name']}",
        predicate=lambda match: (
            "partner"
            if _PARTNER.fullmatch(match["rel"])
            else f"name_of:{key(match['rel'])}"
        ),
    ),
    Rule(
        compile_en(
            r"my\s+(?P<what>birthday|bday|anniversary|wedding\s+anniversary)\s+is\s+"
            + OBJ
        ),
        ClaimKind.FACT,
        lambda match, _: f"{match['what']} is",
        predicate=lambda match: key(match["what"]).replace(" ", "_"),
    ),
)
_PARTNER_IS = Rule(
    compile_en(
        rf"my\s+(?P<adv>(?:new|current)\s+)?(?P<rel>{PARTNERS})\s+is\s+(?P<now>now\s+)?"
        + NAME
    ),
    ClaimKind.FACT,
    lambda match, _: (
        f"{adv(match)}{match['rel'].lower()} is {_now(match)}{match['name']}"
    ),
    predicate=lambda _: "partner",
    kind_for=lambda match: (
        ClaimKind.STATE if match["now"] or match["adv"] else ClaimKind.FACT
    ),
)
_TITLE_IS = Rule(
    compile_en(
        r"my\s+(?:new\s+)?(?:job\s+)?title\s+is\s+(?:now\s+)?(?P<obj>(?:(?:a|an)\s+)?"
        r"(?:[\w'’-]+\s+){0,3}?(?P<head>[a-z-]+))" + CUT
    ),
    ClaimKind.STATE,
    fixed("job title is"),
    predicate=lambda _: "occupation",
    check=title,
)
# "My dentist appointment is on Tuesday": a planned event keyed by what it is.
_PLANNED_IS = Rule(
    compile_en(rf"my\s+(?P<event>{_EVENT})\s+(?:is|will\s+be)\s+(?:still\s+)?" + OBJ),
    ClaimKind.PLAN,
    lambda match, _: _words_between(match, "event", "obj"),
    time=NEW_PLAN_TIME,
    predicate=plan_predicate,
    check=plan_known,
)
HEAD_RULES: tuple[Rule, ...] = (
    RESCHEDULED,
    _PARTNER_IS,
    _TITLE_IS,
    _PLANNED_IS,
    *_NAME_HEAD_RULES,
)
# All but "call me ...": their claims read "Mei's favourite ...", "Mei's dentist ...".
POSSESSIVE_HEADS = frozenset(HEAD_RULES) - {_NAME_HEAD_RULES[1]}
