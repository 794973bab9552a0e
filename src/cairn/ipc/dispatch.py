"""The one dispatch table: request type → the Memory call that answers it.

A new method is a request/result pair in cairn.ipc.messages plus one ``@handles`` function
here; tests/ipc/test_protocol.py checks that every request type has a handler. Request
fields become Memory arguments through cairn.ipc.codec, the module the clients build them
with; results carry the public records Memory returns, unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import trio

from cairn.domain.scope import RecallContext
from cairn.ipc.codec import (
    metadata_from_message,
    scope_from_message,
    turn_from_message,
)
from cairn.ipc.messages import (
    AddDirectiveRequest,
    AddDirectiveResult,
    ArchiveRequest,
    ArchiveResult,
    AttentionRequest,
    AttentionResult,
    ClearRequest,
    ClearResult,
    ConflictsRequest,
    ConflictsResult,
    ConsumeAttentionRequest,
    ConsumeAttentionResult,
    DeclareSessionRequest,
    DeclareSessionResult,
    DirectivesApproveRequest,
    DirectivesApproveResult,
    DirectivesCreateRequest,
    DirectivesCreateResult,
    DirectivesListRequest,
    DirectivesListResult,
    DirectivesProposeRequest,
    DirectivesProposeResult,
    DirectivesRevokeRequest,
    DirectivesRevokeResult,
    DrainRequest,
    DrainResult,
    EditRequest,
    EditResult,
    EntitiesRequest,
    EntitiesResult,
    EvidenceRequest,
    EvidenceResult,
    FeedbackRequest,
    FeedbackResult,
    FetchRecallRequest,
    FetchRecallResult,
    ForgetRequest,
    ForgetResult,
    IngestEventRequest,
    IngestEventResult,
    IngestRequest,
    IngestResult,
    IngestTurnRequest,
    IngestTurnResult,
    MaintainRequest,
    MaintainResult,
    MemoriesRequest,
    MemoriesResult,
    MemoryRequest,
    MemoryResult,
    PingRequest,
    PingResult,
    RecallRequest,
    RecallResult,
    RecallsRequest,
    RecallsResult,
    ReconfigureRequest,
    ReconfigureResult,
    RememberRequest,
    RememberResult,
    ReplayDeadLettersRequest,
    ReplayDeadLettersResult,
    Request,
    ResolveConflictRequest,
    ResolveConflictResult,
    Response,
    ResumeRequest,
    ResumeResult,
    RetireRequest,
    RetireResult,
    SessionCursorRequest,
    SessionCursorResult,
    StatusRequest,
    StatusResult,
    UnarchiveRequest,
    UnarchiveResult,
    WaitClearedRequest,
    WaitClearedResult,
    WaitIdleRequest,
    WaitIdleResult,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from cairn.runtime.memory import Memory

__all__ = ["HANDLERS", "dispatch"]

R = TypeVar("R", bound=Request)
HANDLERS: dict[type[Request], Callable[[Memory, Any], Awaitable[Response]]] = {}


def handles(
    kind: type[R],
) -> Callable[
    [Callable[[Memory, R], Awaitable[Response]]],
    Callable[[Memory, R], Awaitable[Response]],
]:
    def register(
        handler: Callable[[Memory, R], Awaitable[Response]],
    ) -> Callable[[Memory, R], Awaitable[Response]]:
        HANDLERS[kind] = handler
        return handler

    return register


async def dispatch(memory: Memory, request: Request) -> Response:
    """Answer one request; cairn errors propagate for the server to turn into error frames."""
    return await HANDLERS[type(request)](memory, request)


@handles(IngestRequest)
async def _ingest(memory: Memory, request: IngestRequest) -> Response:
    turns = [turn_from_message(turn) for turn in request.turns]
    report = await memory.ingest(request.agent_id, turns)
    return IngestResult(id=request.id, results=list(report.results))


@handles(IngestTurnRequest)
async def _ingest_turn(memory: Memory, request: IngestTurnRequest) -> Response:
    result = await memory.ingest_turn(request.agent_id, turn_from_message(request.turn))
    return IngestTurnResult(id=request.id, result=result)


@handles(WaitIdleRequest)
async def _wait_idle(memory: Memory, request: WaitIdleRequest) -> Response:
    await memory.wait_idle(request.agent_id)
    return WaitIdleResult(id=request.id)


@handles(RecallRequest)
async def _recall(memory: Memory, request: RecallRequest) -> Response:
    context = RecallContext(
        session_id=request.session_id,
        user_id=request.user_id,
        project_id=request.project_id,
    )
    recall = await memory.recall(
        request.agent_id,
        request.query,
        context=context,
        k=request.k,
        budget_bytes=request.budget_bytes,
        wait_s=request.wait_s,
        query_vector=request.query_vector,
        as_of=request.as_of,
        turn_id=request.turn_id,
        include_noise=request.include_noise,
        tags=request.tags,
        kinds=request.kinds,
        since=request.since,
        until=request.until,
    )
    return RecallResult(id=request.id, recall=recall)


@handles(FetchRecallRequest)
async def _fetch_recall(memory: Memory, request: FetchRecallRequest) -> Response:
    recall = await memory.fetch_recall(request.agent_id, request.request_id)
    return FetchRecallResult(id=request.id, recall=recall)


@handles(RecallsRequest)
async def _recalls(memory: Memory, request: RecallsRequest) -> Response:
    records = await memory.recalls(
        request.agent_id, session_id=request.session_id, limit=request.limit
    )
    return RecallsResult(id=request.id, records=records)


@handles(AttentionRequest)
async def _attention(memory: Memory, request: AttentionRequest) -> Response:
    items = await memory.attention(
        request.agent_id, session_id=request.session_id, limit=request.limit
    )
    return AttentionResult(id=request.id, items=items)


@handles(FeedbackRequest)
async def _feedback(memory: Memory, request: FeedbackRequest) -> Response:
    report = await memory.feedback(
        request.agent_id, request.request_id, used=request.used, wrong=request.wrong
    )
    return FeedbackResult(id=request.id, report=report)


@handles(MaintainRequest)
async def _maintain(memory: Memory, request: MaintainRequest) -> Response:
    report = await memory.maintain(request.agent_id)
    return MaintainResult(id=request.id, report=report)


@handles(ConsumeAttentionRequest)
async def _consume_attention(
    memory: Memory, request: ConsumeAttentionRequest
) -> Response:
    consumed = await memory.consume_attention(request.agent_id, request.item_ids)
    return ConsumeAttentionResult(id=request.id, consumed=consumed)


@handles(ConflictsRequest)
async def _conflicts(memory: Memory, request: ConflictsRequest) -> Response:
    conflicts = await memory.conflicts(
        request.agent_id, include_resolved=request.include_resolved
    )
    return ConflictsResult(id=request.id, conflicts=conflicts)


@handles(ResolveConflictRequest)
async def _resolve_conflict(
    memory: Memory, request: ResolveConflictRequest
) -> Response:
    conflict = await memory.resolve_conflict(
        request.agent_id, request.conflict_id, keep=request.keep
    )
    return ResolveConflictResult(id=request.id, conflict=conflict)


@handles(EntitiesRequest)
async def _entities(memory: Memory, request: EntitiesRequest) -> Response:
    entities = await memory.entities(
        request.agent_id, name=request.name, limit=request.limit
    )
    return EntitiesResult(id=request.id, entities=entities)


@handles(EvidenceRequest)
async def _evidence(memory: Memory, request: EvidenceRequest) -> Response:
    items = await memory.evidence(request.agent_id, request.refs)
    return EvidenceResult(id=request.id, items=items)


@handles(MemoriesRequest)
async def _memories(memory: Memory, request: MemoriesRequest) -> Response:
    found = await memory.memories(
        request.agent_id,
        kind=request.kind,
        scope=scope_from_message(request.scope),
        lifecycle=request.lifecycle,
        since=request.since,
        until=request.until,
        text=request.text,
        tags=request.tags,
        limit=request.limit,
    )
    return MemoriesResult(id=request.id, memories=found)


@handles(MemoryRequest)
async def _memory(memory: Memory, request: MemoryRequest) -> Response:
    detail = await memory.memory(request.agent_id, request.claim_id)
    return MemoryResult(id=request.id, detail=detail)


@handles(EditRequest)
async def _edit(memory: Memory, request: EditRequest) -> Response:
    report = await memory.edit(request.agent_id, request.claim_id, request.text)
    return EditResult(id=request.id, report=report)


@handles(ClearRequest)
async def _clear(memory: Memory, request: ClearRequest) -> Response:
    return ClearResult(id=request.id, report=await memory.clear(request.agent_id))


@handles(WaitClearedRequest)
async def _wait_cleared(memory: Memory, request: WaitClearedRequest) -> Response:
    await memory.wait_cleared(request.agent_id)
    return WaitClearedResult(id=request.id)


@handles(AddDirectiveRequest)
async def _add_directive(memory: Memory, request: AddDirectiveRequest) -> Response:
    directive_id = await memory.add_directive(
        request.agent_id, request.text, kind=request.kind
    )
    return AddDirectiveResult(id=request.id, directive_id=str(directive_id))


@handles(IngestEventRequest)
async def _ingest_event(memory: Memory, request: IngestEventRequest) -> Response:
    result = await memory.ingest_event(
        request.agent_id, turn_from_message(request.event)
    )
    return IngestEventResult(id=request.id, result=result)


@handles(DeclareSessionRequest)
async def _declare_session(memory: Memory, request: DeclareSessionRequest) -> Response:
    await memory.declare_session(
        request.agent_id,
        request.session_id,
        subagent=request.subagent,
        forked_from=request.forked_from,
    )
    return DeclareSessionResult(id=request.id)


@handles(SessionCursorRequest)
async def _session_cursor(memory: Memory, request: SessionCursorRequest) -> Response:
    cursor = await memory.session_cursor(request.agent_id, request.session_id)
    return SessionCursorResult(id=request.id, event_id=cursor)


@handles(ReplayDeadLettersRequest)
async def _replay_dead_letters(
    memory: Memory, request: ReplayDeadLettersRequest
) -> Response:
    batches = await memory.replay_dead_letters(request.agent_id)
    return ReplayDeadLettersResult(id=request.id, batches=batches)


@handles(RememberRequest)
async def _remember(memory: Memory, request: RememberRequest) -> Response:
    result = await memory.remember(
        request.agent_id,
        request.text,
        kind=request.kind,
        scope=scope_from_message(request.scope),
        by=request.by,
        metadata=metadata_from_message(request.metadata),
    )
    return RememberResult(id=request.id, result=result)


@handles(ForgetRequest)
async def _forget(memory: Memory, request: ForgetRequest) -> Response:
    result = await memory.forget(request.agent_id, request.item_id)
    return ForgetResult(id=request.id, result=result)


@handles(ArchiveRequest)
async def _archive(memory: Memory, request: ArchiveRequest) -> Response:
    result = await memory.archive(request.agent_id, request.claim_id)
    return ArchiveResult(id=request.id, result=result)


@handles(UnarchiveRequest)
async def _unarchive(memory: Memory, request: UnarchiveRequest) -> Response:
    result = await memory.unarchive(request.agent_id, request.claim_id)
    return UnarchiveResult(id=request.id, result=result)


@handles(RetireRequest)
async def _retire(memory: Memory, request: RetireRequest) -> Response:
    return RetireResult(id=request.id, report=await memory.retire(request.agent_id))


@handles(DirectivesCreateRequest)
async def _directives_create(
    memory: Memory, request: DirectivesCreateRequest
) -> Response:
    directive = await memory.directives.create(
        request.agent_id, request.text, kind=request.kind
    )
    return DirectivesCreateResult(id=request.id, directive=directive)


@handles(DirectivesProposeRequest)
async def _directives_propose(
    memory: Memory, request: DirectivesProposeRequest
) -> Response:
    directive = await memory.directives.propose(
        request.agent_id, request.text, kind=request.kind
    )
    return DirectivesProposeResult(id=request.id, directive=directive)


@handles(DirectivesApproveRequest)
async def _directives_approve(
    memory: Memory, request: DirectivesApproveRequest
) -> Response:
    directive = await memory.directives.approve(request.agent_id, request.directive_id)
    return DirectivesApproveResult(id=request.id, directive=directive)


@handles(DirectivesRevokeRequest)
async def _directives_revoke(
    memory: Memory, request: DirectivesRevokeRequest
) -> Response:
    directive = await memory.directives.revoke(request.agent_id, request.directive_id)
    return DirectivesRevokeResult(id=request.id, directive=directive)


@handles(DirectivesListRequest)
async def _directives_list(memory: Memory, request: DirectivesListRequest) -> Response:
    directives = await memory.directives.list(request.agent_id, status=request.status)
    return DirectivesListResult(id=request.id, directives=directives)


@handles(StatusRequest)
async def _status(memory: Memory, request: StatusRequest) -> Response:
    return StatusResult(id=request.id, status=await memory.status())


@handles(DrainRequest)
async def _drain(memory: Memory, request: DrainRequest) -> Response:
    return DrainResult(id=request.id, report=await memory.drain(request.timeout_s))


@handles(ResumeRequest)
async def _resume(memory: Memory, request: ResumeRequest) -> Response:
    await memory.resume()
    return ResumeResult(id=request.id)


@handles(ReconfigureRequest)
async def _reconfigure(memory: Memory, request: ReconfigureRequest) -> Response:
    return ReconfigureResult(id=request.id, report=await memory.reconfigure())


@handles(PingRequest)
async def _ping(memory: Memory, request: PingRequest) -> Response:
    del memory
    await trio.lowlevel.checkpoint()
    return PingResult(id=request.id)
