"""Every mutation of an agent's data, as a typed request to its write coordinator.

A request is a frozen value naming what to change; :meth:`Write.apply` is the store call it
stands for, run by the agent's :class:`~cairn.runtime.actors.write_coordinator.WriteCoordinator`
inside one transaction. Requests that carry the result of asynchronous work (a batch's
claims, embeddings, a lease, a clear batch) also carry the :class:`ExecutionIdentity` that
work started under, and the coordinator refuses them inside the transaction when that
identity is no longer current (tests/runtime/test_fence.py). A user's own request (ingest,
remember, forget, a directive) is authorised by the state it meets at commit instead: it is
current by definition when it is handled, and the clear-fence triggers still refuse claim
writes under a pending clear.

A request that removes memories or writes tombstones (forget, every clear and retire
step, an import) says so (:attr:`Write.durable`) and commits with ``synchronous=FULL``.

Nothing else in the runtime may call ``Database.write`` (tests/test_single_writer.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

import apsw
import attrs
import trio

from cairn import crashpoints
from cairn.api.reports import EditReport
from cairn.domain.claim import ClaimDraft, Origin
from cairn.domain.directive import DirectiveStatus
from cairn.domain.evidence import SessionInfo, Turn
from cairn.domain.identity import ExecutionIdentity
from cairn.domain.ids import AgentId
from cairn.entities.vocabulary import EventMentions
from cairn.errors import RuntimeClosedError, StaleResultError
from cairn.ingestion.intake import prepare_turns
from cairn.ingestion.validate import ValidatedBatch
from cairn.maintenance.passes import MaintenancePass, PassResult, Work
from cairn.runtime.fairness import Priority
from cairn.runtime.inspection import memory_item
from cairn.runtime.mailbox import Reply
from cairn.store.attention import (
    add_event_notices,
    add_recall_notice,
    consume_notices,
)
from cairn.store.batches import (
    BatchReceipt,
    Lease,
    begin_commit,
    fail_batch,
    finish_commit,
    release_lease,
    release_leases,
    replay_dead,
    take_lease,
)
from cairn.store.beliefs import FeedbackRecorded, record_feedback
from cairn.store.claims import insert_claims
from cairn.store.clear_jobs import (
    ClearedBatch,
    ClearJob,
    clear_batch,
    clear_lineage,
    finish_clear,
    pending_clear,
    start_clear,
)
from cairn.store.conflicts import resolve_conflict
from cairn.store.directives import (
    create_directive,
    list_directives,
    set_directive_status,
)
from cairn.store.dirty import DirtySeed, mark_dirty, retry_seeds, settle_seeds
from cairn.store.edit import Edited, edit_claim
from cairn.store.embeddings import store_embeddings
from cairn.store.entities import (
    USER_SUBJECT,
    record_mentions,
    record_relations,
    sole_user_speaker,
)
from cairn.store.evidence import insert_events
from cairn.store.forget import forget_memory, remember_claim, set_archived
from cairn.store.recall_records import complete_record, record_returned
from cairn.store.requests import (
    Pruned,
    Retention,
    append_audit,
    prune_retention,
    save_recall_result,
)
from cairn.store.retire import purge_namespace
from cairn.store.sessions import declare_session
from cairn.vectors.identity import EmbeddingIdentity
from cairn.vectors.keys import EmbedTarget

if TYPE_CHECKING:
    from cairn.domain.directive import Directive
    from cairn.domain.outcomes import Conflict
    from cairn.store.evidence import IntakeResult
    from cairn.store.forget import Forgotten, LifecycleResult, RememberResult

__all__ = [
    "AppendAudit",
    "ApplyMaintenance",
    "ClearBatch",
    "ClearLineage",
    "CommitBatch",
    "CompleteRecall",
    "ConsumeAttention",
    "CreateDirective",
    "DeclareSession",
    "Edit",
    "FailBatch",
    "FinishClear",
    "Forget",
    "ImportRecords",
    "IngestTurns",
    "PruneRetention",
    "PurgeNamespace",
    "RecordFeedback",
    "RecordRecall",
    "ReleaseLease",
    "ReleaseLeases",
    "Remember",
    "ReplayDeadLetters",
    "ResolveConflict",
    "RotateDirty",
    "SetArchived",
    "SetDirectiveStatus",
    "SettleDirty",
    "StartClear",
    "StoreEmbeddings",
    "StoreRecallResult",
    "TakeLease",
    "Write",
    "WriteContext",
    "WriteQueue",
]

T = TypeVar("T")


@attrs.frozen
class WriteContext:
    """What every request's transaction may use: whose data, and the business time."""

    agent_id: AgentId
    now: dt.datetime
    event_max_bytes: int
    max_segments: int


@attrs.frozen
class Write(Generic[T]):
    """One transaction's worth of change to one agent's data, and its reply slot."""

    reply: Reply[T] = attrs.field(factory=Reply, eq=False, kw_only=True)
    # A user's own write is served before bulk work of any agent (cairn.runtime.fairness).
    priority: ClassVar[Priority] = Priority.BULK
    # Privacy-critical: the transaction removes memories or writes tombstones, so it
    # commits with `synchronous=FULL` whatever the default (Database.write): a forget
    # undone by a power loss would bring forgotten text back.
    durable: ClassVar[bool] = False

    @property
    def fenced_by(self) -> ExecutionIdentity | None:
        """The identity the work behind this result started under (``None``: a user's
        request, current when handled)."""
        return None

    def apply(self, connection: apsw.Connection, context: WriteContext) -> T:
        raise NotImplementedError


@attrs.frozen
class _Fenced(Write[T]):
    identity: ExecutionIdentity = attrs.field(kw_only=True)

    @property
    def fenced_by(self) -> ExecutionIdentity | None:
        return self.identity


# -- intake ------------------------------------------------------------------------------
@attrs.frozen
class IngestTurns(Write["list[IntakeResult]"]):
    """Redact, segment and store turns (redaction runs here, in the writer's thread,
    before anything is stored, hashed or indexed)."""

    priority = Priority.INTERACTIVE

    turns: tuple[Turn, ...]

    def apply(
        self, connection: apsw.Connection, context: WriteContext
    ) -> list[IntakeResult]:
        prepared = prepare_turns(
            self.turns, context.event_max_bytes, max_segments=context.max_segments
        )
        results = insert_events(connection, context.agent_id, prepared, context.now)
        # Critical runtime events reach the attention inbox with the event, or not at all.
        add_event_notices(connection, context.agent_id, prepared, results, context.now)
        return results


@attrs.frozen
class DeclareSession(Write[None]):
    priority = Priority.INTERACTIVE
    info: SessionInfo

    def apply(self, connection: apsw.Connection, context: WriteContext) -> None:
        declare_session(connection, context.agent_id, self.info)


@attrs.frozen
class StoreRecallResult(Write[bool]):
    """A late recall result; not stored (``False``) if a forget, clear or suppression
    committed after the snapshot it was computed on (``snapshot_epoch``). With ``keep``,
    the agent's results beyond the newest ``keep`` go in the same transaction
    (cairn.store.requests)."""

    request_id: str
    status: str
    result: bytes | None
    snapshot_epoch: int | None = None
    keep: int | None = attrs.field(default=None, kw_only=True)

    def apply(self, connection: apsw.Connection, context: WriteContext) -> bool:
        return save_recall_result(
            connection,
            context.agent_id,
            self.request_id,
            self.status,
            self.result,
            context.now,
            self.snapshot_epoch,
            keep=self.keep,
        )


@attrs.frozen
class RecordRecall(Write[bool]):
    """The record of a recall answer, written before the answer is handed back, and its
    text (``result``) for a later fetch or a reuse by the same host turn. The text is
    not stored (``False``) when a forget, clear or suppression committed after the
    snapshot it was computed on (``snapshot_epoch``; unknown: not stored); the ID-only
    record is, either way (cairn.store.recall_records)."""

    priority = Priority.INTERACTIVE

    request_id: str
    session_id: str | None
    turn_id: str | None
    status: str
    manifest: str | None
    result: bytes | None
    snapshot_epoch: int | None
    keep: int | None = attrs.field(default=None, kw_only=True)

    def apply(self, connection: apsw.Connection, context: WriteContext) -> bool:
        record_returned(
            connection,
            context.agent_id,
            self.request_id,
            session_id=self.session_id,
            turn_id=self.turn_id,
            status=self.status,
            manifest=self.manifest,
            snapshot_epoch=self.snapshot_epoch,
            now=context.now,
        )
        if self.result is None or self.snapshot_epoch is None:
            return False
        return save_recall_result(
            connection,
            context.agent_id,
            self.request_id,
            "ok",
            self.result,
            context.now,
            self.snapshot_epoch,
            keep=self.keep,
        )


@attrs.frozen
class CompleteRecall(Write[bool]):
    """A late result (or its failure, ``result is None``): stored as
    :class:`StoreRecallResult` stores it, the recall's record completed, and a
    ``recall_ready`` notice added when the result was stored, all in one transaction."""

    request_id: str
    status: str
    result: bytes | None
    manifest: str | None
    snapshot_epoch: int | None = None
    keep: int | None = attrs.field(default=None, kw_only=True)

    def apply(self, connection: apsw.Connection, context: WriteContext) -> bool:
        agent_id, now = context.agent_id, context.now
        stored = save_recall_result(
            connection,
            agent_id,
            self.request_id,
            "ok" if self.result is not None else "failed",
            self.result,
            now,
            self.snapshot_epoch,
            keep=self.keep,
        )
        complete_record(
            connection,
            agent_id,
            self.request_id,
            status=self.status,
            manifest=self.manifest,
            snapshot_epoch=self.snapshot_epoch,
            now=now,
        )
        if stored and self.result is not None:
            session = connection.execute(
                "SELECT session_id FROM recall_records WHERE agent_id = ?"
                " AND request_id = ?",
                (agent_id, self.request_id),
            ).fetchone()
            add_recall_notice(
                connection,
                agent_id,
                self.request_id,
                None if session is None or session[0] is None else str(session[0]),
                now,
            )
        return stored


@attrs.frozen
class ConsumeAttention(Write[int]):
    """Mark attention items consumed; answers how many of the agent's were open."""

    priority = Priority.INTERACTIVE

    item_ids: tuple[int, ...]

    def apply(self, connection: apsw.Connection, context: WriteContext) -> int:
        return consume_notices(connection, context.agent_id, self.item_ids, context.now)


# -- learning ------------------------------------------------------------------------------
@attrs.frozen
class RecordFeedback(Write[FeedbackRecorded]):
    """A host's report on which items of one recall helped or were wrong: signals for
    the claims named, which become dirty so the learning pass revisits their belief."""

    priority = Priority.INTERACTIVE

    request_id: str
    used: tuple[str, ...]
    wrong: tuple[str, ...]

    def apply(
        self, connection: apsw.Connection, context: WriteContext
    ) -> FeedbackRecorded:
        recorded = record_feedback(
            connection,
            context.agent_id,
            self.request_id,
            self.used,
            self.wrong,
            context.now,
        )
        if recorded.new_signals:
            mark_dirty(connection, context.agent_id, recorded.claim_rowids)
        return recorded


# -- extraction batches --------------------------------------------------------------------
@attrs.frozen
class ReleaseLeases(Write[int]):
    """At start: leases of an earlier runtime are on its trio clock and mean nothing now."""

    def apply(self, connection: apsw.Connection, context: WriteContext) -> int:
        return release_leases(connection, context.agent_id)


@attrs.frozen
class TakeLease(_Fenced["Lease | None"]):
    now_s: float
    lease_s: float
    max_events: int
    max_bytes: int
    form_new: bool
    trigger: str

    def apply(self, connection: apsw.Connection, context: WriteContext) -> Lease | None:
        return take_lease(
            connection,
            context.agent_id,
            now_s=self.now_s,
            lease_s=self.lease_s,
            max_events=self.max_events,
            form_new=self.form_new,
            trigger=self.trigger,
            created_at=context.now,
            max_bytes=self.max_bytes,
        )


@attrs.frozen
class ReleaseLease(Write[None]):
    """Give a lease back early (fenced off or refused): checked by its token, not the
    epoch, so a fenced pass can still hand back what it holds."""

    lease: Lease

    def apply(self, connection: apsw.Connection, context: WriteContext) -> None:
        release_lease(connection, context.agent_id, self.lease)


@attrs.frozen
class FailBatch(Write[bool]):
    """Back a batch off (its events kept); ``True`` when it is now a dead letter."""

    lease: Lease
    error: str
    now_s: float
    max_attempts: int
    backoff_s: float
    backoff_cap_s: float

    def apply(self, connection: apsw.Connection, context: WriteContext) -> bool:
        return fail_batch(
            connection,
            context.agent_id,
            self.lease,
            now_s=self.now_s,
            error=self.error,
            max_attempts=self.max_attempts,
            backoff_s=self.backoff_s,
            backoff_cap_s=self.backoff_cap_s,
            now=context.now,
        )


@attrs.frozen
class ReplayDeadLetters(Write[int]):
    priority = Priority.INTERACTIVE

    def apply(self, connection: apsw.Connection, context: WriteContext) -> int:
        return replay_dead(connection, context.agent_id)


@attrs.frozen
class CommitBatch(_Fenced[BatchReceipt]):
    """One leased batch, validated: claims, lineage, dirty work, FTS, directive drafts,
    the receipt and the events' state, all or nothing, under the lease's token."""

    lease: Lease
    batch: ValidatedBatch
    # Each turn's entity drafts (cairn.entities.extract), resolved in the same commit.
    mentions: tuple[EventMentions, ...] = ()

    def apply(self, connection: apsw.Connection, context: WriteContext) -> BatchReceipt:
        agent_id = context.agent_id
        if pending_clear(connection, agent_id) is not None:
            # Extraction that started after the clear's fence: its events stay pending
            # and are extracted once the clear is done (the supervisor wakes ingestion).
            raise StaleResultError(f"a clear job is pending for {agent_id!r}")
        lease, batch = self.lease, self.batch
        earlier = begin_commit(connection, agent_id, lease)
        if earlier is not None:
            return earlier
        rowids = {event.event_id: event.rowid for event in lease.events}
        committed = insert_claims(
            connection, agent_id, batch.drafts, rowids, context.now
        )
        record_mentions(connection, agent_id, self.mentions, context.now)
        record_relations(
            connection,
            agent_id,
            (rowid for rowid, _ in committed.inserted),
            context.now,
        )
        for text in batch.directive_drafts:
            create_directive(
                connection, agent_id, "instruction", text, "draft", context.now
            )
        receipt = BatchReceipt(
            batch_id=lease.batch_id,
            event_ids=tuple(event.event_id for event in lease.events),
            claim_rowids=tuple(rowid for rowid, _ in committed.inserted),
            discarded=tuple(batch.discarded),
            rejected_candidates=batch.rejected_candidates,
            merged=committed.merged,
            superseded=committed.superseded,
            suppressed=committed.suppressed,
            directive_drafts=len(batch.directive_drafts),
        )
        finish_commit(connection, agent_id, lease, receipt, context.now)
        return receipt


# -- vectors -----------------------------------------------------------------------------------
@attrs.frozen
class StoreEmbeddings(_Fenced["list[tuple[EmbedTarget, int]]"]):
    """Blobs for embedded targets; answered with the (target, rowid) pairs whose target
    was still there to store."""

    embedding_identity: EmbeddingIdentity
    rows: tuple[tuple[EmbedTarget, int, bytes], ...]
    digests: tuple[str, ...] | None = None
    """What each row was embedded from (store.embeddings.embedding_digest)."""

    def apply(
        self, connection: apsw.Connection, context: WriteContext
    ) -> list[tuple[EmbedTarget, int]]:
        return store_embeddings(
            connection,
            context.agent_id,
            self.embedding_identity,
            self.rows,
            self.digests,
        )


# -- claim lifecycle ---------------------------------------------------------------------------
@attrs.frozen
class Remember(Write["RememberResult"]):
    priority = Priority.INTERACTIVE
    draft: ClaimDraft
    origin: Origin

    def apply(
        self, connection: apsw.Connection, context: WriteContext
    ) -> RememberResult:
        draft = self.draft
        if draft.subject == USER_SUBJECT:
            # "I …" is the agent's user: by name when its user turns have one speaker,
            # as the claims extracted from them are ("Mara lives in Porto").
            name = sole_user_speaker(connection, context.agent_id)
            if name is not None:
                draft = attrs.evolve(draft, subject=name)
        return remember_claim(
            connection, context.agent_id, draft, self.origin, context.now
        )


@attrs.frozen
class Forget(Write["Forgotten"]):
    """Forget a claim or a stored turn by the ID a recall item carries."""

    priority = Priority.INTERACTIVE
    durable = True
    item_id: str

    def apply(self, connection: apsw.Connection, context: WriteContext) -> Forgotten:
        return forget_memory(connection, context.agent_id, self.item_id, context.now)


@attrs.frozen
class SetArchived(Write["LifecycleResult"]):
    priority = Priority.INTERACTIVE
    claim_id: str
    archived: bool

    def apply(
        self, connection: apsw.Connection, context: WriteContext
    ) -> LifecycleResult:
        return set_archived(
            connection, context.agent_id, self.claim_id, self.archived, context.now
        )


@attrs.frozen
class Edit(Write["tuple[Edited, EditReport]"]):
    """The user's new words for a claim (cairn.store.edit): the rows, for the embedding
    of a new revision, and the report."""

    priority = Priority.INTERACTIVE
    claim_id: str
    text: str

    def apply(
        self, connection: apsw.Connection, context: WriteContext
    ) -> tuple[Edited, EditReport]:
        edited = edit_claim(
            connection, context.agent_id, self.claim_id, self.text, context.now
        )
        revision = memory_item(connection, context.agent_id, edited.rowid)
        assert revision is not None  # noqa: S101 - written in this transaction
        note = (
            "edited: recall shows the new words; the old ones stay stored as its history,"
            " out of recall"
        )
        if not edited.stored:
            note = (
                "edited into an existing memory that already says this; the old words"
                " stay stored as its history, out of recall"
            )
        return edited, EditReport(self.claim_id, revision, note)


# -- conflicts ----------------------------------------------------------------------------------
@attrs.frozen
class ResolveConflict(Write["Conflict"]):
    """The user's decision on an open conflict (cairn.store.conflicts): keep one claim
    (the other superseded with lineage) or both; both claims become dirty."""

    priority = Priority.INTERACTIVE
    conflict_id: str
    keep: str

    def apply(self, connection: apsw.Connection, context: WriteContext) -> Conflict:
        return resolve_conflict(
            connection, context.agent_id, self.conflict_id, self.keep, context.now
        )


# -- directives ---------------------------------------------------------------------------------
@attrs.frozen
class CreateDirective(Write["Directive"]):
    priority = Priority.INTERACTIVE
    kind: str
    text: str
    status: DirectiveStatus

    def apply(self, connection: apsw.Connection, context: WriteContext) -> Directive:
        agent = context.agent_id
        directive_id = create_directive(
            connection, agent, self.kind, self.text, self.status.value, context.now
        )
        (created,) = [
            directive
            for directive in list_directives(connection, agent)
            if directive.directive_id == directive_id
        ]
        return created


@attrs.frozen
class SetDirectiveStatus(Write["Directive"]):
    priority = Priority.INTERACTIVE
    # A revoke lost to a power cut would bring the instruction back.
    durable = True
    directive_id: str
    status: DirectiveStatus

    def apply(self, connection: apsw.Connection, context: WriteContext) -> Directive:
        return set_directive_status(
            connection, context.agent_id, self.directive_id, self.status, context.now
        )


# -- clear and retire -------------------------------------------------------------------------
@attrs.frozen
class StartClear(Write["tuple[ClearJob, int]"]):
    """Persist a clear (or retire) job and advance the epoch in one transaction; the
    coordinator advances the live fence as soon as it commits."""

    priority = Priority.INTERACTIVE
    durable = True

    purpose: str

    def apply(
        self, connection: apsw.Connection, context: WriteContext
    ) -> tuple[ClearJob, int]:
        return start_clear(connection, context.agent_id, context.now, self.purpose)


@attrs.frozen
class ClearBatch(_Fenced["ClearedBatch"]):
    """One bounded batch of a clear: claims first, then the turns they came from."""

    durable = True

    job: ClearJob

    def apply(self, connection: apsw.Connection, context: WriteContext) -> ClearedBatch:
        return clear_batch(connection, self.job, context.now)


@attrs.frozen
class ClearLineage(_Fenced[None]):
    durable = True
    job: ClearJob

    def apply(self, connection: apsw.Connection, context: WriteContext) -> None:
        clear_lineage(connection, self.job, context.now)


@attrs.frozen
class FinishClear(_Fenced["tuple[int, int] | None"]):
    durable = True
    job: ClearJob

    def apply(
        self, connection: apsw.Connection, context: WriteContext
    ) -> tuple[int, int] | None:
        return finish_clear(connection, self.job)


@attrs.frozen
class PurgeNamespace(_Fenced["dict[str, int]"]):
    """The retire job's last step: every row of the agent, counted per table."""

    durable = True

    def apply(
        self, connection: apsw.Connection, context: WriteContext
    ) -> dict[str, int]:
        return purge_namespace(connection, context.agent_id, context.now)


# -- maintenance -----------------------------------------------------------------------------------
@attrs.frozen
class AppendAudit(Write[None]):
    rows: tuple[tuple[AgentId, dt.datetime, str, str], ...]

    def apply(self, connection: apsw.Connection, context: WriteContext) -> None:
        append_audit(connection, self.rows)


@attrs.frozen
class ApplyMaintenance(_Fenced["PassResult"]):
    """One maintenance pass's plan, applied after the fence check: the pass re-validates
    it against the rows as they are now (cairn.maintenance.passes). The claims it changed
    get a new dirty generation in the same transaction."""

    step: MaintenancePass[Any] = attrs.field(eq=False)
    work: Work
    plan: object = attrs.field(eq=False)

    def apply(self, connection: apsw.Connection, context: WriteContext) -> PassResult:
        result = self.step.apply(connection, self.work, self.plan)
        if result.changed:
            mark_dirty(connection, context.agent_id, result.changed)
        return result


@attrs.frozen
class SettleDirty(Write[int]):
    """Settle the seeds a pass worked, each only at the generation it read."""

    seeds: tuple[DirtySeed, ...]

    def apply(self, connection: apsw.Connection, context: WriteContext) -> int:
        return settle_seeds(connection, context.agent_id, self.seeds)


@attrs.frozen
class RotateDirty(Write["tuple[int, list[DirtySeed]]"]):
    """Seeds a pass failed on for now go behind unprocessed work, attempts counted; one
    out of attempts is settled as terminal (cairn.store.dirty.retry_seeds)."""

    retries: tuple[tuple[DirtySeed, str, dt.datetime], ...]
    max_attempts: int

    def apply(
        self, connection: apsw.Connection, context: WriteContext
    ) -> tuple[int, list[DirtySeed]]:
        return retry_seeds(
            connection,
            context.agent_id,
            self.retries,
            max_attempts=self.max_attempts,
        )


@attrs.frozen
class PruneRetention(Write["Pruned"]):
    """Expired and over-cap late results and audit rows of the agent, a bounded number
    per pass (cairn.store.requests)."""

    retention: Retention
    trim_audit: bool = True

    def apply(self, connection: apsw.Connection, context: WriteContext) -> Pruned:
        return prune_retention(
            connection,
            context.agent_id,
            self.retention,
            context.now,
            trim_audit=self.trim_audit,
        )


# -- operator work ---------------------------------------------------------------------------------
@attrs.frozen
class ImportRecords(Write[list[Any]]):
    """One chunk of an import file's records for this agent, each checked as a normal
    write would be (``importer`` runs per record inside the transaction)."""

    durable = True

    records: tuple[tuple[int, object], ...]
    importer: Callable[
        [apsw.Connection, AgentId, Sequence[tuple[int, object]], dt.datetime],
        list[Any],
    ] = attrs.field(eq=False)

    def apply(self, connection: apsw.Connection, context: WriteContext) -> list[Any]:
        crashpoints.reach("import.records")
        return self.importer(connection, context.agent_id, self.records, context.now)


@attrs.define(eq=False)
class WriteQueue:
    """An actor's way to its agent's write coordinator: send a request, await its reply.

    A full queue is backpressure (the send waits). A coordinator that has gone away
    (stopped, failed, retired) answers with :class:`RuntimeClosedError`, never silence.
    """

    agent_id: str
    _send: trio.MemorySendChannel[Write[Any]]

    def clone(self) -> WriteQueue:
        return WriteQueue(self.agent_id, self._send.clone())

    async def send(self, request: Write[Any]) -> None:
        """Queue ``request`` (cancelled before it is queued, nothing is)."""
        try:
            await self._send.send(request)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise RuntimeClosedError(
                f"agent {self.agent_id!r} is not accepting writes"
            ) from None

    async def commit(self, request: Write[T]) -> T:
        await self.send(request)
        return await request.reply.wait()

    async def aclose(self) -> None:
        await self._send.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()
