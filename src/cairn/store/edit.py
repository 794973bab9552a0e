"""A user's edit of a memory: a new revision in its place, the old one kept as history.

The edited claim is archived (stored, out of recall and out of its attribute's
succession chain) and a new claim with the user's words is remembered through
:func:`cairn.store.forget.remember_claim`, linked by an ``edit`` derivation from the
old to the new, all in one transaction. The new revision is the same memory said
better: it keeps the kind, scope, attribute (subject and predicate), validity,
recurrence and evidence time of the old one, so it takes the old one's place in the
chain (current if the old one was, history if it was superseded), and only the words
change. It cites no turn: the words are the user's, not their turns'. The old revision
keeps its sources, which leave recall as a forgotten claim's do (``hidden_evidence``:
still stored, never shown), so recall shows the new words and never the old.

Editing into words another active claim of the scope already says links to that claim
instead of storing a duplicate. An edited revision is never unarchived
(cairn.store.forget.set_archived refuses) or edited again: the newer revision is the
one to change.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import attrs

from cairn.domain.claim import ClaimDraft, Lifecycle, Origin
from cairn.domain.outcomes import RememberOutcome
from cairn.domain.scope import Scope, ScopeKind
from cairn.errors import (
    ClearPendingError,
    InvalidInputError,
    InvalidTransitionError,
    ProtectedClaimError,
    UnknownClaimError,
)
from cairn.store.claims import load_claims
from cairn.store.clear_jobs import pending_clear
from cairn.store.dirty import mark_dirty
from cairn.store.forget import PROTECTED_KINDS, edited_into, remember_claim
from cairn.store.requests import drop_late_results
from cairn.store.succession import chains_of, reorder_chains
from cairn.store.tombstones import normal_form

if TYPE_CHECKING:
    import apsw

    from cairn.domain.ids import AgentId

__all__ = ["Edited", "edit_claim"]


@attrs.frozen
class Edited:
    """The rows of an edit: the revision archived, and the one recall shows now
    (``stored``: a new row, to embed; else an existing claim saying the same)."""

    previous_rowid: int
    rowid: int
    stored: bool


def edit_claim(
    connection: apsw.Connection,
    agent_id: AgentId,
    claim_id: str,
    text: str,
    now: dt.datetime,
) -> Edited:
    """Replace claim ``claim_id``'s words with ``text`` (already redacted) as a new
    revision; the caller owns the transaction. UnknownClaimError for no such claim
    (forgotten ones included), ProtectedClaimError for a persona or working row,
    InvalidTransitionError for an archived one, InvalidInputError for words that say
    what it already says."""
    if pending_clear(connection, agent_id) is not None:
        raise ClearPendingError(f"a clear job is pending for {agent_id!r}")
    found = connection.execute(
        "SELECT rowid, kind, lifecycle, evidence_at, scope, scope_key FROM claims"
        " WHERE agent_id = ? AND claim_id = ?",
        (agent_id, claim_id),
    ).fetchone()
    if found is None:
        raise UnknownClaimError(f"no claim {claim_id!r} in agent {agent_id!r}")
    rowid, kind, lifecycle, evidence_at = (
        int(found[0]),
        str(found[1]),
        found[2],
        found[3],
    )
    if kind in PROTECTED_KINDS:
        raise ProtectedClaimError(
            f"{kind} rows are rebuilt by their own projection, not edited"
        )
    if lifecycle == Lifecycle.ARCHIVED.value:
        newer = edited_into(connection, rowid)
        if newer is not None:
            raise InvalidTransitionError(
                f"claim {claim_id} was edited into {newer}: edit that one"
            )
        raise InvalidTransitionError(
            f"claim {claim_id} is archived: unarchive it before editing"
        )
    scope = Scope(ScopeKind(str(found[4])), None if found[5] is None else str(found[5]))
    old = load_claims(connection, agent_id, [rowid], [scope], tuple(Lifecycle))[rowid]
    if normal_form(text) == normal_form(old.text):
        raise InvalidInputError(
            "the new text says what the memory already says (only case, spacing or"
            " punctuation differ)"
        )
    stamp = now.astimezone(dt.UTC).isoformat()
    chains = chains_of(connection, [rowid])
    connection.execute(
        "UPDATE claims SET lifecycle = 'archived', revision = revision + 1,"
        " updated_at = ? WHERE rowid = ?",
        (stamp, rowid),
    )
    # No subject or predicate yet: inserted with them, the claim would be ordered in
    # its chain by the time it was stored, and the lineage edges that writes are never
    # taken back. It gets the old one's attribute and evidence time first.
    # Its source turns say the old words: out of recall as a forgotten claim's are
    # (stored, cairn.retrieval.suppress), so recall never shows them beside the new.
    connection.execute(
        "INSERT OR IGNORE INTO hidden_evidence (agent_id, event_rowid, created_at)"
        " SELECT ?, event_rowid, ? FROM claim_sources WHERE claim_rowid = ?",
        (agent_id, stamp, rowid),
    )
    draft = ClaimDraft(
        kind=old.kind,
        text=text,
        spans=(),
        confidence=0.95,
        temporal=old.temporal,
        scope=old.scope,
        recurrence=old.recurrence,
    )
    remembered = remember_claim(connection, agent_id, draft, Origin.USER, now)
    assert remembered.rowid is not None  # noqa: S101 - a user's remember is never suppressed
    stored = remembered.outcome is RememberOutcome.STORED
    if stored:
        connection.execute(
            "UPDATE claims SET subject = ?, predicate = ?, evidence_at = ? WHERE rowid = ?",
            (old.subject, old.predicate, evidence_at, remembered.rowid),
        )
    connection.execute(
        "INSERT INTO derivations (agent_id, parent_rowid, child_rowid, relation,"
        " created_at) VALUES (?, ?, ?, 'edit', ?)",
        (agent_id, rowid, remembered.rowid, stamp),
    )
    reorder_chains(connection, agent_id, chains, stamp)
    mark_dirty(connection, agent_id, [rowid, remembered.rowid])
    # Stored answers quote the old words.
    drop_late_results(connection, agent_id)
    connection.execute(
        "INSERT INTO audit (agent_id, at, action, detail) VALUES (?, ?, 'edit', ?)",
        (agent_id, stamp, claim_id),
    )
    return Edited(rowid, remembered.rowid, stored)
