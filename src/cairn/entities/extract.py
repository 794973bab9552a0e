"""Offline entity rules: the names one turn gives, as drafts for the store to resolve.

English: the speaker; capitalised names (a place after "in"/"from" or in the place list,
an organisation by its last word, a quoted title as an artefact, otherwise a person),
vocatives ("Thanks, Mel!") as addressees only; kinship references ("my sister", "my
sister Sarah", "Caroline's mom") keyed by whose relative they are; explicit names ("my
name is", "call me") and English/Chinese pairs ("Li Ming (李明)"). Chinese: kinship
("我妹妹", "我的老板"), "我叫…", "叫我…", place names of the lexicon. Pure functions of
the turn: the store decides which entity each draft is (tests/entities/test_extract.py).
"""

from __future__ import annotations

import re

from cairn.domain.evidence import Role
from cairn.entities.lexicon import (
    KIN_EN,
    KIN_ZH,
    NOT_NAMES,
    ORGANISATION_HEADS,
    PLACE_HEADS,
    PLACE_PREPOSITIONS,
    PLACES,
    VOCATIVE_OPENERS,
    ZH_SURNAMES,
)
from cairn.entities.vocabulary import (
    AliasKind,
    EntityKind,
    MentionDraft,
    MentionRole,
    fold,
)

__all__ = ["USER", "kin_key", "mentions_in"]

# Whose relatives a speakerless user turn speaks of.
USER = "user"

# Latin letters with their accents: "Charité", "München", "José" are names too.
_UPPER = "A-ZÀ-ÖØ-Þ"
_LETTER = "a-zA-Zà-öø-ÿÀ-ÖØ-ÞĀ-ž"
_WORD = rf"[{_UPPER}][{_LETTER}'’.-]*[{_LETTER}]|[A-Z]"
_NAME_RUN = re.compile(
    rf"(?<![\w'’])(?:{_WORD})(?:\s+(?:of\s+|the\s+|de\s+)?(?:{_WORD})){{0,3}}(?![\w])"
)
# What redaction left of a secret ("[REDACTED:password]", cairn.ingestion.redact) names
# no one.
_REDACTION = re.compile(r"\[REDACTED:[a-z_]+\]")
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_QUOTED = re.compile(r"[\"“]([A-Z][^\"”]{1,60}?)[\"”]")
_KIN_WORDS = "|".join(
    sorted((re.escape(word) for word in KIN_EN), key=len, reverse=True)
)
_MY_KIN = re.compile(
    rf"(?i:\bmy\s+(?:(?:older|younger|little|big|baby|eldest|oldest|youngest)\s+)?"
    rf"({_KIN_WORDS}))\b(?:,?\s+([A-Z][a-z]+)\b)?"
)
_THEIR_KIN = re.compile(rf"\b([A-Z][a-z]+)(?:'s|’s)\s+({_KIN_WORDS})\b")
_ZH_KIN_WORDS = "|".join(
    sorted((re.escape(word) for word in KIN_ZH), key=len, reverse=True)
)
_ZH_MY_KIN = re.compile(rf"我(?:的)?({_ZH_KIN_WORDS})")
_LATIN_NAME = r"[A-Z][a-z]+(?:\s[A-Z][a-z]+)?"
_CJK_NAME = r"[\u4e00-\u9fff]{2,4}"
_PAIR = re.compile(
    rf"({_LATIN_NAME})\s*[（(]({_CJK_NAME})[）)]|({_CJK_NAME})\s*[（(]({_LATIN_NAME})[）)]"
)
_SELF_NAME = re.compile(rf"\bmy name is ({_LATIN_NAME})", re.IGNORECASE)
# "Hi, I'm Mara." at the start of a turn; only after a greeting, since "I'm Italian" or
# "I'm Vegan" is no name. The name keeps its capital.
_GREETING_NAME = re.compile(
    rf"^\W*(?i:hi|hello|hey|hiya)(?:\s+(?i:there|all|everyone))?[,!.]*\s+"
    rf"(?i:i'm|i’m|i am|this is)\s+({_LATIN_NAME})\b"
)
_CALL_ME = re.compile(rf"\b(?:call me|i go by) ({_LATIN_NAME})", re.IGNORECASE)
# A Chinese name has no spaces around it: it must end where the clause or a particle does.
_ZH_END = r"(?=[，。！？、,.!?\s]|就|吧|好了|$)"
_ZH_SELF_NAME = re.compile(rf"我叫([\u4e00-\u9fff]{{2,4}}?{_ZH_END}|{_LATIN_NAME})")
_ZH_CALL_ME = re.compile(rf"叫我([\u4e00-\u9fff]{{1,3}}?{_ZH_END}|{_LATIN_NAME})")
_ZH_PLACES = {chinese: english for english, chinese in PLACES.items()}
_ZH_PLACE = re.compile(
    "|".join(sorted(map(re.escape, _ZH_PLACES), key=len, reverse=True))
)


def kin_key(owner: str, relation: str) -> str:
    """The key of someone's relative: ``kin:<owner folded>:<relation>``."""
    return f"kin:{fold(owner)}:{relation}"


def _owner(speaker: str | None, role: Role) -> str | None:
    if speaker:
        return speaker
    return USER if role is Role.USER else None


def _possessive(owner: str, word: str) -> str:
    return f"the user's {word}" if owner == USER else f"{owner}'s {word}"


def _trimmed(run: str) -> str | None:
    """A capitalised run without the words around it that name nothing."""
    words = run.split()
    while words and fold(words[0]) in NOT_NAMES:
        words.pop(0)
    while words and fold(words[-1]) in NOT_NAMES | {"of", "the", "de"}:
        words.pop()
    if not words:
        return None
    name = " ".join(words)
    for suffix in ("'s", "’s"):
        name = name.removesuffix(suffix)
    return name if len(name) >= 2 else None


def _is_vocative(sentence: str, start: int, end: int) -> bool:
    """Whether the name at ``sentence[start:end]`` only addresses someone."""
    before = re.sub(r"[^\w\s'’]", " ", sentence[:start]).split()
    after = sentence[end:].lstrip()
    if all(fold(word) in VOCATIVE_OPENERS for word in before) and (
        before or after[:1] in {",", "!", "?"} or not after
    ):
        return True
    return sentence[:start].rstrip().endswith(",") and (
        not after or after[:1] in {"!", "?", ".", ","}
    )


_ORGANISATION_NOUNS = frozenset(head.casefold() for head in ORGANISATION_HEADS)
# "<word> at <Name>" names an employer, not a place.
_EMPLOYMENT_WORDS = frozenset(
    {"work", "works", "worked", "working", "job", "intern", "interning", "employed"}
)
_PLACE_NOUNS = frozenset(head.casefold() for head in PLACE_HEADS)


def _kind_of(name: str, sentence: str, start: int) -> EntityKind:
    if name in PLACES:
        return EntityKind.PLACE
    last = name.rsplit(maxsplit=1)[-1]
    # The head may follow uncapitalised: "the Pergamon museum", "Lake Tahoe" aside.
    following = sentence[start + len(name) :].split()[:1]
    head = following[0].strip(".,;:!?").casefold() if following else ""
    if last in ORGANISATION_HEADS or head in _ORGANISATION_NOUNS:
        return EntityKind.ORGANISATION
    if last in PLACE_HEADS or head in _PLACE_NOUNS:
        return EntityKind.PLACE
    previous = [word.casefold() for word in sentence[:start].split()[-2:]]
    if previous[-1:] == ["at"] and previous[0] in _EMPLOYMENT_WORDS:
        return EntityKind.ORGANISATION  # "I work at Siemens": an employer
    if previous and previous[-1] in PLACE_PREPOSITIONS:
        return EntityKind.PLACE
    return EntityKind.PERSON


def _english_names(text: str, speaker: str | None) -> list[MentionDraft]:
    quoted = {match.group(1).strip() for match in _QUOTED.finditer(text)}
    drafts = [
        MentionDraft(title, EntityKind.ARTEFACT, MentionRole.MENTION, AliasKind.NAME)
        for title in sorted(quoted)
    ]
    for sentence_match in _SENTENCE.finditer(text):
        sentence = sentence_match.group(0)
        for match in _NAME_RUN.finditer(sentence):
            name = _trimmed(match.group(0))
            if name is None or name in quoted or any(name in title for title in quoted):
                continue
            if speaker is not None and fold(name) == fold(speaker):
                continue  # the speaker naming themself adds nothing to "speaker"
            start = sentence.find(name, match.start())
            end = start + len(name)
            kind = _kind_of(name, sentence, start)
            role = (
                MentionRole.ADDRESSEE
                if kind is EntityKind.PERSON and _is_vocative(sentence, start, end)
                else MentionRole.MENTION
            )
            also = ((PLACES[name], AliasKind.TRANSLATION),) if name in PLACES else ()
            opening = not sentence[:start].strip() and " " not in name
            drafts.append(
                MentionDraft(
                    name,
                    kind,
                    role,
                    AliasKind.NAME,
                    also=also,
                    tentative=opening and name not in PLACES,
                )
            )
    return drafts


def _kinship(text: str, owner: str | None) -> list[MentionDraft]:
    drafts: list[MentionDraft] = []
    if owner is not None:
        for match in _MY_KIN.finditer(text):
            word = match.group(1).casefold()
            relation = KIN_EN[word]
            also = ((match.group(2), AliasKind.NAME),) if match.group(2) else ()
            drafts.append(
                MentionDraft(
                    _possessive(owner, word),
                    EntityKind.PERSON,
                    MentionRole.MENTION,
                    AliasKind.KINSHIP,
                    key=kin_key(owner, relation),
                    also=also,
                )
            )
        for match in _ZH_MY_KIN.finditer(text):
            word = match.group(1)
            name = f"用户的{word}" if owner == USER else f"{owner}的{word}"
            drafts.append(
                MentionDraft(
                    name,
                    EntityKind.PERSON,
                    MentionRole.MENTION,
                    AliasKind.KINSHIP,
                    key=kin_key(owner, KIN_ZH[word]),
                )
            )
    for match in _THEIR_KIN.finditer(text):
        whose, word = match.group(1), match.group(2).casefold()
        if fold(whose) in NOT_NAMES:
            continue
        drafts.append(
            MentionDraft(
                f"{whose}'s {word}",
                EntityKind.PERSON,
                MentionRole.MENTION,
                AliasKind.KINSHIP,
                key=kin_key(whose, KIN_EN[word]),
            )
        )
    return drafts


def _self_names(
    text: str, speaker: str | None, owner: str | None
) -> list[MentionDraft]:
    """Names a speaker gives themself; without a speaker, the user's own entity."""
    found: list[tuple[str, AliasKind]] = []
    for pattern, kind in (
        (_SELF_NAME, AliasKind.NAME),
        (_GREETING_NAME, AliasKind.NAME),
        (_ZH_SELF_NAME, AliasKind.NAME),
        (_CALL_ME, AliasKind.NICKNAME),
        (_ZH_CALL_ME, AliasKind.NICKNAME),
    ):
        found.extend((match.group(1), kind) for match in pattern.finditer(text))
    if not found or owner is None:
        return []
    if speaker is not None:
        return [
            MentionDraft(
                speaker,
                EntityKind.PERSON,
                MentionRole.SPEAKER,
                AliasKind.SPEAKER,
                also=tuple(found),
            )
        ]
    name, kind = found[0]
    return [
        MentionDraft(
            name,
            EntityKind.PERSON,
            MentionRole.SPEAKER,
            kind,
            key=f"self:{owner}",
            also=tuple(found[1:]),
        )
    ]


def _pairs(text: str) -> list[MentionDraft]:
    drafts: list[MentionDraft] = []
    for match in _PAIR.finditer(text):
        latin = match.group(1) or match.group(4)
        chinese = match.group(2) or match.group(3)
        kind = EntityKind.PLACE if latin in PLACES else EntityKind.PERSON
        drafts.append(
            MentionDraft(
                latin,
                kind,
                MentionRole.MENTION,
                AliasKind.NAME,
                also=((chinese, AliasKind.TRANSLATION),),
            )
        )
    return drafts


def _chinese_places(text: str) -> list[MentionDraft]:
    return [
        MentionDraft(
            english,
            EntityKind.PLACE,
            MentionRole.MENTION,
            AliasKind.NAME,
            also=((match.group(0), AliasKind.TRANSLATION),),
        )
        for match in _ZH_PLACE.finditer(text)
        if (english := _ZH_PLACES[match.group(0)])
    ]


_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")


def _chinese_names(text: str) -> list[MentionDraft]:
    """Two or three characters led by a common surname: a Chinese name has no capital
    to mark it, so each is tentative, joining only a person already known by it (or by
    its pinyin: 林伟 in "我和林伟去了上海" is Lin Wei)."""
    places = [match.span() for match in _ZH_PLACE.finditer(text)]
    drafts: list[MentionDraft] = []
    for run in _CJK_RUN.finditer(text):
        for start in range(run.start(), run.end()):
            if text[start] not in ZH_SURNAMES:
                continue
            drafts.extend(
                MentionDraft(
                    text[start:end],
                    EntityKind.PERSON,
                    MentionRole.MENTION,
                    AliasKind.NAME,
                    tentative=True,
                )
                for end in (start + 2, start + 3)
                if end <= run.end()
                # 华沙 is Warsaw: a place's characters are no one's name.
                and not any(low < end and start < high for low, high in places)
            )
    return drafts


def mentions_in(text: str, speaker: str | None, role: Role) -> list[MentionDraft]:
    """Every entity draft of one turn (its speaker first), duplicates removed."""
    if role not in (Role.USER, Role.ASSISTANT):
        return []
    text = _REDACTION.sub(" ", text)
    owner = _owner(speaker, role if role is Role.USER else Role.ASSISTANT)
    if role is Role.ASSISTANT and not speaker:
        owner = None  # an assistant's "my" is not anyone this memory keeps
    # The speaker first, with the names they give themself.
    drafts: list[MentionDraft] = _self_names(text, speaker, owner)
    if speaker and not drafts:
        drafts.append(
            MentionDraft(
                speaker, EntityKind.PERSON, MentionRole.SPEAKER, AliasKind.SPEAKER
            )
        )
    drafts.extend(_pairs(text))
    drafts.extend(_kinship(text, owner))
    kin_names = {name for draft in drafts for name, _ in draft.also}
    paired = {draft.name for draft in drafts}
    drafts.extend(
        draft
        for draft in _english_names(text, speaker)
        if draft.name not in kin_names and draft.name not in paired
    )
    drafts.extend(_chinese_places(text))
    drafts.extend(_chinese_names(text))
    unique: dict[
        tuple[str, str | None, MentionRole, tuple[tuple[str, AliasKind], ...]],
        MentionDraft,
    ] = {}
    for draft in drafts:
        unique.setdefault((fold(draft.name), draft.key, draft.role, draft.also), draft)
    return list(unique.values())
