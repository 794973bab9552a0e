"""Requests between actors. Imperative nouns; each carries its reply slot if it needs one."""

from __future__ import annotations

import attrs

from cairn.domain.claim import ClaimDraft
from cairn.domain.evidence import EvidenceEvent, Turn
from cairn.domain.identity import ExecutionIdentity
from cairn.runtime.mailbox import Reply
from cairn.store.claims import CommittedClaims
from cairn.store.evidence import IntakeResult
from cairn.vectors.identity import EmbeddingIdentity

__all__ = [
    "CommitExtraction",
    "EmbedJob",
    "IngestTurns",
    "StoreEmbeddings",
    "StoreRecallResult",
    "WriteRequest",
]


@attrs.frozen
class IngestTurns:
    turns: tuple[Turn, ...]
    reply: Reply[list[IntakeResult]] = attrs.field(factory=Reply, eq=False)


@attrs.frozen
class CommitExtraction:
    """Claims from one extraction batch plus the batch's events marked extracted, atomically."""

    identity: ExecutionIdentity
    events: tuple[EvidenceEvent, ...]
    drafts: tuple[ClaimDraft, ...]
    reply: Reply[CommittedClaims] = attrs.field(factory=Reply, eq=False)


@attrs.frozen
class StoreEmbeddings:
    identity: ExecutionIdentity
    embedding_identity: EmbeddingIdentity
    rows: tuple[tuple[str, int, bytes], ...]
    reply: Reply[int] = attrs.field(factory=Reply, eq=False)


@attrs.frozen
class StoreRecallResult:
    request_id: str
    status: str
    result: bytes | None
    reply: Reply[None] = attrs.field(factory=Reply, eq=False)


WriteRequest = IngestTurns | CommitExtraction | StoreEmbeddings | StoreRecallResult


@attrs.frozen
class EmbedJob:
    """Embed one claim or event (``target`` is ``"claim"`` or ``"event"``)."""

    target: str
    rowid: int
    text: str
