"""Reading what an agent remembers, for the user to inspect (``Memory.memories`` and
``Memory.memory``).

Every filter of a listing is a condition of one SQL query, applied before its limit, so
a page of 50 is the newest 50 that match. A claim under a pending clear is hidden, as on
every read path. A memory's detail joins its sources (cairn.runtime.evidence), and its
lineage: the ``derivations`` edges it is either end of, with the merged-away claims'
IDs from ``claim_merges`` (their rows are gone, their IDs are not).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

import attrs

from cairn.api.reports import LineageEntry, MemoryDetail, MemoryItem
from cairn.domain.claim import ClaimKind, Lifecycle
from cairn.domain.metadata import check_tags
from cairn.domain.scope import Scope
from cairn.errors import InvalidInputError, UnknownClaimError
from cairn.retrieval.types import ItemOrigin
from cairn.runtime.evidence import read_evidence
from cairn.store.metadata import tags_condition

if TYPE_CHECKING:
    from collections.abc import Sequence

    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    "MemoryFilter",
    "memory_filter",
    "memory_item",
    "read_memories",
    "read_memory",
]

_KINDS = tuple(kind.value for kind in ClaimKind)
_LIFECYCLES = tuple(lifecycle.value for lifecycle in Lifecycle)


@attrs.frozen
class MemoryFilter:
    """A listing's conditions, checked: each ``None`` matches every claim."""

    kind: str | None = None
    scope: Scope | None = None
    lifecycle: str | None = None
    since: str | None = None
    until: str | None = None
    text: str | None = None
    # Any of these (caller metadata's tags, stored as claim_tags rows).
    tags: tuple[str, ...] = ()


def _utc(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dt.datetime) or value.utcoffset() is None:
        raise InvalidInputError(
            f"{name} must be a datetime with a UTC offset (e.g."
            f" 2026-03-01T09:00:00+00:00); got {value!r:.40}"
        )
    return value.astimezone(dt.UTC).isoformat()


def memory_filter(
    *,
    kind: str | None,
    scope: Scope | None,
    lifecycle: str | None,
    since: dt.datetime | None,
    until: dt.datetime | None,
    text: str | None,
    tags: Sequence[str] = (),
) -> MemoryFilter:
    """Check a listing's filters: an unknown kind or lifecycle, a naive time, a blank
    text or a ``since`` not before ``until`` is InvalidInputError naming the values
    there are."""
    if kind is not None and kind not in _KINDS:
        raise InvalidInputError(
            f"unknown memory kind {kind!r}; the kinds are {', '.join(_KINDS)}"
        )
    if lifecycle is not None and lifecycle not in _LIFECYCLES:
        raise InvalidInputError(
            f"unknown lifecycle {lifecycle!r}; the lifecycles are"
            f" {', '.join(_LIFECYCLES)}"
        )
    if text is not None and not text.strip():
        raise InvalidInputError("the text to look for must not be blank")
    start, end = _utc("since", since), _utc("until", until)
    if since is not None and until is not None and since >= until:
        raise InvalidInputError("since must be before until")
    wanted_tags = check_tags(tags, "the tags filter")
    return MemoryFilter(kind, scope, lifecycle, start, end, text, wanted_tags)


_COLUMNS = (
    "SELECT c.rowid, c.claim_id, c.kind, c.text, c.lifecycle, c.origin, c.confidence,"
    " c.scope, c.scope_key, c.created_at, c.updated_at, c.revision, c.evidence_at,"
    " c.valid_from, c.valid_until, c.superseded_at,"
    " (SELECT b.stage FROM beliefs b WHERE b.claim_rowid = c.rowid),"
    # Its source turns' IDs in the order stored, and whether every one is the
    # assistant's (a claim from its own words: assistant_cited).
    " (SELECT json_object('ids', json_group_array(e.event_id),"
    "   'assistant', min(e.role = 'assistant')) FROM (SELECT DISTINCT event_rowid"
    "   FROM claim_sources WHERE claim_rowid = c.rowid ORDER BY event_rowid) s"
    "   JOIN events e ON e.rowid = s.event_rowid),"
    " EXISTS (SELECT 1 FROM conflicts k WHERE k.status = 'open'"
    "  AND (k.claim_a = c.rowid OR k.claim_b = c.rowid))"
    " FROM claims c WHERE c.agent_id = ?"
    " AND NOT EXISTS (SELECT 1 FROM clear_jobs j WHERE j.agent_id = c.agent_id"
    "  AND j.phase <> 'done' AND c.rowid <= j.rowid_cutoff)"
)
_ORIGINS = {
    "user": ItemOrigin.REMEMBERED_BY_USER,
    "model": ItemOrigin.REMEMBERED_BY_MODEL,
}


def _item(row: tuple[object, ...]) -> MemoryItem:
    sources = json.loads(str(row[17]))
    origin = _ORIGINS.get(str(row[5]))
    if origin is None:
        assistant = bool(sources["assistant"]) and bool(sources["ids"])
        origin = ItemOrigin.ASSISTANT_CITED if assistant else ItemOrigin.EXTRACTED
    return MemoryItem(
        id=str(row[1]),
        kind=str(row[2]),
        text=str(row[3]),
        lifecycle=str(row[4]),
        origin=origin.value,
        confidence=float(str(row[6])),
        scope=str(row[7]),
        created_at=str(row[9]),
        updated_at=str(row[10]),
        revision=int(str(row[11])),
        scope_key=_text(row[8]),
        evidence_at=_text(row[12]),
        valid_from=_text(row[13]),
        valid_until=_text(row[14]),
        superseded_at=_text(row[15]),
        stage=_text(row[16]),
        source_refs=tuple(str(ref) for ref in sources["ids"]),
        conflicting=bool(row[18]),
    )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _like(text: str) -> str:
    """``text`` as a LIKE pattern matching it anywhere, its wildcards taken literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def read_memories(
    connection: apsw.Connection,
    agent_id: AgentId,
    wanted: MemoryFilter,
    limit: int,
) -> list[MemoryItem]:
    """The agent's claims matching ``wanted``, newest stored first, at most ``limit``."""
    sql = _COLUMNS
    params: list[object] = [agent_id]
    if wanted.kind is not None:
        sql += " AND c.kind = ?"
        params.append(wanted.kind)
    if wanted.lifecycle is not None:
        sql += " AND c.lifecycle = ?"
        params.append(wanted.lifecycle)
    if wanted.scope is not None:
        sql += " AND c.scope = ? AND c.scope_key IS ?"
        params.extend([wanted.scope.kind.value, wanted.scope.key])
    # Stored times are UTC ISO-8601 of one format, so text order is time order.
    if wanted.since is not None:
        sql += " AND c.created_at >= ?"
        params.append(wanted.since)
    if wanted.until is not None:
        sql += " AND c.created_at < ?"
        params.append(wanted.until)
    if wanted.text is not None:
        # LIKE folds ASCII case only; other scripts match as written.
        sql += " AND c.text LIKE ? ESCAPE '\\'"
        params.append(_like(wanted.text))
    tagged, tag_params = tags_condition(wanted.tags, "claim", "c")
    sql += tagged
    params += tag_params
    sql += " ORDER BY c.created_at DESC, c.rowid DESC LIMIT ?"
    params.append(limit)
    return [_item(row) for row in connection.execute(sql, params)]


def memory_item(
    connection: apsw.Connection, agent_id: AgentId, rowid: int
) -> MemoryItem | None:
    row = connection.execute(
        _COLUMNS + " AND c.rowid = ?", (agent_id, rowid)
    ).fetchone()
    return None if row is None else _item(row)


def read_memory(
    connection: apsw.Connection, agent_id: AgentId, claim_id: str
) -> MemoryDetail:
    """One claim with its evidence and lineage; UnknownClaimError when the agent has no
    claim ``claim_id`` (a forgotten one included: only hashes of it are left)."""
    row = connection.execute(
        _COLUMNS + " AND c.claim_id = ?", (agent_id, claim_id)
    ).fetchone()
    if row is None:
        raise UnknownClaimError(f"no claim {claim_id!r} in agent {agent_id!r}")
    rowid = int(str(row[0]))
    return MemoryDetail(
        memory=_item(row),
        evidence=tuple(read_evidence(connection, agent_id, [claim_id])),
        lineage=tuple(_lineage(connection, agent_id, rowid)),
    )


def _lineage(
    connection: apsw.Connection, agent_id: AgentId, rowid: int
) -> list[LineageEntry]:
    entries: list[LineageEntry] = []
    for relation, child, at, other_id, text, lifecycle, absorbed in connection.execute(
        "SELECT d.relation, d.child_rowid, d.created_at, o.claim_id,"
        " o.text, o.lifecycle, m.absorbed_id FROM derivations d"
        " LEFT JOIN claims o ON o.agent_id = d.agent_id"
        "  AND o.rowid = CASE WHEN d.parent_rowid = ?2 THEN d.child_rowid"
        "  ELSE d.parent_rowid END"
        " LEFT JOIN claim_merges m ON d.relation = 'merge'"
        "  AND m.survivor_rowid = d.child_rowid AND m.absorbed_rowid = d.parent_rowid"
        " WHERE d.agent_id = ?1 AND (d.parent_rowid = ?2 OR d.child_rowid = ?2)"
        " ORDER BY d.created_at, d.rowid",
        (agent_id, rowid),
    ):
        identity = other_id if other_id is not None else absorbed
        if identity is None:
            continue  # the other end is gone and left no ID
        entries.append(
            LineageEntry(
                relation=str(relation),
                other_role="parent" if int(str(child)) == rowid else "child",
                other_id=str(identity),
                at=str(at),
                other_text=_text(text),
                other_lifecycle=_text(lifecycle),
            )
        )
    return entries
