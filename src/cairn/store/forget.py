"""Selective forgetting, archiving and explicit remembering of single claims.

``forget_claim`` writes the tombstone (hashes only) and deletes the claim in the caller's
transaction; the FTS row and stored embedding go with it through the delete trigger, and
the caller removes the live vector afterwards. ``remember_claim`` is the explicit path into
memory: a model's remember respects tombstones, a user's re-add of the exact claim releases
them in the same transaction as the insert (tests/runtime/test_forget.py).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from cairn.domain.claim import ClaimDraft, ClaimKind, Lifecycle, Origin
from cairn.domain.outcomes import (
    ForgetResult,
    LifecycleResult,
    RememberOutcome,
    RememberResult,
)
from cairn.errors import (
    ClearPendingError,
    InvalidTransitionError,
    ProtectedClaimError,
    UnknownClaimError,
)
from cairn.store.claims import content_hash, insert_claims, provenance_key
from cairn.store.clear_jobs import pending_clear
from cairn.store.fts_purge import request_fts_purge

if TYPE_CHECKING:
    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    # Re-exported: the results these writes return (defined in cairn.domain.outcomes).
    "ForgetResult",
    "LifecycleResult",
    "RememberOutcome",
    "RememberResult",
    "forget_claim",
    "remember_claim",
    "set_archived",
    "write_tombstone",
]

# Rows with their own state machines: never moved by the generic lifecycle calls.
PROTECTED_KINDS = frozenset({ClaimKind.PERSONA.value, ClaimKind.WORKING.value})


def write_tombstone(
    connection: apsw.Connection,
    agent_id: str,
    provenance: str,
    content: str,
    stamp: str,
) -> None:
    """Record a forgotten claim's identity: its provenance and content hashes, no text."""
    connection.execute(
        "INSERT OR IGNORE INTO tombstones (agent_id, provenance_hash, content_hash,"
        " created_at) VALUES (?, ?, ?, ?)",
        (agent_id, provenance, content, stamp),
    )


def _claim_row(
    connection: apsw.Connection, agent_id: AgentId, claim_id: str
) -> tuple[int, str, str, str, str]:
    if pending_clear(connection, agent_id) is not None:
        raise ClearPendingError(f"a clear job is pending for {agent_id!r}")
    row = connection.execute(
        "SELECT rowid, kind, lifecycle, provenance_key, content_hash FROM claims"
        " WHERE agent_id = ? AND claim_id = ?",
        (agent_id, claim_id),
    ).fetchone()
    if row is None:
        raise UnknownClaimError(claim_id)
    rowid, kind, lifecycle, provenance, content = row
    if kind in PROTECTED_KINDS:
        raise ProtectedClaimError(
            f"{kind} rows are rebuilt by their own projection, not forgotten or archived"
        )
    return int(rowid), str(kind), str(lifecycle), str(provenance), str(content)


def _drop_late_results(connection: apsw.Connection, agent_id: AgentId) -> None:
    # Stored late recall answers may quote the forgotten text: they are caches, drop them.
    connection.execute("DELETE FROM recall_requests WHERE agent_id = ?", (agent_id,))


def forget_claim(
    connection: apsw.Connection, agent_id: AgentId, claim_id: str, now: dt.datetime
) -> ForgetResult:
    """Tombstone and delete one claim (any lifecycle but persona/working rows)."""
    rowid, _kind, _lifecycle, provenance, content = _claim_row(
        connection, agent_id, claim_id
    )
    stamp = now.astimezone(dt.UTC).isoformat()
    write_tombstone(connection, agent_id, provenance, content, stamp)
    # Its source turns stay stored but leave recall (cairn.retrieval.suppress).
    connection.execute(
        "INSERT OR IGNORE INTO hidden_evidence (agent_id, event_rowid, created_at)"
        " SELECT ?, event_rowid, ? FROM claim_sources WHERE claim_rowid = ?",
        (agent_id, stamp, rowid),
    )
    hidden = connection.changes()
    connection.execute("DELETE FROM claims WHERE rowid = ?", (rowid,))
    connection.execute(
        "DELETE FROM dirty_work WHERE agent_id = ? AND claim_rowid = ?",
        (agent_id, rowid),
    )
    connection.execute(
        "DELETE FROM derivations WHERE agent_id = ? AND (parent_rowid = ? OR child_rowid = ?)",
        (agent_id, rowid, rowid),
    )
    _drop_late_results(connection, agent_id)
    request_fts_purge(connection, "claim_fts", now)
    connection.execute(
        "INSERT INTO audit (agent_id, at, action, detail) VALUES (?, ?, 'forget', ?)",
        (agent_id, stamp, claim_id),
    )
    return ForgetResult(claim_id, rowid, hidden_evidence=hidden)


def set_archived(
    connection: apsw.Connection,
    agent_id: AgentId,
    claim_id: str,
    archived: bool,
    now: dt.datetime,
) -> LifecycleResult:
    """Archive an active claim (kept locally, out of recall) or restore an archived one."""
    rowid, _kind, lifecycle, _provenance, _content = _claim_row(
        connection, agent_id, claim_id
    )
    source, target = (
        (Lifecycle.ACTIVE, Lifecycle.ARCHIVED)
        if archived
        else (Lifecycle.ARCHIVED, Lifecycle.ACTIVE)
    )
    if lifecycle != source.value:
        raise InvalidTransitionError(
            f"claim {claim_id} is {lifecycle}; only {source.value} claims can become"
            f" {target.value}"
        )
    stamp = now.astimezone(dt.UTC).isoformat()
    connection.execute(
        "UPDATE claims SET lifecycle = ?, revision = revision + 1, updated_at = ?"
        " WHERE rowid = ?",
        (target.value, stamp, rowid),
    )
    connection.execute(
        "INSERT INTO audit (agent_id, at, action, detail) VALUES (?, ?, ?, ?)",
        (agent_id, stamp, "archive" if archived else "unarchive", claim_id),
    )
    if archived:
        _drop_late_results(connection, agent_id)
        note = (
            "archived: the claim is still stored locally and can be restored, but it no"
            " longer takes part in recall"
        )
    else:
        note = "restored: the claim takes part in recall again"
    return LifecycleResult(claim_id, target.value, note)


def remember_claim(
    connection: apsw.Connection,
    agent_id: AgentId,
    draft: ClaimDraft,
    origin: Origin,
    now: dt.datetime,
) -> RememberResult:
    """Store one explicitly remembered claim (no source spans).

    ``origin`` USER is a user's explicit add: tombstones of exactly this claim are released
    in this transaction. MODEL (or EXTRACTED) never releases one.
    """
    if draft.kind.value in PROTECTED_KINDS:
        raise ProtectedClaimError(
            f"{draft.kind.value} rows cannot be remembered directly"
        )
    key = provenance_key(agent_id, draft)
    digest = content_hash(agent_id, draft.text)
    released = 0
    if origin is Origin.USER:
        connection.execute(
            "DELETE FROM tombstones WHERE agent_id = ?"
            " AND (content_hash = ? OR provenance_hash = ?)",
            (agent_id, digest, key),
        )
        released = connection.changes()
    committed = insert_claims(connection, agent_id, [draft], {}, now, origin=origin)
    if committed.suppressed:
        return RememberResult(RememberOutcome.SUPPRESSED, None)
    if committed.inserted:
        rowid = committed.inserted[0][0]
        row = connection.execute(
            "SELECT claim_id FROM claims WHERE rowid = ?", (rowid,)
        ).fetchone()
        assert row is not None  # noqa: S101 - inserted in this transaction
        return RememberResult(RememberOutcome.STORED, str(row[0]), rowid, released)
    existing = connection.execute(
        "SELECT claim_id, rowid, lifecycle FROM claims WHERE agent_id = ?"
        " AND (provenance_key = ? OR (content_hash = ? AND lifecycle = 'active'"
        " AND scope = ? AND scope_key IS ?)) ORDER BY lifecycle = 'active' DESC LIMIT 1",
        (agent_id, key, digest, draft.scope.kind.value, draft.scope.key),
    ).fetchone()
    assert existing is not None  # noqa: S101 - insert_claims skips only known claims
    if str(existing[2]) == Lifecycle.ARCHIVED.value and origin is Origin.USER:
        # A user re-adding an archived claim means it: bring it back.
        connection.execute(
            "UPDATE claims SET lifecycle = 'active', revision = revision + 1,"
            " updated_at = ? WHERE rowid = ?",
            (now.astimezone(dt.UTC).isoformat(), int(existing[1])),
        )
    return RememberResult(
        RememberOutcome.EXISTING,
        str(existing[0]),
        int(existing[1]),
        released,
    )
