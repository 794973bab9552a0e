"""Every request of the memory API built once, with how its answer becomes a public value.

httpx's shape: the trio client and the blocking client only move bytes. Each of their
methods is one line, ``return await self.send(requests.recall(...))``, where the
:class:`Call` holds the wire request (built from the method's arguments through
cairn.ipc.codec) and the reading of its answer (the result Struct's public record, or the
typed error an ``error``/``busy`` answer stands for).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

import attrs
import msgspec

from cairn.api import bounds
from cairn.api.reports import IngestReport
from cairn.errors import ProtocolError, ProtocolVersionError, ServerBusyError
from cairn.ipc import messages as wire
from cairn.ipc.codec import (
    metadata_to_message,
    recall_context,
    scope_to_message,
    turn_to_message,
    vector_to_message,
)
from cairn.ipc.codes import error_for

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Iterable, Sequence

    from cairn.api.reports import (
        AttentionItem,
        ClearReport,
        DrainReport,
        EditReport,
        Entity,
        EvidenceItem,
        FeedbackReport,
        MaintenanceReport,
        MemoryDetail,
        MemoryItem,
        RecallRecord,
        ReconfigureReport,
        RetireReport,
    )
    from cairn.api.status import StatusReport
    from cairn.domain.directive import Directive
    from cairn.domain.evidence import Turn
    from cairn.domain.metadata import Metadata
    from cairn.domain.outcomes import (
        Conflict,
        ForgetResult,
        IntakeResult,
        LifecycleResult,
        RememberResult,
    )
    from cairn.domain.scope import RecallContext, Scope
    from cairn.retrieval.types import Recall

__all__ = [
    "UNNUMBERED",
    "Call",
    "add_directive",
    "archive",
    "attention",
    "clear",
    "conflicts",
    "consume_attention",
    "declare_session",
    "directives_approve",
    "directives_create",
    "directives_list",
    "directives_propose",
    "directives_revoke",
    "drain",
    "edit",
    "entities",
    "evidence",
    "feedback",
    "fetch_recall",
    "forget",
    "hello",
    "ingest",
    "ingest_event",
    "ingest_turn",
    "maintain",
    "memories",
    "memory",
    "ping",
    "recall",
    "recalls",
    "reconfigure",
    "remember",
    "replay_dead_letters",
    "resolve_conflict",
    "resume",
    "retire",
    "session_cursor",
    "status",
    "unarchive",
    "unwrap",
    "wait_cleared",
    "wait_idle",
    "welcome",
]

A = TypeVar("A")
T = TypeVar("T")

# Requests are built before the transport numbers them (Call.numbered).
UNNUMBERED = 0


def unwrap(answer: object, expected: type[A]) -> A:
    """The expected result, or the error the answer stands for."""
    if isinstance(answer, expected):
        return answer
    if isinstance(answer, wire.Busy):
        raise ServerBusyError(
            f"the server already runs {answer.max_in_flight} requests on this connection"
        )
    if isinstance(answer, wire.Error):
        raise error_for(answer.code, answer.message)
    raise ProtocolError(f"expected {expected.__name__}, got {type(answer).__name__}")


def hello(client: str) -> wire.Hello:
    """The first frame: the protocol versions this client speaks."""
    return wire.Hello(versions=[wire.PROTOCOL_VERSION], client=client)


def welcome(answer: object) -> wire.Welcome:
    """The server's answer to ``hello``, or the error that ends the handshake."""
    if isinstance(answer, wire.Error) and answer.code == "version_mismatch":
        raise ProtocolVersionError(answer.message)
    return unwrap(answer, wire.Welcome)


@attrs.frozen
class Call(Generic[A, T]):
    """One request, the result Struct that answers it, and its public value."""

    request: wire.Request
    answer_type: type[A]
    read: Callable[[A], T]

    @classmethod
    def raw(cls, request: wire.Request, answer_type: type[A]) -> Call[A, A]:
        """A hand-built request whose answer is wanted as the Struct itself."""
        return Call(request, answer_type, _itself)

    def numbered(self, request_id: int) -> wire.Request:
        """The request with the connection's ID for it."""
        return msgspec.structs.replace(self.request, id=request_id)

    def result(self, answer: object) -> T:
        """The public value ``answer`` carries; raises the error it stands for."""
        return self.read(unwrap(answer, self.answer_type))


def _itself(answer: A) -> A:
    return answer


def _nothing(answer: object) -> None:
    del answer


# What a MessagePack integer holds; a wider Python int cannot be encoded at all.
_WIRE_INTEGERS = range(-(2**63), 2**64)


def _integer(value: object, check: Callable[[object], int]) -> int:
    """``value`` as the request carries it.

    The server checks every argument (cairn.api.bounds, through ``cairn.Memory``); the
    client only refuses what it could not encode, or what would come back ``malformed``
    instead of typed: a non-integer, or one wider than 64 bits (outside every range). It
    does so with the server's own check, so the error and its sentence are the same.
    """
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value in _WIRE_INTEGERS
    ):
        return value
    return check(value)  # raises: not an integer, or outside every range


def _item_id(value: object) -> int:
    (item_id,) = bounds.check_item_ids([value])
    return item_id


def _seconds(value: object, check: Callable[[object], float]) -> float | None:
    """Like :func:`_integer`, for a number of seconds (an int is a number here)."""
    if value is None:
        return None
    if isinstance(value, float) or (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value in _WIRE_INTEGERS
    ):
        return value
    return check(value)


# -- ingestion -------------------------------------------------------------------------
def ingest(
    agent_id: str, turns: Sequence[Turn]
) -> Call[wire.IngestResult, IngestReport]:
    request = wire.IngestRequest(
        id=UNNUMBERED,
        agent_id=agent_id,
        turns=[turn_to_message(turn) for turn in turns],
    )
    return Call(request, wire.IngestResult, lambda r: IngestReport(tuple(r.results)))


def ingest_turn(agent_id: str, turn: Turn) -> Call[wire.IngestTurnResult, IntakeResult]:
    request = wire.IngestTurnRequest(
        id=UNNUMBERED, agent_id=agent_id, turn=turn_to_message(turn)
    )
    return Call(request, wire.IngestTurnResult, lambda r: r.result)


def ingest_event(
    agent_id: str, event: Turn
) -> Call[wire.IngestEventResult, IntakeResult]:
    request = wire.IngestEventRequest(
        id=UNNUMBERED, agent_id=agent_id, event=turn_to_message(event)
    )
    return Call(request, wire.IngestEventResult, lambda r: r.result)


def declare_session(
    agent_id: str,
    session_id: str,
    *,
    subagent: bool = False,
    forked_from: tuple[str, str] | None = None,
) -> Call[wire.DeclareSessionResult, None]:
    request = wire.DeclareSessionRequest(
        id=UNNUMBERED,
        agent_id=agent_id,
        session_id=session_id,
        subagent=subagent,
        forked_from=forked_from,
    )
    return Call(request, wire.DeclareSessionResult, _nothing)


def session_cursor(
    agent_id: str, session_id: str
) -> Call[wire.SessionCursorResult, str | None]:
    request = wire.SessionCursorRequest(
        id=UNNUMBERED, agent_id=agent_id, session_id=session_id
    )
    return Call(request, wire.SessionCursorResult, lambda r: r.event_id)


def replay_dead_letters(agent_id: str) -> Call[wire.ReplayDeadLettersResult, int]:
    request = wire.ReplayDeadLettersRequest(id=UNNUMBERED, agent_id=agent_id)
    return Call(request, wire.ReplayDeadLettersResult, lambda r: r.batches)


def wait_idle(agent_id: str | None = None) -> Call[wire.WaitIdleResult, None]:
    request = wire.WaitIdleRequest(id=UNNUMBERED, agent_id=agent_id)
    return Call(request, wire.WaitIdleResult, _nothing)


# -- recall ----------------------------------------------------------------------------
def recall(
    agent_id: str,
    query: str,
    *,
    context: RecallContext | None = None,
    session_id: str | None = None,
    k: int | None = None,
    budget_bytes: int | None = None,
    wait_s: float | None = None,
    query_vector: Iterable[float] | None = None,
    as_of: dt.datetime | None = None,
    turn_id: str | None = None,
    include_noise: bool = False,
    tags: Sequence[str] = (),
    kinds: Sequence[str] = (),
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
) -> Call[wire.RecallResult, Recall]:
    scopes = recall_context(context, session_id)
    request = wire.RecallRequest(
        id=UNNUMBERED,
        agent_id=agent_id,
        query=query,
        session_id=scopes.session_id,
        user_id=scopes.user_id,
        project_id=scopes.project_id,
        k=None if k is None else _integer(k, bounds.check_k),
        budget_bytes=None
        if budget_bytes is None
        else _integer(budget_bytes, bounds.check_budget_bytes),
        wait_s=_seconds(wait_s, bounds.check_wait_s),
        query_vector=None if query_vector is None else vector_to_message(query_vector),
        as_of=as_of,
        turn_id=turn_id,
        include_noise=include_noise,
        tags=list(tags),
        kinds=list(kinds),
        since=since,
        until=until,
    )
    return Call(request, wire.RecallResult, lambda r: r.recall)


def fetch_recall(
    agent_id: str, request_id: str
) -> Call[wire.FetchRecallResult, Recall]:
    request = wire.FetchRecallRequest(
        id=UNNUMBERED, agent_id=agent_id, request_id=request_id
    )
    return Call(request, wire.FetchRecallResult, lambda r: r.recall)


def recalls(
    agent_id: str, *, session_id: str | None = None, limit: int = 50
) -> Call[wire.RecallsResult, list[RecallRecord]]:
    request = wire.RecallsRequest(
        id=UNNUMBERED,
        agent_id=agent_id,
        session_id=session_id,
        limit=_integer(limit, bounds.check_limit),
    )
    return Call(request, wire.RecallsResult, lambda r: r.records)


def feedback(
    agent_id: str,
    request_id: str,
    *,
    used: Sequence[str] = (),
    wrong: Sequence[str] = (),
) -> Call[wire.FeedbackResult, FeedbackReport]:
    request = wire.FeedbackRequest(
        id=UNNUMBERED,
        agent_id=agent_id,
        request_id=request_id,
        used=list(bounds.check_feedback_ids("used", used)),
        wrong=list(bounds.check_feedback_ids("wrong", wrong)),
    )
    return Call(request, wire.FeedbackResult, lambda r: r.report)


def maintain(agent_id: str) -> Call[wire.MaintainResult, MaintenanceReport]:
    request = wire.MaintainRequest(id=UNNUMBERED, agent_id=agent_id)
    return Call(request, wire.MaintainResult, lambda r: r.report)


# -- attention -------------------------------------------------------------------------
def attention(
    agent_id: str, *, session_id: str | None = None, limit: int = 50
) -> Call[wire.AttentionResult, list[AttentionItem]]:
    request = wire.AttentionRequest(
        id=UNNUMBERED,
        agent_id=agent_id,
        session_id=session_id,
        limit=_integer(limit, bounds.check_limit),
    )
    return Call(request, wire.AttentionResult, lambda r: r.items)


# -- conflicts -------------------------------------------------------------------------
def conflicts(
    agent_id: str, *, include_resolved: bool = False
) -> Call[wire.ConflictsResult, list[Conflict]]:
    request = wire.ConflictsRequest(
        id=UNNUMBERED, agent_id=agent_id, include_resolved=include_resolved
    )
    return Call(request, wire.ConflictsResult, lambda r: r.conflicts)


def resolve_conflict(
    agent_id: str, conflict_id: str, *, keep: str
) -> Call[wire.ResolveConflictResult, Conflict]:
    request = wire.ResolveConflictRequest(
        id=UNNUMBERED, agent_id=agent_id, conflict_id=conflict_id, keep=keep
    )
    return Call(request, wire.ResolveConflictResult, lambda r: r.conflict)


# -- entities --------------------------------------------------------------------------
def entities(
    agent_id: str, *, name: str | None = None, limit: int = 100
) -> Call[wire.EntitiesResult, list[Entity]]:
    request = wire.EntitiesRequest(
        id=UNNUMBERED,
        agent_id=agent_id,
        name=name,
        limit=_integer(limit, bounds.check_limit),
    )
    return Call(request, wire.EntitiesResult, lambda r: r.entities)


# -- evidence --------------------------------------------------------------------------
def evidence(
    agent_id: str, refs: Sequence[str]
) -> Call[wire.EvidenceResult, list[EvidenceItem]]:
    request = wire.EvidenceRequest(
        id=UNNUMBERED, agent_id=agent_id, refs=list(bounds.check_evidence_refs(refs))
    )
    return Call(request, wire.EvidenceResult, lambda r: r.items)


# -- inspection ------------------------------------------------------------------------
def memories(
    agent_id: str,
    *,
    kind: str | None = None,
    scope: Scope | None = None,
    lifecycle: str | None = None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    text: str | None = None,
    tags: Sequence[str] = (),
    limit: int = 50,
) -> Call[wire.MemoriesResult, list[MemoryItem]]:
    request = wire.MemoriesRequest(
        id=UNNUMBERED,
        agent_id=agent_id,
        kind=kind,
        scope=scope_to_message(scope),
        lifecycle=lifecycle,
        since=since,
        until=until,
        text=text,
        tags=list(tags),
        limit=_integer(limit, bounds.check_limit),
    )
    return Call(request, wire.MemoriesResult, lambda r: r.memories)


def memory(agent_id: str, claim_id: str) -> Call[wire.MemoryResult, MemoryDetail]:
    request = wire.MemoryRequest(id=UNNUMBERED, agent_id=agent_id, claim_id=claim_id)
    return Call(request, wire.MemoryResult, lambda r: r.detail)


def edit(agent_id: str, claim_id: str, text: str) -> Call[wire.EditResult, EditReport]:
    request = wire.EditRequest(
        id=UNNUMBERED, agent_id=agent_id, claim_id=claim_id, text=text
    )
    return Call(request, wire.EditResult, lambda r: r.report)


def consume_attention(
    agent_id: str, item_ids: Sequence[int]
) -> Call[wire.ConsumeAttentionResult, int]:
    request = wire.ConsumeAttentionRequest(
        id=UNNUMBERED,
        agent_id=agent_id,
        item_ids=[_integer(i, _item_id) for i in item_ids],
    )
    return Call(request, wire.ConsumeAttentionResult, lambda r: r.consumed)


# -- forgetting ------------------------------------------------------------------------
def clear(agent_id: str) -> Call[wire.ClearResult, ClearReport]:
    request = wire.ClearRequest(id=UNNUMBERED, agent_id=agent_id)
    return Call(request, wire.ClearResult, lambda r: r.report)


def wait_cleared(agent_id: str) -> Call[wire.WaitClearedResult, None]:
    request = wire.WaitClearedRequest(id=UNNUMBERED, agent_id=agent_id)
    return Call(request, wire.WaitClearedResult, _nothing)


def remember(
    agent_id: str,
    text: str,
    *,
    by: str,
    kind: str = "fact",
    scope: Scope | None = None,
    metadata: Metadata | None = None,
) -> Call[wire.RememberResult, RememberResult]:
    request = wire.RememberRequest(
        id=UNNUMBERED,
        agent_id=agent_id,
        text=text,
        kind=kind,
        scope=scope_to_message(scope),
        by=by,
        metadata=metadata_to_message(metadata),
    )
    return Call(request, wire.RememberResult, lambda r: r.result)


def forget(agent_id: str, item_id: str) -> Call[wire.ForgetResult, ForgetResult]:
    request = wire.ForgetRequest(id=UNNUMBERED, agent_id=agent_id, item_id=item_id)
    return Call(request, wire.ForgetResult, lambda r: r.result)


def archive(agent_id: str, claim_id: str) -> Call[wire.ArchiveResult, LifecycleResult]:
    request = wire.ArchiveRequest(id=UNNUMBERED, agent_id=agent_id, claim_id=claim_id)
    return Call(request, wire.ArchiveResult, lambda r: r.result)


def unarchive(
    agent_id: str, claim_id: str
) -> Call[wire.UnarchiveResult, LifecycleResult]:
    request = wire.UnarchiveRequest(id=UNNUMBERED, agent_id=agent_id, claim_id=claim_id)
    return Call(request, wire.UnarchiveResult, lambda r: r.result)


def retire(agent_id: str) -> Call[wire.RetireResult, RetireReport]:
    request = wire.RetireRequest(id=UNNUMBERED, agent_id=agent_id)
    return Call(request, wire.RetireResult, lambda r: r.report)


def add_directive(
    agent_id: str, text: str, *, kind: str = "instruction"
) -> Call[wire.AddDirectiveResult, str]:
    request = wire.AddDirectiveRequest(
        id=UNNUMBERED, agent_id=agent_id, text=text, kind=kind
    )
    return Call(request, wire.AddDirectiveResult, lambda r: r.directive_id)


# -- directives ------------------------------------------------------------------------
def directives_create(
    agent_id: str, text: str, *, kind: str = "instruction"
) -> Call[wire.DirectivesCreateResult, Directive]:
    request = wire.DirectivesCreateRequest(
        id=UNNUMBERED, agent_id=agent_id, text=text, kind=kind
    )
    return Call(request, wire.DirectivesCreateResult, lambda r: r.directive)


def directives_propose(
    agent_id: str, text: str, *, kind: str = "instruction"
) -> Call[wire.DirectivesProposeResult, Directive]:
    request = wire.DirectivesProposeRequest(
        id=UNNUMBERED, agent_id=agent_id, text=text, kind=kind
    )
    return Call(request, wire.DirectivesProposeResult, lambda r: r.directive)


def directives_approve(
    agent_id: str, directive_id: str
) -> Call[wire.DirectivesApproveResult, Directive]:
    request = wire.DirectivesApproveRequest(
        id=UNNUMBERED, agent_id=agent_id, directive_id=directive_id
    )
    return Call(request, wire.DirectivesApproveResult, lambda r: r.directive)


def directives_revoke(
    agent_id: str, directive_id: str
) -> Call[wire.DirectivesRevokeResult, Directive]:
    request = wire.DirectivesRevokeRequest(
        id=UNNUMBERED, agent_id=agent_id, directive_id=directive_id
    )
    return Call(request, wire.DirectivesRevokeResult, lambda r: r.directive)


def directives_list(
    agent_id: str, *, status: str | None = None
) -> Call[wire.DirectivesListResult, list[Directive]]:
    request = wire.DirectivesListRequest(
        id=UNNUMBERED, agent_id=agent_id, status=status
    )
    return Call(request, wire.DirectivesListResult, lambda r: r.directives)


# -- providers, status and lifecycle -----------------------------------------------------
def reconfigure() -> Call[wire.ReconfigureResult, ReconfigureReport]:
    request = wire.ReconfigureRequest(id=UNNUMBERED)
    return Call(request, wire.ReconfigureResult, lambda r: r.report)


def status() -> Call[wire.StatusResult, StatusReport]:
    request = wire.StatusRequest(id=UNNUMBERED)
    return Call(request, wire.StatusResult, lambda r: r.status)


def drain(timeout_s: float | None = None) -> Call[wire.DrainResult, DrainReport]:
    request = wire.DrainRequest(
        id=UNNUMBERED, timeout_s=_seconds(timeout_s, bounds.check_drain_timeout_s)
    )
    return Call(request, wire.DrainResult, lambda r: r.report)


def resume() -> Call[wire.ResumeResult, None]:
    request = wire.ResumeRequest(id=UNNUMBERED)
    return Call(request, wire.ResumeResult, _nothing)


def ping() -> Call[wire.PingResult, None]:
    """A round trip that touches nothing (client-only: is the server answering?)."""
    request = wire.PingRequest(id=UNNUMBERED)
    return Call(request, wire.PingResult, _nothing)
