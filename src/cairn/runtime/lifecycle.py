"""A claim's lifecycle by explicit request: remember, forget, archive, unarchive.

Each is one typed write through the agent's coordinator (cairn.runtime.writes); what the
vector projection must do follows the commit: a remembered claim is queued for embedding,
a forgotten claim's or turn's vectors are removed (a crash in between leaves an orphan vector, which
recall never serves and the next warm-up drops).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from cairn import crashpoints
from cairn.domain.claim import ClaimDraft, ClaimKind, Origin
from cairn.domain.metadata import Metadata
from cairn.domain.scope import Scope
from cairn.errors import InvalidInputError, InvalidMetadataError, InvalidScopeError
from cairn.ingestion.screen import redact_text, screen_identifier
from cairn.maintenance.challenge import inferred_attribute
from cairn.runtime.writes import Edit, Forget, Remember, SetArchived
from cairn.store.forget import RememberOutcome

if TYPE_CHECKING:
    from cairn.api.reports import EditReport
    from cairn.runtime.supervisor import AgentSupervisor
    from cairn.store.forget import ForgetResult, LifecycleResult, RememberResult

__all__ = [
    "MAX_REMEMBER_CHARS",
    "archive",
    "edit",
    "edit_text",
    "forget",
    "keyed_draft",
    "remember",
    "remember_draft",
]

MAX_REMEMBER_CHARS = 4_000


def keyed_draft(draft: ClaimDraft) -> ClaimDraft:
    """``draft`` with the attribute its words state when the rules read exactly one ("I
    now live in Lisbon", "The user lives in Lisbon" -> ``("user", "lives_in")``: the
    challenge pass's reading, cairn.maintenance.challenge), so a remembered value joins
    its attribute's succession as it is stored (its evidence time is when it was
    remembered). CPU work on the text (tens of ms at the length cap): run it in a
    thread."""
    inferred = inferred_attribute(draft.text)
    if inferred is None:
        return draft
    subject, predicate = inferred
    return attrs.evolve(draft, subject=subject, predicate=predicate)


def remember_draft(
    text: str,
    kind: str,
    scope: Scope | None,
    by: str,
    metadata: Metadata | None = None,
) -> tuple[ClaimDraft, Origin]:
    """Validate a remember before anything is queued; bad input is InvalidInputError.

    ``by`` has no default on any surface: only ``"user"`` releases a tombstone, so a host
    that forwards a model's remember must say so, and one that says nothing is refused.
    """
    if by not in {"user", "model"}:
        raise InvalidInputError(
            f"`by` must be 'user' (the user's own add) or 'model', not {by!r}"
        )
    if not text.strip():
        raise InvalidInputError("nothing to remember: the text is blank")
    if len(text) > MAX_REMEMBER_CHARS:
        raise InvalidInputError(f"a claim is at most {MAX_REMEMBER_CHARS} characters")
    try:
        claim_kind = ClaimKind(kind)
    except ValueError:
        raise InvalidInputError(f"unknown claim kind {kind!r}") from None
    if scope is not None and not isinstance(scope, Scope):
        raise InvalidScopeError("scope must be a cairn Scope")
    if scope is not None and scope.key is not None:
        screen_identifier("scope key", scope.key)
    if metadata is not None and not isinstance(metadata, Metadata):
        raise InvalidMetadataError("metadata must be a cairn Metadata")
    origin = Origin.USER if by == "user" else Origin.MODEL
    draft = ClaimDraft(
        kind=claim_kind,
        # Redacted like a turn: a model's "remember the user's key is sk-..." stores
        # the marker, never the key.
        text=" ".join(redact_text(text).split()),
        spans=(),
        confidence=0.95 if origin is Origin.USER else 0.6,
        scope=scope or Scope.agent(),
        metadata=None if metadata is None or metadata.empty else metadata,
    )
    return draft, origin


async def remember(
    supervisor: AgentSupervisor, draft: ClaimDraft, origin: Origin
) -> RememberResult:
    result = await supervisor.commit(Remember(draft, origin))
    if result.outcome is RememberOutcome.STORED and result.rowid is not None:
        await supervisor.embed_claim(result.rowid, draft.text)
    return result


def edit_text(claim_id: str, text: str) -> str:
    """Validate an edit before anything is queued: the words as they will be stored
    (redacted, spacing collapsed), or InvalidInputError."""
    screen_identifier("claim ID", claim_id)
    if not text.strip():
        raise InvalidInputError("nothing to edit into: the new text is blank")
    if len(text) > MAX_REMEMBER_CHARS:
        raise InvalidInputError(f"a claim is at most {MAX_REMEMBER_CHARS} characters")
    return " ".join(redact_text(text).split())


async def edit(supervisor: AgentSupervisor, claim_id: str, text: str) -> EditReport:
    edited, report = await supervisor.commit(Edit(claim_id, text))
    if edited.stored:
        await supervisor.embed_claim(edited.rowid, report.memory.text)
    return report


async def forget(supervisor: AgentSupervisor, item_id: str) -> ForgetResult:
    forgotten = await supervisor.commit(Forget(item_id))
    crashpoints.reach("forget.after_commit")
    if forgotten.extract_again:
        # Claims let go with a forgotten survivor are learned again from their turns.
        supervisor.wake_ingestion()
    await supervisor.remove_vectors(
        forgotten.claim_rowids,
        forgotten.event_rowids,
        reembed=forgotten.reembed_rowids,
    )
    return forgotten.result


async def archive(
    supervisor: AgentSupervisor, claim_id: str, *, archived: bool
) -> LifecycleResult:
    return await supervisor.commit(SetArchived(claim_id, archived))
