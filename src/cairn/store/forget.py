"""Selective forgetting, archiving and explicit remembering.

``forget_memory`` forgets whatever recall showed, by the ID the item carries: a claim
(tombstone, hashes only, and the row deleted; its FTS row and stored embedding go with it
through the delete trigger) or a stored turn or segment (cairn.store.forget_evidence). The
caller removes the live vectors afterwards. ``remember_claim`` is the explicit path into
memory: a model's remember respects tombstones, a user's re-add of the exact claim releases
them in the same transaction as the insert (tests/runtime/test_forget.py).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import attrs

from cairn import crashpoints
from cairn.domain.claim import ClaimDraft, ClaimKind, Lifecycle, Origin
from cairn.domain.outcomes import (
    ForgetResult,
    ForgottenKind,
    LifecycleResult,
    RememberOutcome,
    RememberResult,
)
from cairn.errors import (
    ClearPendingError,
    InvalidTransitionError,
    ProtectedClaimError,
    UnknownClaimError,
    UnknownMemoryError,
)
from cairn.store.claims import insert_claims
from cairn.store.clear_jobs import pending_clear
from cairn.store.conflicts import reinstate_losers, superseded_by
from cairn.store.dirty import mark_dirty
from cairn.store.forget_evidence import delete_evidence, resolve_evidence
from cairn.store.forget_lineage import forget_derived_reflections
from cairn.store.fts_purge import request_fts_purge
from cairn.store.merge import merged_identity, survivor_of, tombstone_merged
from cairn.store.requests import drop_late_results
from cairn.store.succession import chains_of, order_succession, reorder_chains
from cairn.store.tombstones import (
    claim_hashes,
    content_hash_v1,
    provenance_key_v1,
    write_tombstone,
)

if TYPE_CHECKING:
    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    # Re-exported: the results these writes return (defined in cairn.domain.outcomes).
    "ForgetResult",
    "Forgotten",
    "ForgottenKind",
    "LifecycleResult",
    "RememberOutcome",
    "RememberResult",
    "edited_into",
    "forget_memory",
    "remember_claim",
    "set_archived",
]

# Rows with their own state machines: never moved by the generic lifecycle calls.
PROTECTED_KINDS = frozenset({ClaimKind.PERSONA.value, ClaimKind.WORKING.value})


@attrs.frozen
class Forgotten:
    """A forget's result, and the rows whose live vectors must go after the commit."""

    result: ForgetResult
    claim_rowids: tuple[int, ...] = ()
    event_rowids: tuple[int, ...] = ()
    # Turns re-indexed without a forgotten context turn: their vectors are re-embedded.
    reembed_rowids: tuple[int, ...] = ()
    # Turns re-opened for extraction (claims merged into a forgotten survivor).
    extract_again: bool = False


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
        raise UnknownClaimError(f"no claim {claim_id!r} in agent {agent_id!r}")
    rowid, kind, lifecycle, provenance, content = row
    if kind in PROTECTED_KINDS:
        raise ProtectedClaimError(
            f"{kind} rows are rebuilt by their own projection, not forgotten or archived"
        )
    return int(rowid), str(kind), str(lifecycle), str(provenance), str(content)


def edited_into(connection: apsw.Connection, rowid: int) -> str | None:
    """The claim ID the user last edited claim ``rowid`` into, if it is still stored."""
    row = connection.execute(
        "SELECT c.claim_id FROM derivations d JOIN claims c ON c.rowid = d.child_rowid"
        " WHERE d.parent_rowid = ? AND d.relation = 'edit'"
        " ORDER BY d.rowid DESC LIMIT 1",
        (rowid,),
    ).fetchone()
    return None if row is None else str(row[0])


def forget_memory(
    connection: apsw.Connection, agent_id: AgentId, item_id: str, now: dt.datetime
) -> Forgotten:
    """Forget the claim or stored turn ``item_id`` names (recall items carry these IDs);
    :class:`UnknownMemoryError` when it names neither."""
    if pending_clear(connection, agent_id) is not None:
        raise ClearPendingError(f"a clear job is pending for {agent_id!r}")
    if connection.execute(
        "SELECT 1 FROM claims WHERE agent_id = ? AND claim_id = ?", (agent_id, item_id)
    ).fetchone():
        return _forget_claim(connection, agent_id, item_id, now)
    survivor = survivor_of(connection, agent_id, item_id)
    if survivor is not None:
        # A claim merged into another: that one now says it (cairn.store.merge).
        forgotten = _forget_claim(connection, agent_id, survivor, now)
        return attrs.evolve(
            forgotten,
            result=attrs.evolve(
                forgotten.result,
                id=item_id,
                claims_removed=(item_id, *forgotten.result.claims_removed),
            ),
        )
    rowids = resolve_evidence(connection, agent_id, item_id)
    if rowids is None:
        raise UnknownMemoryError(
            f"no memory {item_id!r} in agent {agent_id!r}: it is neither a claim ID nor"
            " the ID of a stored turn (recall and export show both)"
        )
    removal = delete_evidence(connection, agent_id, rowids, now, tombstone_content=True)
    drop_late_results(connection, agent_id)
    stamp = now.astimezone(dt.UTC).isoformat()
    connection.execute(
        "INSERT INTO audit (agent_id, at, action, detail) VALUES (?, ?, 'forget', ?)",
        (agent_id, stamp, item_id),
    )
    removed = ["stored turn", "its lexical index entries", "its stored vectors"]
    if removal.claims_removed:
        removed.append("claims learned only from it")
    if removal.reindexed:
        removed.append("its words from the next turn's index entry")
    if removal.extract_again:
        removed.append(
            "claims that took their words from it (what was merged into them is"
            " learned again from its own turns)"
        )
    kept = ["tombstones (hashes only): the turn is not stored again"]
    if removal.claims_kept:
        kept.insert(0, "claims other evidence still supports (this source detached)")
    return Forgotten(
        ForgetResult(
            id=item_id,
            kind=ForgottenKind.EVIDENCE,
            claims_removed=tuple(claim_id for _, claim_id in removal.claims_removed),
            claims_kept=removal.claims_kept,
            turns_removed=removal.event_ids,
            removed=tuple(removed),
            kept=tuple(kept),
        ),
        claim_rowids=tuple(rowid for rowid, _ in removal.claims_removed),
        event_rowids=removal.event_rowids,
        reembed_rowids=removal.reindexed,
        extract_again=bool(removal.extract_again),
    )


def _forget_claim(
    connection: apsw.Connection, agent_id: AgentId, claim_id: str, now: dt.datetime
) -> Forgotten:
    """Tombstone and delete one claim (any lifecycle but persona/working rows)."""
    rowid, _kind, _lifecycle, provenance, content = _claim_row(
        connection, agent_id, claim_id
    )
    stamp = now.astimezone(dt.UTC).isoformat()
    write_tombstone(connection, agent_id, provenance, content, stamp)
    # The claims merged into it say the same: they stay forgotten with it.
    tombstone_merged(connection, agent_id, [rowid], stamp)
    crashpoints.reach("forget.after_tombstone")
    # Its source turns stay stored but leave recall (cairn.retrieval.suppress).
    connection.execute(
        "INSERT OR IGNORE INTO hidden_evidence (agent_id, event_rowid, created_at)"
        " SELECT ?, event_rowid, ? FROM claim_sources WHERE claim_rowid = ?",
        (agent_id, stamp, rowid),
    )
    hidden = connection.changes()
    derived = forget_derived_reflections(connection, agent_id, [rowid], stamp)
    chains = chains_of(connection, [rowid])
    losers = superseded_by(connection, agent_id, [rowid])
    connection.execute("DELETE FROM claims WHERE rowid = ?", (rowid,))
    connection.execute(
        "DELETE FROM dirty_work WHERE agent_id = ? AND claim_rowid = ?",
        (agent_id, rowid),
    )
    connection.execute(
        "DELETE FROM derivations WHERE agent_id = ? AND (parent_rowid = ? OR child_rowid = ?)",
        (agent_id, rowid, rowid),
    )
    reorder_chains(connection, agent_id, chains, stamp)
    reinstate_losers(connection, agent_id, losers, stamp)
    drop_late_results(connection, agent_id)
    request_fts_purge(connection, "claim_fts", now)
    connection.execute(
        "INSERT INTO audit (agent_id, at, action, detail) VALUES (?, ?, 'forget', ?)",
        (agent_id, stamp, claim_id),
    )
    kept = ["tombstone (hashes only)"]
    if hidden:
        kept.insert(0, "source evidence (stored, no longer recalled)")
    removed = ["claim", "lexical index entry", "stored vector"]
    if derived:
        removed.append("reflections drawn from it")
    return Forgotten(
        ForgetResult(
            id=claim_id,
            kind=ForgottenKind.CLAIM,
            claims_removed=(claim_id, *(child_id for _, child_id in derived)),
            hidden_evidence=hidden,
            removed=tuple(removed),
            kept=tuple(kept),
        ),
        claim_rowids=(rowid, *(child for child, _ in derived)),
    )


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
    newer = None if archived else edited_into(connection, rowid)
    if newer is not None and lifecycle == Lifecycle.ARCHIVED.value:
        # An edited revision is history of the one it became (cairn.store.edit).
        raise InvalidTransitionError(
            f"claim {claim_id} was edited into {newer}; it stays as that one's history"
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
    mark_dirty(connection, agent_id, [rowid])
    connection.execute(
        "INSERT INTO audit (agent_id, at, action, detail) VALUES (?, ?, ?, ?)",
        (agent_id, stamp, "archive" if archived else "unarchive", claim_id),
    )
    if archived:
        drop_late_results(connection, agent_id)
        return LifecycleResult(
            claim_id,
            target.value,
            "archived: the claim is still stored locally and can be restored, but it no"
            " longer takes part in recall",
        )
    # While archived it was out of its attribute's chain, so a newer value that arrived
    # meanwhile superseded nothing: restored, it takes its place in the chain by evidence
    # time again (current only if it is the newest).
    order_succession(connection, agent_id, rowid, stamp)
    row = connection.execute(
        "SELECT lifecycle FROM claims WHERE rowid = ?", (rowid,)
    ).fetchone()
    restored = target.value if row is None else str(row[0])
    if restored == Lifecycle.SUPERSEDED.value:
        note = (
            "restored as history: a newer value of the same attribute arrived while it"
            " was archived, so it takes part in recall as what held before"
        )
    else:
        note = "restored: the claim takes part in recall again"
    return LifecycleResult(claim_id, restored, note)


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
    key, digest = claim_hashes(agent_id, draft)
    released = 0
    if origin is Origin.USER:
        connection.execute(
            "DELETE FROM tombstones WHERE agent_id = ?"
            " AND (content_hash IN (?, ?) OR provenance_hash IN (?, ?))",
            (
                agent_id,
                digest,
                content_hash_v1(agent_id, draft.text),
                key,
                provenance_key_v1(agent_id, draft),
            ),
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
    if existing is None:
        # Merged into another claim (cairn.store.merge): that one is what is stored.
        into = merged_identity(connection, agent_id, key, digest)
        assert into is not None  # noqa: S101 - insert_claims skips only known claims
        existing = connection.execute(
            "SELECT claim_id, rowid, lifecycle FROM claims WHERE rowid = ?",
            (into.survivor,),
        ).fetchone()
    assert existing is not None  # noqa: S101 - insert_claims skips only known claims
    if str(existing[2]) == Lifecycle.ARCHIVED.value and origin is Origin.USER:
        # A user re-adding an archived claim means it: bring it back.
        connection.execute(
            "UPDATE claims SET lifecycle = 'active', revision = revision + 1,"
            " updated_at = ? WHERE rowid = ?",
            (now.astimezone(dt.UTC).isoformat(), int(existing[1])),
        )
        mark_dirty(connection, agent_id, [int(existing[1])])
    return RememberResult(
        RememberOutcome.EXISTING,
        str(existing[0]),
        int(existing[1]),
        released,
    )
