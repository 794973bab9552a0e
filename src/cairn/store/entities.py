"""Entity rows: resolving drafts to entities, the turns that mention them, lookups.

Writes run inside the agent's write coordinator transaction (a batch's commit, an edit's
rewind); reads in a recall's snapshot. Resolution, per draft: a keyed draft (someone's
relative) is the entity of that key; a named one the entity already known by that name
(the same kind first, a speaker first); a single person's name that begins exactly one
known person's name is that person's nickname ("Mel" for Melanie); a Chinese name whose
pinyin is exactly one known person's name is that person (林伟 for Lin Wei,
cairn.entities.romanise); otherwise a new entity, unless the draft is tentative (a lone
word opening a sentence, two or three characters led by a Chinese surname). A Chinese
person's name is also stored romanised, so a later "Lin Wei" finds 林伟.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import TYPE_CHECKING

import attrs

from cairn.entities.lexicon import ZH_SURNAMES
from cairn.entities.romanise import is_chinese_name, romanised_forms
from cairn.entities.vocabulary import (
    CANONICAL_ORDER,
    AliasKind,
    EntityKind,
    MentionDraft,
    MentionRole,
    fold,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import apsw

__all__ = [
    "EntityAlias",
    "EntityRecord",
    "EntityRelation",
    "entity_events",
    "forget_mentions",
    "list_entities",
    "record_mentions",
    "record_relations",
    "resolve_names",
    "sole_user_speaker",
]

_CJK = re.compile(r"[\u3400-\u9fff]")
# Shortest nickname matched against the beginning of a known name.
NICKNAME_MIN = 3


def _stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat()


def _create(
    connection: apsw.Connection,
    agent_id: str,
    kind: EntityKind,
    key: str | None,
    now: dt.datetime,
) -> int:
    connection.execute(
        "INSERT INTO entities (agent_id, kind, entity_key, created_at) VALUES (?, ?, ?, ?)",
        (agent_id, kind.value, key, _stamp(now)),
    )
    return int(connection.last_insert_rowid())


def _by_name(
    connection: apsw.Connection,
    agent_id: str,
    folded: str,
    kind: EntityKind,
    *,
    only: bool = False,
) -> int | None:
    """The entity known by ``folded``: of ``kind`` first (``only``: no other kind), a
    speaker's name first, then the earliest."""
    rows = [
        row
        for row in connection.execute(
            "SELECT a.entity_rowid, e.kind, a.alias_kind FROM entity_aliases a"
            " JOIN entities e ON e.rowid = a.entity_rowid"
            " WHERE a.agent_id = ? AND a.folded = ?",
            (agent_id, folded),
        )
        if not only or row[1] == kind.value
    ]
    if not rows:
        return None
    rows.sort(
        key=lambda row: (
            row[1] != kind.value,
            row[2] != AliasKind.SPEAKER.value,
            int(row[0]),
        )
    )
    return int(rows[0][0])


def _nickname_of(connection: apsw.Connection, agent_id: str, folded: str) -> int | None:
    """The one person whose name begins with ``folded``, if exactly one does."""
    if len(folded) < NICKNAME_MIN or " " in folded or _CJK.search(folded):
        return None
    rows = connection.execute(
        "SELECT DISTINCT a.entity_rowid FROM entity_aliases a"
        " JOIN entities e ON e.rowid = a.entity_rowid"
        " WHERE a.agent_id = ?1 AND e.kind = 'person'"
        " AND a.alias_kind IN ('speaker', 'name')"
        " AND length(a.folded) > length(?2) AND substr(a.folded, 1, length(?2)) = ?2",
        (agent_id, folded),
    )
    found = [int(row[0]) for row in rows]
    return found[0] if len(found) == 1 else None


def _romanised_person(
    connection: apsw.Connection, agent_id: str, name: str
) -> int | None:
    """The one person known by a romanised form of the Chinese ``name``, if exactly one
    is."""
    forms = sorted({fold(form) for form in romanised_forms(name)})
    if not forms:
        return None
    rows = connection.execute(
        "SELECT DISTINCT a.entity_rowid FROM entity_aliases a"
        " JOIN entities e ON e.rowid = a.entity_rowid"
        " WHERE a.agent_id = ? AND e.kind = 'person'"
        " AND a.folded IN (SELECT value FROM json_each(?)) LIMIT 2",
        (agent_id, json.dumps(forms)),
    )
    found = [int(row[0]) for row in rows]
    return found[0] if len(found) == 1 else None


def _resolve(
    connection: apsw.Connection, agent_id: str, draft: MentionDraft, now: dt.datetime
) -> tuple[int, AliasKind] | None:
    """The entity ``draft`` names and the kind of alias its name is there."""
    if draft.key is not None:
        row = connection.execute(
            "SELECT rowid FROM entities WHERE agent_id = ? AND entity_key = ?",
            (agent_id, draft.key),
        ).fetchone()
        if row is not None:
            return int(row[0]), draft.alias_kind
        return _create(
            connection, agent_id, draft.kind, draft.key, now
        ), draft.alias_kind
    folded = fold(draft.name)
    # A tentative Chinese name is only ever a person's ("华盛顿" is no one).
    guessed = draft.tentative and is_chinese_name(draft.name)
    known = _by_name(connection, agent_id, folded, draft.kind, only=guessed)
    if known is not None:
        return known, draft.alias_kind
    if draft.kind is EntityKind.PERSON and draft.alias_kind is not AliasKind.SPEAKER:
        person = _nickname_of(connection, agent_id, folded)
        if person is not None:
            return person, AliasKind.NICKNAME
        person = _romanised_person(connection, agent_id, draft.name)
        if person is not None:
            return person, draft.alias_kind
    if draft.tentative:
        return None
    return _create(connection, agent_id, draft.kind, None, now), draft.alias_kind


def _alias(
    connection: apsw.Connection,
    agent_id: str,
    entity: int,
    name: str,
    kind: AliasKind,
) -> int:
    folded = fold(name)
    connection.execute(
        "INSERT INTO entity_aliases (entity_rowid, agent_id, alias, folded, alias_kind)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (entity_rowid, folded) DO NOTHING",
        (entity, agent_id, name, folded, kind.value),
    )
    row = connection.execute(
        "SELECT rowid FROM entity_aliases WHERE entity_rowid = ? AND folded = ?",
        (entity, folded),
    ).fetchone()
    if row is None:  # pragma: no cover - inserted or already there, in this transaction
        raise RuntimeError("an alias just written is not there")
    return int(row[0])


def _mention(
    connection: apsw.Connection, entity: int, event: int, alias: int, role: MentionRole
) -> None:
    connection.execute(
        "INSERT OR IGNORE INTO entity_mentions"
        " (entity_rowid, event_rowid, alias_rowid, role) VALUES (?, ?, ?, ?)",
        (entity, event, alias, role.value),
    )


def forget_mentions(connection: apsw.Connection, event_rowids: Iterable[int]) -> None:
    """Drop what these turns said of entities (they are withdrawn or read again); an
    alias or entity nothing else attests goes with them (the schema's triggers)."""
    connection.execute(
        "DELETE FROM entity_mentions WHERE event_rowid IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(set(event_rowids))),),
    )


def _romanised_aliases(
    names: Sequence[tuple[str, AliasKind]],
) -> list[tuple[str, AliasKind]]:
    """A Chinese person's name in Latin letters, by its usual reading in both orders
    (the other readings only match a name, they are not worth listing)."""
    return [
        (form, AliasKind.TRANSLATION)
        for name, _ in names
        for form in romanised_forms(name)[:2]
    ]


def record_mentions(
    connection: apsw.Connection,
    agent_id: str,
    drafts: Sequence[tuple[int, Sequence[MentionDraft]]],
    now: dt.datetime,
) -> int:
    """Resolve each turn's drafts and store its mentions, replacing what an earlier
    extraction of the same turns stored; returns the mentions written."""
    forget_mentions(connection, (event for event, _ in drafts))
    written = 0
    # Speakers first: "Hey Mel!" before Melanie's first turn in the same batch is still
    # her nickname.
    ordered = [
        (event, draft)
        for speakers_first in (True, False)
        for event, event_drafts in drafts
        for draft in event_drafts
        if (draft.role is MentionRole.SPEAKER) is speakers_first
    ]
    for event, draft in ordered:
        resolved = _resolve(connection, agent_id, draft, now)
        if resolved is None:
            continue
        entity, alias_kind = resolved
        names = [(draft.name, alias_kind), *draft.also]
        if draft.kind is EntityKind.PERSON:
            names += _romanised_aliases(names)
        for name, kind in names:
            if not fold(name):
                continue
            alias = _alias(connection, agent_id, entity, name, kind)
            _mention(connection, entity, event, alias, draft.role)
            written += 1
    return written


# -- relations ----------------------------------------------------------------------------
# Claim predicates that relate their subject to an entity, and the kinds that entity may be.
RELATION_KINDS: dict[str, tuple[EntityKind, ...]] = {
    "lives_in": (EntityKind.PLACE,),
    "works_at": (EntityKind.ORGANISATION, EntityKind.PLACE, EntityKind.PERSON),
    "partner": (EntityKind.PERSON,),
    "member_of": (EntityKind.ORGANISATION,),
}
# The subject of a speakerless user's claims.
USER_SUBJECT = "user"


# Keyed attributes of the rules (cairn.ingestion): "uses:editor" names a category, not
# the object; any other "relation:object" predicate is a text model's relation.
_KEYED_HEADS = frozenset({"uses", "favourite", "plan", "attitude"})


def _relation_of(predicate: str) -> tuple[str, str | None] | None:
    """(relation, the object's name when the predicate names it), or None."""
    if predicate in RELATION_KINDS:
        return predicate, None
    head, _, rest = predicate.partition(":")
    if head == "uses":
        return "uses", None
    if rest and head not in _KEYED_HEADS:
        return head, rest
    return None


def _subject_entity(
    connection: apsw.Connection,
    agent_id: str,
    subject: str,
    first_event: int,
    now: dt.datetime,
) -> int | None:
    if subject.casefold() != USER_SUBJECT:
        return _by_name(connection, agent_id, fold(subject), EntityKind.PERSON)
    # The speakerless user: one entity, named only "user", living while a turn of theirs
    # states a relation.
    draft = MentionDraft(
        USER_SUBJECT,
        EntityKind.PERSON,
        MentionRole.SPEAKER,
        AliasKind.SPEAKER,
        key=f"self:{USER_SUBJECT}",
    )
    resolved = _resolve(connection, agent_id, draft, now)
    if resolved is None:  # pragma: no cover - a keyed draft always resolves
        return None
    entity = resolved[0]
    alias = _alias(connection, agent_id, entity, USER_SUBJECT, AliasKind.SPEAKER)
    _mention(connection, entity, first_event, alias, MentionRole.SPEAKER)
    return entity


def record_relations(
    connection: apsw.Connection,
    agent_id: str,
    claim_rowids: Iterable[int],
    now: dt.datetime,
) -> int:
    """Edges stated by these claims: a claim relating its subject to an entity its turns
    mention ("Ana lives in Lisbon": Ana -lives_in-> Lisbon), the object the earliest such
    entity of a fitting kind named in the claim's text. Returns the edges written."""
    written = 0
    for rowid in claim_rowids:
        row = connection.execute(
            "SELECT subject, predicate, text FROM claims WHERE rowid = ? AND agent_id = ?",
            (rowid, agent_id),
        ).fetchone()
        if row is None or row[0] is None or row[1] is None:
            continue
        subject, predicate, text = str(row[0]), str(row[1]), str(row[2])
        related = _relation_of(predicate)
        if related is None:
            continue
        relation, named = related
        sources = [
            int(r[0])
            for r in connection.execute(
                "SELECT event_rowid FROM claim_sources WHERE claim_rowid = ?"
                " ORDER BY event_rowid",
                (rowid,),
            )
        ]
        if not sources:
            continue
        subject_entity = _subject_entity(connection, agent_id, subject, sources[0], now)
        if subject_entity is None:
            continue
        kinds = RELATION_KINDS.get(relation)
        folded_text = fold(text) if named is None else fold(named)
        best: tuple[int, int] | None = None
        for entity, kind, folded in connection.execute(
            "SELECT DISTINCT m.entity_rowid, e.kind, a.folded FROM entity_mentions m"
            " JOIN entities e ON e.rowid = m.entity_rowid"
            " JOIN entity_aliases a ON a.rowid = m.alias_rowid"
            " WHERE m.event_rowid IN (SELECT value FROM json_each(?))"
            " AND m.role = 'mention'",
            (json.dumps(sources),),
        ):
            if int(entity) == subject_entity:
                continue
            if kinds is not None and EntityKind(kind) not in kinds:
                continue
            position = folded_text.find(str(folded))
            if position >= 0 and (best is None or position < best[0]):
                best = (position, int(entity))
        if best is None:
            continue
        connection.execute(
            "INSERT OR IGNORE INTO entity_relations"
            " (agent_id, subject_rowid, relation, object_rowid, claim_rowid)"
            " VALUES (?, ?, ?, ?, ?)",
            (agent_id, subject_entity, relation, best[1], rowid),
        )
        written += 1
    return written


# -- reads --------------------------------------------------------------------------------
def resolve_names(
    connection: apsw.Connection,
    agent_id: str,
    folded_names: Iterable[str],
    keys: Iterable[str] = (),
) -> dict[str, list[int]]:
    """Entities known by each folded name (and each entity key), for a query; a Chinese
    name led by a surname no alias has is the one person its pinyin names, if one is
    ("林伟住在哪里？" asks of Lin Wei)."""
    found: dict[str, list[int]] = {}
    names = sorted(set(folded_names))
    if names:
        for folded, entity in connection.execute(
            "SELECT DISTINCT folded, entity_rowid FROM entity_aliases"
            " WHERE agent_id = ? AND folded IN (SELECT value FROM json_each(?))",
            (agent_id, json.dumps(names)),
        ):
            found.setdefault(str(folded), []).append(int(entity))
    for name in names:
        if (
            name not in found
            and 2 <= len(name) <= 3
            and name[0] in ZH_SURNAMES
            and is_chinese_name(name)
            and (person := _romanised_person(connection, agent_id, name)) is not None
        ):
            found[name] = [person]
    wanted = sorted(set(keys))
    if wanted:
        for key, entity in connection.execute(
            "SELECT entity_key, rowid FROM entities"
            " WHERE agent_id = ? AND entity_key IN (SELECT value FROM json_each(?))",
            (agent_id, json.dumps(wanted)),
        ):
            found.setdefault(str(key), []).append(int(entity))
    return found


def sole_user_speaker(connection: apsw.Connection, agent_id: str) -> str | None:
    """The speaker name of the agent's user turns when there is exactly one (None: no
    named user, or several). Reads the speaker aliases (a handful per agent), each
    checked for one user turn it spoke."""
    names = [
        str(row[0])
        for row in connection.execute(
            "SELECT a.alias FROM entity_aliases a WHERE a.agent_id = ?"
            " AND a.alias_kind = 'speaker' AND a.folded <> ?"
            " AND EXISTS (SELECT 1 FROM entity_mentions m"
            "  JOIN events e ON e.rowid = m.event_rowid"
            "  WHERE m.alias_rowid = a.rowid AND m.role = 'speaker' AND e.role = 'user')"
            " LIMIT 2",
            (agent_id, USER_SUBJECT),
        )
    ]
    return names[0] if len(names) == 1 else None


def entity_events(
    connection: apsw.Connection,
    agent_id: str,
    entities: Iterable[int],
    roles: Sequence[MentionRole] = (MentionRole.SPEAKER, MentionRole.MENTION),
) -> set[int]:
    """The turns said by or speaking of any of ``entities`` (the agent's own only)."""
    wanted = sorted(set(entities))
    if not wanted:
        return set()
    return {
        int(row[0])
        for row in connection.execute(
            "SELECT DISTINCT m.event_rowid FROM entity_mentions m"
            " JOIN entities e ON e.rowid = m.entity_rowid"
            " WHERE e.agent_id = ? AND m.entity_rowid IN (SELECT value FROM json_each(?))"
            " AND m.role IN (SELECT value FROM json_each(?))",
            (agent_id, json.dumps(wanted), json.dumps([role.value for role in roles])),
        )
    }


# -- inspection ---------------------------------------------------------------------------
@attrs.frozen
class EntityAlias:
    alias: str
    kind: AliasKind
    # The turns (event IDs) that give the entity this name.
    sources: tuple[str, ...]


@attrs.frozen
class EntityRelation:
    relation: str
    # The other entity's canonical name; ``outgoing``: this entity is the subject.
    other: str
    outgoing: bool
    claim_id: str
    valid_from: str | None
    valid_until: str | None


@attrs.frozen
class EntityRecord:
    entity_id: int
    kind: EntityKind
    name: str
    aliases: tuple[EntityAlias, ...]
    mentions: int
    relations: tuple[EntityRelation, ...] = ()


def _canonical(aliases: Sequence[EntityAlias]) -> str:
    order = {kind: index for index, kind in enumerate(CANONICAL_ORDER)}
    return min(
        aliases, key=lambda alias: (order[alias.kind], -len(alias.alias), alias.alias)
    ).alias


def list_entities(
    connection: apsw.Connection,
    agent_id: str,
    name: str | None = None,
    limit: int = 100,
) -> list[EntityRecord]:
    """The agent's entities (those known by ``name`` when given), most mentioned first,
    each with its aliases, the turns giving them, and its relations."""
    if name is None:
        rows = list(
            connection.execute(
                "SELECT e.rowid, e.kind, count(DISTINCT m.event_rowid) AS n FROM entities e"
                " JOIN entity_mentions m ON m.entity_rowid = e.rowid WHERE e.agent_id = ?"
                " GROUP BY e.rowid ORDER BY n DESC, e.rowid LIMIT ?",
                (agent_id, limit),
            )
        )
    else:
        rows = connection.execute(
            "SELECT e.rowid, e.kind, count(DISTINCT m.event_rowid) AS n FROM entities e"
            " JOIN entity_mentions m ON m.entity_rowid = e.rowid WHERE e.agent_id = ?"
            " AND e.rowid IN (SELECT entity_rowid FROM entity_aliases"
            "  WHERE agent_id = ? AND folded = ?)"
            " GROUP BY e.rowid ORDER BY n DESC, e.rowid LIMIT ?",
            (agent_id, agent_id, fold(name), limit),
        ).fetchall()
    records: list[EntityRecord] = []
    names: dict[int, str] = {}
    for rowid, kind, mentions in rows:
        aliases = _aliases_of(connection, int(rowid))
        if not aliases:
            continue
        names[int(rowid)] = _canonical(aliases)
        records.append(
            EntityRecord(
                int(rowid), EntityKind(kind), names[int(rowid)], aliases, int(mentions)
            )
        )
    return [
        attrs.evolve(record, relations=_relations_of(connection, record.entity_id))
        for record in records
    ]


def _aliases_of(connection: apsw.Connection, entity: int) -> tuple[EntityAlias, ...]:
    aliases: list[EntityAlias] = []
    for alias_rowid, alias, kind in list(
        connection.execute(
            "SELECT rowid, alias, alias_kind FROM entity_aliases WHERE entity_rowid = ?"
            " ORDER BY rowid",
            (entity,),
        )
    ):
        sources = tuple(
            str(row[0])
            for row in connection.execute(
                "SELECT DISTINCT ev.event_id FROM entity_mentions m"
                " JOIN events ev ON ev.rowid = m.event_rowid"
                " WHERE m.alias_rowid = ? ORDER BY ev.rowid LIMIT 20",
                (int(alias_rowid),),
            )
        )
        aliases.append(EntityAlias(str(alias), AliasKind(kind), sources))
    return tuple(aliases)


def entity_name(connection: apsw.Connection, entity: int) -> str | None:
    aliases = _aliases_of(connection, entity)
    return _canonical(aliases) if aliases else None


def _relations_of(
    connection: apsw.Connection, entity: int
) -> tuple[EntityRelation, ...]:
    relations: list[EntityRelation] = []
    for (
        subject,
        relation,
        obj,
        claim_id,
        valid_from,
        until,
        ended,
    ) in list(
        connection.execute(
            "SELECT r.subject_rowid, r.relation, r.object_rowid, c.claim_id, c.evidence_at,"
            " c.superseded_at, c.valid_until FROM entity_relations r"
            " JOIN claims c ON c.rowid = r.claim_rowid"
            " WHERE (r.subject_rowid = ?1 OR r.object_rowid = ?1)"
            " AND c.lifecycle IN ('active', 'superseded')"
            " ORDER BY c.evidence_at, r.rowid",
            (entity,),
        )
    ):
        outgoing = int(subject) == entity
        other = entity_name(connection, int(obj) if outgoing else int(subject))
        if other is None:
            continue
        _add_relation(
            relations,
            EntityRelation(
                str(relation),
                other,
                outgoing,
                str(claim_id),
                None if valid_from is None else str(valid_from),
                None if until is None and ended is None else str(until or ended),
            ),
        )
    return tuple(relations)


def _add_relation(relations: list[EntityRelation], edge: EntityRelation) -> None:
    """Append ``edge``, or extend the same edge it restates: "I moved to Lisbon" and
    then "我搬到里斯本了" are one stay in Lisbon, not a closed one and an open one. The
    restated edge keeps its start and takes the later claim (the one holding now)."""
    for index in range(len(relations) - 1, -1, -1):
        earlier = relations[index]
        if (earlier.relation, earlier.other, earlier.outgoing) != (
            edge.relation,
            edge.other,
            edge.outgoing,
        ):
            continue
        if _meets(earlier.valid_until, edge.valid_from):
            relations[index] = attrs.evolve(
                earlier,
                claim_id=edge.claim_id,
                valid_until=_later_end(earlier.valid_until, edge.valid_until),
            )
            return
        break
    relations.append(edge)


def _meets(until: str | None, start: str | None) -> bool:
    """Whether a span ending at ``until`` reaches one starting at ``start``."""
    if until is None:
        return True
    if start is None:
        return False
    return dt.datetime.fromisoformat(until) >= dt.datetime.fromisoformat(start)


def _later_end(first: str | None, second: str | None) -> str | None:
    if first is None or second is None:
        return None
    return max(first, second, key=dt.datetime.fromisoformat)
