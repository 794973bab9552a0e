"""Export of an agent's memory as JSON lines (format in design/cli.md).

An export holds what cannot be derived: evidence (events), claims with their sources,
lineage (derivations, and the identity of claims merged into others), the conflicts
raised between claims and the user's resolutions of them, directives and tombstones. Lexical and vector indexes are derived and rebuilt on import (FTS rows with
each row, vectors by the agent's warm-up). Records name each other by their stable IDs
(event, claim, directive), never by rowid, and are written in a fixed order with fixed
key order, so export → import into an empty directory → export gives the same bytes.

Reading an export back is :mod:`cairn.store.import_records`.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any, Final

from cairn.domain.characters import json_escape
from cairn.domain.evidence import EventKind, EvidenceClass, Role, Turn
from cairn.domain.ids import AgentId, EventId, SessionId
from cairn.store.evidence import NOT_CLEARING, content_hash
from cairn.store.extraction_state import ExtractionState
from cairn.store.merge import merge_records

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import apsw

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "RECORD_TYPES",
    "claim_records",
    "encode_line",
    "header",
    "iter_export",
]

FORMAT: Final = "cairn-export"
FORMAT_VERSION: Final = 1
RECORD_TYPES: Final = (
    "event",
    "claim",
    "derivation",
    "merge",
    "conflict",
    "directive",
    "tombstone",
    "evidence_tombstone",
)


def header() -> dict[str, Any]:
    return {"type": "header", "format": FORMAT, "version": FORMAT_VERSION}


def encode_line(record: dict[str, Any]) -> str:
    """One record as one line: UTF-8 text, no spaces, keys in the order built; controls,
    bidi and invisible characters as ``\\uXXXX`` escapes (``cairn export -`` may be read
    on a terminal; a JSON reader gets the same text)."""
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    return json_escape(line) + "\n"


def iter_export(
    connection: apsw.Connection, agents: Sequence[AgentId]
) -> Iterator[dict[str, Any]]:
    """Every record of ``agents``, agent by agent; run inside one read transaction."""
    for agent in agents:
        yield from _events(connection, agent)
        yield from claim_records(connection, agent)
        yield from _derivations(connection, agent)
        yield from merge_records(connection, agent, NOT_CLEARING)
        yield from _conflicts(connection, agent)
        yield from _directives(connection, agent)
        yield from _tombstones(connection, agent)
        yield from _evidence_tombstones(connection, agent)


def _events(connection: apsw.Connection, agent: AgentId) -> Iterator[dict[str, Any]]:
    for row in connection.execute(
        "SELECT event_id, session_id, role, speaker, text, content_hash, occurred_at,"  # noqa: S608 - a fixed clause
        " received_at, extracted, kind, EXISTS (SELECT 1 FROM hidden_evidence h"
        "  WHERE h.agent_id = e.agent_id AND h.event_rowid = e.rowid), evidence_class,"
        " metadata"
        f" FROM events e WHERE agent_id = ? AND {NOT_CLEARING} ORDER BY rowid",
        (agent,),
    ):
        (
            event_id,
            session,
            role,
            speaker,
            text,
            digest,
            occurred,
            received,
            done,
            kind,
            hidden,
            evidence_class,
            metadata,
        ) = row
        if str(kind) == EventKind.MESSAGE_DELETED:
            # A deletion carries no text; the message it withdrew is exported withdrawn.
            continue
        turn = Turn(
            EventId(str(event_id)),
            SessionId(str(session)),
            Role(str(role)),
            str(text),
            dt.datetime.fromisoformat(str(occurred)),
            None if speaker is None else str(speaker),
            EventKind(str(kind)),
        )
        # `at` is exported only if the caller gave it: the content hash tells, since it
        # covers `at` exactly when it was given.
        given = content_hash(turn) == digest
        record: dict[str, Any] = {
            "type": "event",
            "agent": agent,
            "id": turn.event_id,
            "session": turn.session_id,
            "role": turn.role.value,
            "speaker": turn.speaker,
            "text": turn.text,
            "at": str(occurred) if given else None,
            "received_at": str(received),
            # Skipped and withdrawn rows are never extracted again either.
            "extracted": ExtractionState(int(done)) is not ExtractionState.PENDING,
        }
        # Runtime events say what they are; plain messages keep the record as it was.
        if turn.kind is not EventKind.MESSAGE:
            record["kind"] = turn.kind.value
        # The source of a forgotten claim: stored as the record, never recalled, and it
        # must stay so wherever the export is imported.
        if hidden:
            record["hidden"] = True
        # An edited, retried or deleted message: kept as the session's record, never
        # recalled or extracted again, wherever the export is imported.
        if ExtractionState(int(done)) is ExtractionState.WITHDRAWN:
            record["withdrawn"] = True
        # A turn stored as noise stays noise wherever the export is imported.
        if str(evidence_class) != EvidenceClass.CONTENT:
            record["noise"] = str(evidence_class)
        # The caller's metadata, present only when given (an older record reads as ever).
        if metadata is not None:
            record["metadata"] = json.loads(str(metadata))
        yield record


def claim_records(
    connection: apsw.Connection, agent: AgentId, claim_id: str | None = None
) -> Iterator[dict[str, Any]]:
    """The agent's claims as export records (or the one with ``claim_id``)."""
    for row in connection.execute(
        "SELECT c.claim_id, c.kind, c.lifecycle, c.origin, c.text, c.subject,"
        " c.predicate, c.confidence, c.temporal_confidence, c.valid_from, c.valid_until,"
        " c.time_precision, c.timezone, c.scope, c.scope_key, c.revision,"
        " c.provenance_key, c.created_at, c.updated_at,"
        " (SELECT json_group_array(json_array(e.event_id, s.span_start, s.span_end))"
        "   FROM (SELECT * FROM claim_sources WHERE claim_rowid = c.rowid"
        "         ORDER BY event_rowid, span_start, span_end) s"
        "   JOIN events e ON e.rowid = s.event_rowid),"
        " c.recurrence, c.metadata"
        " FROM claims c WHERE c.agent_id = ?1 AND (?2 IS NULL OR c.claim_id = ?2)"
        " ORDER BY c.rowid",
        (agent, claim_id),
    ):
        temporal = None
        if row[11] is not None:
            temporal = {
                "valid_from": row[9],
                "valid_until": row[10],
                "precision": row[11],
                "timezone": row[12],
                "confidence": row[8],
            }
        record: dict[str, Any] = {
            "type": "claim",
            "agent": agent,
            "id": row[0],
            "kind": row[1],
            "lifecycle": row[2],
            "origin": row[3],
            "text": row[4],
            "subject": row[5],
            "predicate": row[6],
            "confidence": row[7],
            "temporal": temporal,
            "scope": row[13],
            "scope_key": row[14],
            "revision": row[15],
            "provenance_key": row[16],
            "created_at": row[17],
            "updated_at": row[18],
            "sources": [
                {"event": event_id, "start": start, "end": end}
                for event_id, start, end in json.loads(str(row[19]))
            ],
        }
        # Present only on recurring claims, so an export of other claims reads as before.
        if row[20] is not None:
            record["recurrence"] = json.loads(str(row[20]))
        if row[21] is not None:
            record["metadata"] = json.loads(str(row[21]))
        yield record


def _derivations(
    connection: apsw.Connection, agent: AgentId
) -> Iterator[dict[str, Any]]:
    for parent, child, relation, created_at in connection.execute(
        "SELECT p.claim_id, c.claim_id, d.relation, d.created_at FROM derivations d"
        " JOIN claims p ON p.rowid = d.parent_rowid"
        " JOIN claims c ON c.rowid = d.child_rowid"
        " WHERE d.agent_id = ? ORDER BY d.rowid",
        (agent,),
    ):
        yield {
            "type": "derivation",
            "agent": agent,
            "parent": parent,
            "child": child,
            "relation": relation,
            "created_at": created_at,
        }


def _conflicts(connection: apsw.Connection, agent: AgentId) -> Iterator[dict[str, Any]]:
    # A resolution is the user's decision: without it an import would raise the pair
    # again, and succession could make the claim the user rejected current again.
    for row in connection.execute(
        "SELECT f.conflict_id, a.claim_id, b.claim_id, f.scope, f.scope_key, f.reason,"
        " f.status, f.resolution, k.claim_id, s.claim_id, f.created_at, f.resolved_at"
        " FROM conflicts f JOIN claims a ON a.rowid = f.claim_a"
        " JOIN claims b ON b.rowid = f.claim_b"
        " LEFT JOIN claims k ON k.rowid = f.kept_rowid"
        " LEFT JOIN claims s ON s.rowid = f.superseded_rowid"
        " WHERE f.agent_id = ? ORDER BY f.rowid",
        (agent,),
    ):
        (
            conflict_id,
            first,
            second,
            scope,
            scope_key,
            reason,
            status,
            resolution,
            kept,
            superseded,
            created_at,
            resolved_at,
        ) = row
        yield {
            "type": "conflict",
            "agent": agent,
            "id": conflict_id,
            "claims": [first, second],
            "scope": scope,
            "scope_key": scope_key,
            "reason": reason,
            "status": status,
            "resolution": resolution,
            "kept": kept,
            "superseded": superseded,
            "created_at": created_at,
            "resolved_at": resolved_at,
        }


def _directives(
    connection: apsw.Connection, agent: AgentId
) -> Iterator[dict[str, Any]]:
    for directive_id, kind, text, status, created_at, updated_at in connection.execute(
        "SELECT directive_id, kind, text, status, created_at, updated_at"
        " FROM directives WHERE agent_id = ? ORDER BY rowid",
        (agent,),
    ):
        yield {
            "type": "directive",
            "agent": agent,
            "id": directive_id,
            "kind": kind,
            "text": text,
            "status": status,
            "created_at": created_at,
            "updated_at": updated_at,
        }


def _tombstones(
    connection: apsw.Connection, agent: AgentId
) -> Iterator[dict[str, Any]]:
    for provenance, content, created_at in connection.execute(
        "SELECT provenance_hash, content_hash, created_at FROM tombstones"
        " WHERE agent_id = ? ORDER BY provenance_hash, content_hash",
        (agent,),
    ):
        yield {
            "type": "tombstone",
            "agent": agent,
            "provenance_hash": provenance,
            "content_hash": content,
            "created_at": created_at,
        }


def _evidence_tombstones(
    connection: apsw.Connection, agent: AgentId
) -> Iterator[dict[str, Any]]:
    for identity, created_at in connection.execute(
        "SELECT identity_hash, created_at FROM evidence_tombstones"
        " WHERE agent_id = ? ORDER BY identity_hash",
        (agent,),
    ):
        yield {
            "type": "evidence_tombstone",
            "agent": agent,
            "identity_hash": identity,
            "created_at": created_at,
        }
