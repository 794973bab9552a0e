"""The agent's entities as the API shows them: the store's records as public values.

The store (cairn.store.entities) speaks in the entity layer's enums; the API's records
(cairn.api.reports) carry their string values, so a client reads them without the engine
and every surface returns the same value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cairn.api.reports import Entity, EntityAlias, EntityRelation
from cairn.store.entities import list_entities

if TYPE_CHECKING:
    import apsw

    from cairn.store import entities as stored

__all__ = ["read_entities"]


def read_entities(
    connection: apsw.Connection, agent_id: str, *, name: str | None, limit: int
) -> list[Entity]:
    """The agent's entities (those known by ``name``), most mentioned first."""
    return [
        _entity(record)
        for record in list_entities(connection, agent_id, name=name, limit=limit)
    ]


def _entity(record: stored.EntityRecord) -> Entity:
    return Entity(
        entity_id=record.entity_id,
        kind=record.kind.value,
        name=record.name,
        aliases=tuple(_alias(alias) for alias in record.aliases),
        mentions=record.mentions,
        relations=tuple(_relation(relation) for relation in record.relations),
    )


def _alias(alias: stored.EntityAlias) -> EntityAlias:
    return EntityAlias(alias.alias, alias.kind.value, tuple(alias.sources))


def _relation(relation: stored.EntityRelation) -> EntityRelation:
    return EntityRelation(
        relation=relation.relation,
        other=relation.other,
        outgoing=relation.outgoing,
        claim_id=relation.claim_id,
        valid_from=relation.valid_from,
        valid_until=relation.valid_until,
    )
