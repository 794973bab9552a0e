"""Requests between actors. Imperative nouns; each carries its reply slot if it needs one."""

from __future__ import annotations

import attrs

from cairn.domain.evidence import SessionInfo, Turn
from cairn.domain.identity import ExecutionIdentity
from cairn.ingestion.validate import ValidatedBatch
from cairn.runtime.mailbox import Reply
from cairn.store.batches import BatchReceipt, Lease
from cairn.store.evidence import IntakeResult
from cairn.vectors.identity import EmbeddingIdentity
from cairn.vectors.keys import EmbedTarget

__all__ = [
    "CommitBatch",
    "DeclareSession",
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
class DeclareSession:
    info: SessionInfo
    reply: Reply[None] = attrs.field(factory=Reply, eq=False)


@attrs.frozen
class CommitBatch:
    """One leased batch, validated: claims, lineage, dirty work, FTS, directive drafts,
    the receipt and the events' state in one transaction, under the lease's token and
    the execution identity."""

    identity: ExecutionIdentity
    lease: Lease
    batch: ValidatedBatch
    reply: Reply[BatchReceipt] = attrs.field(factory=Reply, eq=False)


@attrs.frozen
class StoreEmbeddings:
    identity: ExecutionIdentity
    embedding_identity: EmbeddingIdentity
    rows: tuple[tuple[EmbedTarget, int, bytes], ...]
    # Answered with the (target, rowid) pairs whose target was still there to store.
    reply: Reply[list[tuple[EmbedTarget, int]]] = attrs.field(factory=Reply, eq=False)


@attrs.frozen
class StoreRecallResult:
    request_id: str
    status: str
    result: bytes | None
    reply: Reply[None] = attrs.field(factory=Reply, eq=False)


WriteRequest = (
    IngestTurns | DeclareSession | CommitBatch | StoreEmbeddings | StoreRecallResult
)


@attrs.frozen
class EmbedJob:
    """Embed one claim or event."""

    target: EmbedTarget
    rowid: int
    text: str
