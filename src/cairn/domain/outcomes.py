"""What a single write decided: intake of one event, remember/forget/archive of one claim,
and the contradictions the engine surfaces for the user (conflicts).

The store produces these inside its transactions; every surface (embedded, IPC, asyncio)
returns them unchanged, so they are public values with no I/O attached.
"""

from __future__ import annotations

import enum

import attrs

from cairn.domain.ids import EventId

__all__ = [
    "Conflict",
    "ForgetResult",
    "ForgottenKind",
    "IntakeOutcome",
    "IntakeRejection",
    "IntakeResult",
    "LifecycleResult",
    "RememberOutcome",
    "RememberResult",
]


class IntakeOutcome(enum.StrEnum):
    INGESTED = "ingested"
    DUPLICATE = "duplicate"
    MERGED = "merged"
    REJECTED = "rejected"
    # A tombstone covers the event (forgotten or cleared before): nothing was stored.
    SUPPRESSED = "suppressed"


class IntakeRejection(enum.StrEnum):
    """Why intake refused an event; set exactly when the outcome is ``rejected``.

    Callers branch on this, never on the readable ``reason`` text beside it.
    """

    # The event ID is already stored with other content (the stored row is unchanged).
    CONFLICTING_CONTENT = "conflicting_content"
    # An edit, retry or deletion names a message that is not in its session.
    UNKNOWN_REPLACED_EVENT = "unknown_replaced_event"
    # An event, session or replaced-event ID breaks the ID rules (cairn.domain.ids) or
    # ends like a segment ID (``#seg`` and a number, design/schema.md).
    INVALID_ID = "invalid_id"
    # The turn's time lies outside the supported calendar (cairn.domain.evidence).
    INVALID_TIME = "invalid_time"
    # The turn's text or speaker is not Unicode text (a lone surrogate).
    INVALID_TEXT = "invalid_text"


@attrs.frozen
class IntakeResult:
    """The outcome of one turn or event at intake, with the stored row when there is one.

    ``reason`` is a sentence for people; ``rejection`` is the same decision as a value.
    ``segments`` counts the rows a long text was cut into, ``redactions`` the secrets
    replaced by a marker before anything was stored.
    """

    event_id: EventId
    outcome: IntakeOutcome
    reason: str | None = None
    rowid: int | None = None
    segments: int = 1
    redactions: int = 0
    rejection: IntakeRejection | None = None


class ForgottenKind(enum.StrEnum):
    """What a forget removed: a claim, or a stored turn (or segment) recall showed."""

    CLAIM = "claim"
    EVIDENCE = "evidence"


@attrs.frozen
class ForgetResult:
    """One forgotten memory, deleted, with hash-only tombstones that keep it out.

    ``id`` is the ID the caller named (a claim's or a stored turn's, as recall shows it).
    For a turn, ``claims_removed`` are the claims learned only from it (also tombstoned)
    and ``claims_kept`` those other evidence still supports (they lose this source only).
    For a claim, ``hidden_evidence`` counts its source turns, which stay stored as the
    record but are no longer recalled.
    """

    id: str
    kind: ForgottenKind
    claims_removed: tuple[str, ...] = ()
    claims_kept: tuple[str, ...] = ()
    turns_removed: tuple[str, ...] = ()
    hidden_evidence: int = 0
    removed: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()


@attrs.frozen
class LifecycleResult:
    """An archive or unarchive: the claim's lifecycle now, and a note a user can read."""

    claim_id: str
    lifecycle: str
    note: str


class RememberOutcome(enum.StrEnum):
    STORED = "stored"
    # An identical active claim already existed in the scope; nothing new was written.
    EXISTING = "existing"
    # The claim was forgotten before and this request may not bring it back.
    SUPPRESSED = "suppressed"


@attrs.frozen
class RememberResult:
    """An explicit remember: the claim stored (or found), and tombstones a user's re-add
    released."""

    outcome: RememberOutcome
    claim_id: str | None
    rowid: int | None = None
    released_tombstones: int = 0


@attrs.frozen
class Conflict:
    """Two claims of one scope that state incompatible values of one attribute, which
    maintenance could not order (cairn.maintenance.challenge); the user decides.

    ``claim_ids`` and ``texts`` are the two claims, older first, as stored now (the
    conflict row itself holds no text). ``reason`` says why the engine could not decide:
    ``same_time`` (both stated at the same moment, equally strong), ``hedged_newer`` (the
    newer value was hedged, the older one stated plainly) or ``provider_undecided`` (the
    text provider saw a contradiction and could not say which holds). ``status`` is
    ``open`` or ``resolved``; a resolved one says its ``resolution`` (``keep_one``: the
    claim ``kept`` stays, the other is superseded with lineage; ``keep_both``) and when
    (``resolved_at``, ISO-8601, domain clock). ``scope`` is the scope kind, ``scope_key``
    its key.
    """

    conflict_id: str
    claim_ids: tuple[str, str]
    texts: tuple[str, str]
    reason: str
    status: str
    scope: str
    created_at: str
    scope_key: str | None = None
    resolution: str | None = None
    kept: str | None = None
    resolved_at: str | None = None
