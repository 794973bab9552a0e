"""Claim rows: commit of validated drafts, and owner/scope-checked loads for recall."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

import attrs

from cairn.domain.claim import Claim, ClaimDraft, ClaimKind, Lifecycle, Origin
from cairn.domain.ids import AgentId, EventId, opaque_id
from cairn.domain.metadata import RecallFilter, metadata_from_json
from cairn.domain.scope import Scope, ScopeKind
from cairn.domain.temporal import Recurrence, TemporalSpan, TimePrecision
from cairn.store.dirty import mark_dirty
from cairn.store.fts import index_text, namespace
from cairn.store.merge import add_merged_sources, merged_identity
from cairn.store.metadata import (
    absorb_claim_metadata,
    claim_conditions,
    inherit_metadata,
    write_claim_metadata,
)
from cairn.store.succession import order_succession, refresh_evidence_time
from cairn.store.tombstones import claim_hashes, claim_is_tombstoned

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    import apsw

__all__ = [
    "CommittedClaims",
    "claim_fts_body",
    "claims_citing",
    "first_sources",
    "insert_claims",
    "lexical_body",
    "load_claims",
]


@attrs.frozen
class CommittedClaims:
    """What one commit did: new claims ``(rowid, text)`` to embed, merges, supersessions."""

    inserted: tuple[tuple[int, str], ...]
    merged: int
    superseded: int
    suppressed: int


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.astimezone(dt.UTC).isoformat()


def insert_claims(
    connection: apsw.Connection,
    agent_id: AgentId,
    drafts: Sequence[ClaimDraft],
    event_rowids: Mapping[EventId, int],
    now: dt.datetime,
    origin: Origin = Origin.EXTRACTED,
) -> CommittedClaims:
    """Commit validated drafts; the caller owns the transaction.

    Per draft: a tombstoned provenance or content is suppressed; an identical active claim
    in the same scope gains the new sources instead of a duplicate row; a claim with the same
    subject and predicate in the same scope joins that attribute's succession, ordered by
    evidence time (cairn.store.succession; lineage recorded).
    """
    stamp = _iso(now)
    inserted: list[tuple[int, str]] = []
    merged = superseded = suppressed = 0
    for draft in drafts:
        key, digest = claim_hashes(agent_id, draft)
        if claim_is_tombstoned(connection, agent_id, draft):
            suppressed += 1
            continue
        scope_key = draft.scope.key
        existing = connection.execute(
            "SELECT rowid FROM claims WHERE agent_id = ? AND content_hash = ?"
            " AND lifecycle = 'active' AND scope = ? AND scope_key IS ?",
            (agent_id, digest, draft.scope.kind.value, scope_key),
        ).fetchone()
        if existing is not None:
            absorb_claim_metadata(connection, int(existing[0]), draft.metadata)
            if _add_sources(connection, int(existing[0]), draft, event_rowids):
                # New sources are a change maintenance looks at (its evidence grew).
                mark_dirty(connection, agent_id, [int(existing[0])])
            refresh_evidence_time(connection, int(existing[0]))
            superseded += order_succession(
                connection, agent_id, int(existing[0]), str(stamp)
            )
            merged += 1
            continue
        # A claim merged away (cairn.store.merge) is held by its survivor: its replay, or
        # the same words again, add their sources there instead of storing it again.
        into = merged_identity(connection, agent_id, key, digest)
        if into is not None and into.survivor_lifecycle == "active":
            absorb_claim_metadata(connection, into.survivor, draft.metadata)
            _add_sources(connection, into.survivor, draft, event_rowids)
            add_merged_sources(
                connection,
                agent_id,
                into,
                [event_rowids[span.event_id] for span in draft.spans],
            )
            refresh_evidence_time(connection, into.survivor)
            superseded += order_succession(
                connection, agent_id, into.survivor, str(stamp)
            )
            merged += 1
            continue
        if into is not None and into.by_provenance:
            continue
        if connection.execute(
            "SELECT 1 FROM claims WHERE agent_id = ? AND provenance_key = ?",
            (agent_id, key),
        ).fetchone():
            continue
        temporal = draft.temporal
        connection.execute(
            "INSERT INTO claims (claim_id, agent_id, kind, lifecycle, origin, text, subject,"
            " predicate, confidence, temporal_confidence, valid_from, valid_until,"
            " time_precision, timezone, scope, scope_key, provenance_key, content_hash,"
            " created_at, updated_at, recurrence)"
            " VALUES (?, ?, ?, 'active', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                opaque_id(),
                agent_id,
                draft.kind.value,
                origin.value,
                draft.text,
                draft.subject,
                draft.predicate,
                draft.confidence,
                None if temporal is None else temporal.confidence,
                None if temporal is None else _iso(temporal.valid_from),
                None if temporal is None else _iso(temporal.valid_until),
                None if temporal is None else temporal.precision.value,
                None if temporal is None else temporal.timezone,
                draft.scope.kind.value,
                scope_key,
                key,
                digest,
                stamp,
                stamp,
                None if draft.recurrence is None else draft.recurrence.to_json(),
            ),
        )
        rowid = connection.last_insert_rowid()
        if draft.metadata is not None:
            write_claim_metadata(connection, rowid, draft.metadata)
        _add_sources(connection, rowid, draft, event_rowids)
        refresh_evidence_time(connection, rowid)
        connection.execute(
            "INSERT INTO claim_fts (rowid, body) VALUES (?, ?)",
            (
                rowid,
                claim_fts_body(
                    agent_id,
                    draft.text,
                    draft.predicate,
                    draft.scope.kind.value,
                    scope_key,
                ),
            ),
        )
        if draft.subject is not None and draft.predicate is not None:
            superseded += order_succession(connection, agent_id, rowid, str(stamp))
        mark_dirty(connection, agent_id, [rowid])
        inserted.append((rowid, draft.text))
    return CommittedClaims(tuple(inserted), merged, superseded, suppressed)


def lexical_body(text: str, predicate: str | None) -> str:
    """A claim is found by what it says and by the attribute it settles: a state claim
    with predicate ``lives_in`` answers "where does she live" even when it says "moved to".
    """
    if predicate is None:
        return text
    attribute = predicate.replace("_", " ").replace(":", " ")
    return f"{text} {attribute}"


def claim_fts_body(
    agent_id: str,
    text: str,
    predicate: str | None,
    scope: str,
    scope_key: str | None,
) -> str:
    """The claim's row in ``claim_fts``, computed from its stored columns alone (so a
    damaged contentless index can be rebuilt from the claims table)."""
    return index_text(
        lexical_body(text, predicate), namespace(agent_id, scope, scope_key)
    )


def _add_sources(
    connection: apsw.Connection,
    claim_rowid: int,
    draft: ClaimDraft,
    event_rowids: Mapping[EventId, int],
) -> int:
    """Returns how many of the spans were new. The claim inherits the metadata of the
    turns it cites (cairn.store.metadata.inherit_metadata)."""
    added = 0
    for span in draft.spans:
        connection.execute(
            "INSERT OR IGNORE INTO claim_sources (claim_rowid, event_rowid, span_start, span_end)"
            " VALUES (?, ?, ?, ?)",
            (claim_rowid, event_rowids[span.event_id], span.start, span.end),
        )
        added += connection.changes()
    if added:
        inherit_metadata(
            connection,
            claim_rowid,
            (event_rowids[span.event_id] for span in draft.spans),
        )
    return added


def _scope_filter(scopes: Sequence[Scope]) -> tuple[str, list[str | None]]:
    clauses = []
    params: list[str | None] = []
    for scope in scopes:
        if scope.kind is ScopeKind.AGENT:
            clauses.append("c.scope = 'agent'")
        else:
            clauses.append("(c.scope = ? AND c.scope_key = ?)")
            params.extend([scope.kind.value, scope.key])
    return "(" + " OR ".join(clauses) + ")", params


def _parse_time(value: object) -> dt.datetime | None:
    return None if value is None else dt.datetime.fromisoformat(str(value))


_LOAD_CLAIMS = (
    "SELECT c.rowid, c.claim_id, c.kind, c.lifecycle, c.origin, c.text, c.confidence,"
    " c.temporal_confidence, c.valid_from, c.valid_until, c.time_precision, c.timezone,"
    " c.scope, c.scope_key, c.revision, c.subject, c.predicate,"
    # One pass over the claim's sources: their event IDs, and whether all are the
    # assistant's.
    " (SELECT json_object('ids', json_group_array(e.event_id),"
    "   'assistant', min(e.role = 'assistant')) FROM claim_sources s"
    "   JOIN events e ON e.rowid = s.event_rowid WHERE s.claim_rowid = c.rowid),"
    " c.recurrence, c.evidence_at, c.superseded_at,"
    # In an open conflict (cairn.store.conflicts): recall marks it.
    " EXISTS (SELECT 1 FROM conflicts k WHERE k.status = 'open'"
    "  AND (k.claim_a = c.rowid OR k.claim_b = c.rowid)), c.metadata"
    # CROSS JOIN drives the lookup from the candidate list (a rowid probe each) instead of
    # letting the planner scan the agent's index.
    " FROM json_each(?) AS wanted CROSS JOIN claims c ON c.rowid = wanted.value"
    " WHERE c.agent_id = ?"
    " AND c.lifecycle IN (SELECT value FROM json_each(?))"
    # A pending clear hides every claim it covers, on every read path, until it is done.
    " AND NOT EXISTS (SELECT 1 FROM clear_jobs j WHERE j.agent_id = c.agent_id"
    "  AND j.phase <> 'done' AND c.rowid <= j.rowid_cutoff) AND "
)


def load_claims(
    connection: apsw.Connection,
    agent_id: AgentId,
    rowids: Iterable[int],
    scopes: Sequence[Scope],
    lifecycles: Sequence[Lifecycle] = (Lifecycle.ACTIVE,),
    recall_filter: RecallFilter | None = None,
) -> dict[int, Claim]:
    """Authoritative re-validation: only rows of this agent, in these scopes and
    lifecycles (and those ``recall_filter`` keeps).

    Every candidate, whatever index proposed it, passes through here before ranking
    (tests/retrieval/test_isolation.py).
    """
    scope_sql, scope_params = _scope_filter(scopes)
    filtered, filter_params = claim_conditions(recall_filter)
    sql = _LOAD_CLAIMS + scope_sql + filtered
    rows = connection.execute(
        sql,
        (
            json.dumps(sorted(set(rowids))),
            agent_id,
            json.dumps([lifecycle.value for lifecycle in lifecycles]),
            *scope_params,
            *filter_params,
        ),
    )
    claims: dict[int, Claim] = {}
    for row in rows:
        sources = json.loads(str(row[17]))
        temporal = None
        if row[10] is not None:
            temporal = TemporalSpan(
                valid_from=_parse_time(row[8]),
                valid_until=_parse_time(row[9]),
                precision=TimePrecision(str(row[10])),
                timezone=str(row[11] or "UTC"),
                confidence=float(row[7] if row[7] is not None else 1.0),
            )
        scope_kind = ScopeKind(str(row[12]))
        claim = Claim(
            rowid=int(row[0]),
            claim_id=str(row[1]),
            kind=ClaimKind(str(row[2])),
            lifecycle=Lifecycle(str(row[3])),
            origin=Origin(str(row[4])),
            text=str(row[5]),
            confidence=float(row[6]),
            temporal=temporal,
            scope=Scope(scope_kind, None if row[13] is None else str(row[13])),
            revision=int(row[14]),
            subject=None if row[15] is None else str(row[15]),
            predicate=None if row[16] is None else str(row[16]),
            source_event_ids=tuple(EventId(e) for e in sources["ids"]),
            recurrence=_recurrence(row[18]),
            evidence_at=_parse_time(row[19]),
            superseded_at=_parse_time(row[20]),
            from_assistant=bool(sources["assistant"]),
            conflicting=bool(row[21]),
            metadata=metadata_from_json(row[22]),
        )
        claims[claim.rowid] = claim
    return claims


def _recurrence(value: object) -> Recurrence | None:
    """The stored recurrence; one that no longer validates is dropped, not fatal to recall
    (the claim stays, as a plain recurring statement without a next occurrence)."""
    if value is None:
        return None
    try:
        return Recurrence.from_json(str(value))
    except ValueError:
        return None


def claims_citing(
    connection: apsw.Connection, agent_id: AgentId, event_rowids: Iterable[int]
) -> dict[int, list[int]]:
    """Claim rowids of the agent citing each of ``event_rowids`` (unvalidated: pass the
    result through :func:`load_claims`)."""
    cited: dict[int, list[int]] = {}
    for event_rowid, claim_rowid in connection.execute(
        "SELECT s.event_rowid, s.claim_rowid FROM json_each(?) AS wanted"
        " CROSS JOIN claim_sources s ON s.event_rowid = wanted.value"
        " JOIN claims c ON c.rowid = s.claim_rowid WHERE c.agent_id = ?",
        (json.dumps(sorted(set(event_rowids))), agent_id),
    ):
        cited.setdefault(int(event_rowid), []).append(int(claim_rowid))
    return cited


def first_sources(
    connection: apsw.Connection, claim_rowids: Iterable[int]
) -> dict[int, int]:
    """The first source event rowid of each claim that has one (its anchor in recall)."""
    return {
        int(claim): int(event)
        for claim, event in connection.execute(
            "SELECT s.claim_rowid, min(s.event_rowid) FROM json_each(?) AS wanted"
            " CROSS JOIN claim_sources s ON s.claim_rowid = wanted.value"
            " GROUP BY s.claim_rowid",
            (json.dumps(sorted(set(claim_rowids))),),
        )
    }
