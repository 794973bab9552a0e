"""What the entity layer speaks of: kinds, mention roles, alias kinds, drafts."""

from __future__ import annotations

import enum
import unicodedata

import attrs

__all__ = [
    "AliasKind",
    "EntityKind",
    "EventMentions",
    "MentionDraft",
    "MentionRole",
    "fold",
]


class EntityKind(enum.StrEnum):
    PERSON = "person"
    PLACE = "place"
    ORGANISATION = "organisation"
    PROJECT = "project"
    ARTEFACT = "artefact"


class MentionRole(enum.StrEnum):
    """How a turn involves an entity.

    ``speaker``: the turn is said by it (its "I" and "my"); ``mention``: the turn speaks
    of it; ``addressee``: the turn only calls it by name ("Thanks, Mel!"), which says
    nothing about it, so entity-centred recall leaves those turns out.
    """

    SPEAKER = "speaker"
    MENTION = "mention"
    ADDRESSEE = "addressee"


class AliasKind(enum.StrEnum):
    """Where a name comes from; the canonical name is the alias of the first kind here
    (then the longest, then the earliest)."""

    SPEAKER = "speaker"
    NAME = "name"
    TRANSLATION = "translation"
    NICKNAME = "nickname"
    KINSHIP = "kinship"


# Precedence of alias kinds for the canonical name.
CANONICAL_ORDER = (
    AliasKind.SPEAKER,
    AliasKind.NAME,
    AliasKind.TRANSLATION,
    AliasKind.KINSHIP,
    AliasKind.NICKNAME,
)


def fold(name: str) -> str:
    """The key an alias is matched by: NFKC, case-folded, inner whitespace single,
    a trailing possessive dropped ("Melanie's" is Melanie)."""
    text = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    for suffix in ("'s", "’s", "s'"):
        if text.endswith(suffix) and len(text) > len(suffix) + 1:
            text = text[: -len(suffix)] if suffix != "s'" else text[:-1]
            break
    return text.strip(" .,!?;:\"'“”‘’")


@attrs.frozen
class MentionDraft:
    """One name a turn gives an entity, before resolution.

    ``key`` identifies the entity when the name alone cannot (a kinship reference is
    keyed by whose relative it is: ``kin:<owner>:<relation>``); ``None`` resolves by
    the folded name. ``also`` are further aliases the same turn gives it (an English
    and a Chinese form, a kinship reference and the relative's name).
    """

    name: str
    kind: EntityKind
    role: MentionRole
    alias_kind: AliasKind
    key: str | None = None
    also: tuple[tuple[str, AliasKind], ...] = ()
    # A lone capitalised word opening a sentence may be any word ("Call me…"): such a
    # draft only joins an entity already known by that name, never starts one.
    tentative: bool = False


# One turn's rowid and the entity drafts read from it.
EventMentions = tuple[int, tuple[MentionDraft, ...]]
