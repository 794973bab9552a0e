"""Recomputing claims' identity hashes (schema 5: the scope joined the hashes).

Runs as the Python step of migration 0005, inside its transaction, and for one row when a
repair changes a claim's scope key. Tombstones cannot be recomputed (they hold no text);
their old hashes stay and are checked agent-wide (store/tombstones.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cairn.domain.claim import ClaimDraft, ClaimKind, SourceSpan
from cairn.domain.ids import EventId
from cairn.domain.scope import Scope, ScopeKind
from cairn.store.tombstones import claim_hashes

if TYPE_CHECKING:
    import apsw

__all__ = ["rekey_claim", "rekey_claims"]


def rekey_claim(connection: apsw.Connection, rowid: int) -> None:
    """Store the scoped provenance key and content hash of claim ``rowid``."""
    row = connection.execute(
        "SELECT agent_id, kind, text, scope, scope_key, confidence FROM claims"
        " WHERE rowid = ?",
        (rowid,),
    ).fetchone()
    if row is None:
        return
    agent_id, kind, text, scope, scope_key, confidence = row
    spans = tuple(
        SourceSpan(EventId(str(event_id)), int(start), int(end))
        for event_id, start, end in connection.execute(
            "SELECT e.event_id, s.span_start, s.span_end FROM claim_sources s"
            " JOIN events e ON e.rowid = s.event_rowid WHERE s.claim_rowid = ?",
            (rowid,),
        )
    )
    try:
        draft_scope = Scope(
            ScopeKind(str(scope)), None if scope_key is None else str(scope_key)
        )
        draft = ClaimDraft(
            kind=ClaimKind(str(kind)),
            text=str(text),
            spans=spans,
            confidence=float(confidence),
            scope=draft_scope,
        )
    except ValueError:
        return  # a damaged row: the open-time repair decides about it
    provenance, content = claim_hashes(str(agent_id), draft)
    # OR IGNORE: two rows whose texts differ only in what the new normal form ignores
    # would share a key; the later one keeps its old (still unique) key.
    connection.execute(
        "UPDATE OR IGNORE claims SET provenance_key = ?, content_hash = ? WHERE rowid = ?",
        (provenance, content, rowid),
    )


def rekey_claims(connection: apsw.Connection) -> None:
    """Every claim row, the clear fence lifted for this transaction only."""
    connection.execute(
        "INSERT OR IGNORE INTO clear_fence_override (agent_id)"
        " SELECT DISTINCT agent_id FROM clear_jobs WHERE phase <> 'done'"
    )
    rowids = [int(row[0]) for row in connection.execute("SELECT rowid FROM claims")]
    for rowid in rowids:
        rekey_claim(connection, rowid)
    connection.execute("DELETE FROM clear_fence_override")
