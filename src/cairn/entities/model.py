"""The text model's entity and relation drafts, as mention drafts of the same tables.

Untrusted like every model answer: a name or alias counts for a cited event only if it
appears there verbatim (case-insensitive), and a kind outside the five is a person's when
unsure. A relation's subject and object become mentions of the events it cites, so the
edge the claim states can find both (cairn.store.entities.record_relations).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cairn.entities.vocabulary import (
    AliasKind,
    EntityKind,
    EventMentions,
    MentionDraft,
    MentionRole,
)

__all__ = ["ModelEntity", "model_mentions"]

# (name, kind, aliases, cited event IDs)
ModelEntity = tuple[str, str, Sequence[str], Sequence[str]]


def _kind(value: str) -> EntityKind:
    try:
        return EntityKind(value.strip().casefold())
    except ValueError:
        return EntityKind.PERSON


def model_mentions(
    entities: Sequence[ModelEntity],
    texts: Mapping[str, tuple[int, str]],
) -> list[EventMentions]:
    """Mention drafts per event rowid; ``texts`` maps each batch event ID to its rowid
    and text."""
    found: dict[int, list[MentionDraft]] = {}
    for name, kind, aliases, sources in entities:
        for event_id in sources:
            event = texts.get(event_id)
            if event is None:
                continue
            rowid, text = event
            folded = text.casefold()
            if not name.strip() or name.casefold() not in folded:
                continue
            also = tuple(
                (alias, AliasKind.NICKNAME)
                for alias in aliases
                if alias.strip() and alias.casefold() in folded
            )
            found.setdefault(rowid, []).append(
                MentionDraft(
                    name, _kind(kind), MentionRole.MENTION, AliasKind.NAME, also=also
                )
            )
    return [(rowid, tuple(drafts)) for rowid, drafts in found.items()]
