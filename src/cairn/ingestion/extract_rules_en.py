"""English rule tables: what may follow a subject (I, we, "my wife and I") or open a
clause ("my name is", "call me"), in priority order: state changes, plans, dated past
events, preferences, personal facts. The first rule whose pattern matches and whose
conditions hold makes the claim (tests/ingestion/test_extract.py).
"""

from __future__ import annotations

from cairn.domain.claim import ClaimKind
from cairn.ingestion.extract_common import PatternChain, key
from cairn.ingestion.extract_grammar_en import (
    ADV,
    AGE_WORDS,
    AP,
    BE,
    CUT,
    EVENT_TIME,
    NAME,
    NOW,
    OBJ,
    PLAN_TIME,
    PRONOUN_OBJECT,
    SINCE_TIME,
    STRICT_PLAN_TIME,
    Rule,
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
    not_negated,
    place,
    state_if_now,
    third,
)
from cairn.ingestion.extract_lexicon_en import (
    EVENT_NOUNS,
    PAST_VERBS,
    PETS_AND_FAMILY,
    PROGRESSIVE_VERBS,
    RELATIONS,
)

__all__ = ["HEAD_RULES", "POSSESSIVE_HEADS", "SUBJECT_CHAIN", "SUBJECT_RULES"]

SUBJECT_RULES: tuple[Rule, ...] = (
    # -- state changes
    Rule(
        compile_en(rf"(?:{AP}ve|\s+have)?\s+{ADV}moved\s+to\s+" + OBJ),
        ClaimKind.STATE,
        fixed("moved to"),
        time=SINCE_TIME,
        predicate=lives_in,
        check=place,
        plural_ok=True,
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
        predicate=lambda match: (
            "occupation" if match["prep"].lower() == "as" else "works_at"
        ),
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
        compile_en(rf"(?:{BE}|\s+){NOW}(?:living|live)\s+in\s+" + OBJ),
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
        plural_ok=True,
    ),
    Rule(
        compile_en(rf"(?:{AP}ll|\s+will)\s+{ADV}" + OBJ),
        ClaimKind.PLAN,
        fixed("will"),
        time=PLAN_TIME,
        check=not_negated,
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
            + CUT
        ),
        ClaimKind.FACT,
        lambda match, _: (
            ("now " if match["now"] else "")
            + "is"
            + (" a" if "a" in adv(match).split() else "")
        ),
        predicate=lambda _: "diet",
        kind_for=state_if_now,
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
        predicate=lambda match: {"as": "occupation", "in": "works_in"}.get(
            match["prep"].lower(), "works_at"
        ),
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
HEAD_RULES: tuple[Rule, ...] = (
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
        predicate=lambda match: f"favourite:{key(match['cat'])}",
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
        predicate=lambda match: f"name_of:{key(match['rel'])}",
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
POSSESSIVE_HEADS = {HEAD_RULES[0], HEAD_RULES[2], HEAD_RULES[3], HEAD_RULES[4]}
