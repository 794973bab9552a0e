"""The wire messages: msgspec Structs tagged by their ``type`` field (design/ipc.md).

Every request carries a client-chosen ``id`` (an unsigned integer); every answer to it
carries the same ``id``: its ``<method>_result``, ``busy``, or ``error``. A frame-level
error (malformed or oversize frame) has ``id = None``. Adding a method is one request
Struct and one result Struct here (listed in ``REQUESTS``/``RESULTS``), one builder in
cairn.ipc.requests and one entry in ``cairn.ipc.dispatch.HANDLERS`` (design/ipc.md,
"Adding a method", lists the rest).

Values with a public cairn type travel as that type's fields and decode back to that type:
``Recall`` and its items and manifest, ``IntakeResult``, ``RememberResult``,
``ForgetResult``, ``LifecycleResult``, ``Directive`` and the reports of cairn.api
(``ClearReport``, ``RetireReport``, ``StatusReport``, ``DrainReport``,
``ReconfigureReport``, ``Entity``, ``EvidenceItem``, ``MemoryItem``,
``MemoryDetail``, ``EditReport``). A result Struct holds the public record itself, so
the server and the clients cannot disagree on its shape. Timestamps are ISO-8601 strings
with an offset.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec

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
from cairn.domain import outcomes
from cairn.domain.directive import Directive
from cairn.retrieval.types import Recall

__all__ = [
    "PROTOCOL_VERSION",
    "REQUESTS",
    "RESULTS",
    "AddDirectiveRequest",
    "AddDirectiveResult",
    "ArchiveRequest",
    "ArchiveResult",
    "AttentionRequest",
    "AttentionResult",
    "Busy",
    "ClearRequest",
    "ClearResult",
    "ConflictsRequest",
    "ConflictsResult",
    "ConsumeAttentionRequest",
    "ConsumeAttentionResult",
    "DeclareSessionRequest",
    "DeclareSessionResult",
    "DirectivesApproveRequest",
    "DirectivesApproveResult",
    "DirectivesCreateRequest",
    "DirectivesCreateResult",
    "DirectivesListRequest",
    "DirectivesListResult",
    "DirectivesProposeRequest",
    "DirectivesProposeResult",
    "DirectivesRevokeRequest",
    "DirectivesRevokeResult",
    "DrainRequest",
    "DrainResult",
    "EditRequest",
    "EditResult",
    "EntitiesRequest",
    "EntitiesResult",
    "Error",
    "EvidenceRequest",
    "EvidenceResult",
    "FeedbackRequest",
    "FeedbackResult",
    "FetchRecallRequest",
    "FetchRecallResult",
    "ForgetRequest",
    "ForgetResult",
    "Hello",
    "IngestEventRequest",
    "IngestEventResult",
    "IngestRequest",
    "IngestResult",
    "IngestTurnRequest",
    "IngestTurnResult",
    "MaintainRequest",
    "MaintainResult",
    "MemoriesRequest",
    "MemoriesResult",
    "MemoryRequest",
    "MemoryResult",
    "MetadataMessage",
    "PingRequest",
    "PingResult",
    "RecallRequest",
    "RecallResult",
    "RecallsRequest",
    "RecallsResult",
    "ReconfigureRequest",
    "ReconfigureResult",
    "RememberRequest",
    "RememberResult",
    "ReplayDeadLettersRequest",
    "ReplayDeadLettersResult",
    "Request",
    "ResolveConflictRequest",
    "ResolveConflictResult",
    "Response",
    "ResumeRequest",
    "ResumeResult",
    "RetireRequest",
    "RetireResult",
    "ScopeMessage",
    "SessionCursorRequest",
    "SessionCursorResult",
    "StatusRequest",
    "StatusResult",
    "TurnMessage",
    "UnarchiveRequest",
    "UnarchiveResult",
    "WaitClearedRequest",
    "WaitClearedResult",
    "WaitIdleRequest",
    "WaitIdleResult",
    "Welcome",
]

# 2: clear, retire, status, drain and reconfigure answer with their cairn.api reports;
# wait_cleared; IntakeResult.rejection.
# 3: forget takes ``item_id`` (a claim or a stored turn) and answers with the new
# ForgetResult; remember requires ``by``; intake may answer ``suppressed``.
# 4: recall takes ``as_of`` and ``turn_id``; recalls, attention, consume_attention.
# 5: error code ``out_of_range`` (an argument outside its range, cairn.api.bounds).
# 6: conflicts, resolve_conflict, feedback; RecallItem.stage; error code ``unknown_conflict``.
# 7: maintain.
# 8: entities.
# 9: evidence.
# 10: memories, memory, edit.
# 11: caller metadata: TurnMessage.metadata, RememberRequest.metadata, RecallRequest
# tags/kinds/since/until, RecallItem.metadata; error code ``invalid_metadata``.
# 12: MemoriesRequest.tags.
PROTOCOL_VERSION = 12


class _Message(msgspec.Struct, tag_field="type", kw_only=True):
    """Base of every tagged message; unknown fields are ignored (forward compatibility)."""


# -- handshake -------------------------------------------------------------------------
class Hello(_Message, tag="hello"):
    """The client's first frame: the protocol versions it speaks."""

    versions: list[int]
    client: str = ""


class Welcome(_Message, tag="welcome"):
    """The server's answer to ``hello``: the chosen version and the connection's limits."""

    version: int
    server: str
    max_frame_bytes: int
    max_in_flight: int


# -- values ----------------------------------------------------------------------------
class TurnMessage(msgspec.Struct, kw_only=True):
    """A turn or runtime event as ``cairn.Turn``; ``at`` is ISO-8601 with an offset, or
    absent; ``kind`` is an ``EventKind`` value and ``replaces`` the event ID an edit, retry
    or deletion withdraws."""

    event_id: str
    session_id: str
    role: str
    text: str
    at: str | None = None
    speaker: str | None = None
    kind: str = "message"
    replaces: str | None = None
    metadata: MetadataMessage | None = None


class MetadataMessage(msgspec.Struct, kw_only=True):
    """A ``cairn.Metadata``: tags, an importance from 0 to 1, a small JSON object;
    checked by the server as the embedded API checks it (``invalid_metadata``)."""

    tags: list[str] = msgspec.field(default_factory=list)
    importance: float | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class ScopeMessage(msgspec.Struct, kw_only=True):
    """A ``cairn.Scope``: ``kind`` is ``agent``, ``session``, ``user`` or ``project``;
    ``key`` is absent exactly for ``agent``."""

    kind: str = "agent"
    key: str | None = None


# -- requests --------------------------------------------------------------------------
class _Request(_Message):
    id: int


class IngestRequest(_Request, tag="ingest"):
    agent_id: str
    turns: list[TurnMessage]


class IngestTurnRequest(_Request, tag="ingest_turn"):
    agent_id: str
    turn: TurnMessage


class WaitIdleRequest(_Request, tag="wait_idle"):
    agent_id: str | None = None


class RecallRequest(_Request, tag="recall"):
    agent_id: str
    query: str
    session_id: str | None = None
    user_id: str | None = None
    project_id: str | None = None
    k: int | None = None
    budget_bytes: int | None = None
    wait_s: float | None = None
    query_vector: list[float] | None = None
    as_of: dt.datetime | None = None
    # The host's key for the turn: a second recall of it returns the same contribution.
    turn_id: str | None = None
    # Within version 5: a server from before ignores it and never leaves noise out.
    include_noise: bool = False
    # The caller's filter (version 10): any of the tags, one of the kinds, the time.
    tags: list[str] = msgspec.field(default_factory=list)
    kinds: list[str] = msgspec.field(default_factory=list)
    since: dt.datetime | None = None
    until: dt.datetime | None = None


class FetchRecallRequest(_Request, tag="fetch_recall"):
    agent_id: str
    request_id: str


class RecallsRequest(_Request, tag="recalls"):
    """The agent's recall records (one session's, or all), newest first."""

    agent_id: str
    session_id: str | None = None
    limit: int = 50


class FeedbackRequest(_Request, tag="feedback"):
    """Which items of one recall helped (``used``) or were wrong, by their IDs."""

    agent_id: str
    request_id: str
    used: list[str] = msgspec.field(default_factory=list)
    wrong: list[str] = msgspec.field(default_factory=list)


class MaintainRequest(_Request, tag="maintain"):
    """Maintenance of the agent now: dirty work through every pass."""

    agent_id: str


class AttentionRequest(_Request, tag="attention"):
    """The agent's unconsumed attention items, newest first."""

    agent_id: str
    session_id: str | None = None
    limit: int = 50


class ConsumeAttentionRequest(_Request, tag="consume_attention"):
    agent_id: str
    item_ids: list[int]


class ClearRequest(_Request, tag="clear"):
    agent_id: str


class WaitClearedRequest(_Request, tag="wait_cleared"):
    """Wait until no clear job of the agent is pending (a crash's job resumes first)."""

    agent_id: str


class AddDirectiveRequest(_Request, tag="add_directive"):
    agent_id: str
    text: str
    kind: str = "instruction"


class IngestEventRequest(_Request, tag="ingest_event"):
    """A runtime event, or an edit/retry/deletion of an earlier message (``replaces``)."""

    agent_id: str
    event: TurnMessage


class DeclareSessionRequest(_Request, tag="declare_session"):
    agent_id: str
    session_id: str
    subagent: bool = False
    # (parent session ID, event ID the fork starts after)
    forked_from: tuple[str, str] | None = None


class SessionCursorRequest(_Request, tag="session_cursor"):
    agent_id: str
    session_id: str


class ReplayDeadLettersRequest(_Request, tag="replay_dead_letters"):
    agent_id: str


class RememberRequest(_Request, tag="remember"):
    agent_id: str
    text: str
    # Required: a request that does not say who remembers is refused (no default would
    # release a tombstone on a model's behalf).
    by: str
    kind: str = "fact"
    scope: ScopeMessage | None = None
    metadata: MetadataMessage | None = None


class ForgetRequest(_Request, tag="forget"):
    agent_id: str
    # A claim's ID or a stored turn's (or segment's), as recall items carry them.
    item_id: str


class ArchiveRequest(_Request, tag="archive"):
    agent_id: str
    claim_id: str


class UnarchiveRequest(_Request, tag="unarchive"):
    agent_id: str
    claim_id: str


class ConflictsRequest(_Request, tag="conflicts"):
    """The agent's undecided contradictions (with ``include_resolved``, all)."""

    agent_id: str
    include_resolved: bool = False


class ResolveConflictRequest(_Request, tag="resolve_conflict"):
    """The user's decision: ``keep`` a claim ID of the pair, or ``"both"``."""

    agent_id: str
    conflict_id: str
    keep: str


class EntitiesRequest(_Request, tag="entities"):
    """The agent's entities (those known by ``name``), most mentioned first."""

    agent_id: str
    name: str | None = None
    limit: int = 100


class EvidenceRequest(_Request, tag="evidence"):
    """The stored turns behind these refs (event or claim IDs), in the order asked."""

    agent_id: str
    refs: list[str]


class MemoriesRequest(_Request, tag="memories"):
    """The agent's claims matching every filter given, newest stored first."""

    agent_id: str
    kind: str | None = None
    scope: ScopeMessage | None = None
    lifecycle: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    text: str | None = None
    # Version 12: any of these tags (caller metadata).
    tags: list[str] = msgspec.field(default_factory=list)
    limit: int = 50


class MemoryRequest(_Request, tag="memory"):
    """One claim with its evidence and lineage."""

    agent_id: str
    claim_id: str


class EditRequest(_Request, tag="edit"):
    """The user's new words for a claim: a new revision, the old one kept as history."""

    agent_id: str
    claim_id: str
    text: str


class RetireRequest(_Request, tag="retire"):
    agent_id: str


class DirectivesCreateRequest(_Request, tag="directives_create"):
    """An active directive: send only on an explicit user action."""

    agent_id: str
    text: str
    kind: str = "instruction"


class DirectivesProposeRequest(_Request, tag="directives_propose"):
    """A draft directive (a model's suggestion); no effect until approved."""

    agent_id: str
    text: str
    kind: str = "instruction"


class DirectivesApproveRequest(_Request, tag="directives_approve"):
    agent_id: str
    directive_id: str


class DirectivesRevokeRequest(_Request, tag="directives_revoke"):
    agent_id: str
    directive_id: str


class DirectivesListRequest(_Request, tag="directives_list"):
    agent_id: str
    status: str | None = None


class StatusRequest(_Request, tag="status"):
    pass


class DrainRequest(_Request, tag="drain"):
    timeout_s: float | None = None


class ResumeRequest(_Request, tag="resume"):
    pass


class ReconfigureRequest(_Request, tag="reconfigure"):
    """Re-read the provider configuration (file and the server's environment), live."""


class PingRequest(_Request, tag="ping"):
    """A liveness check that touches nothing (also measures the bare round trip)."""


# -- answers ---------------------------------------------------------------------------
class _Answer(_Message):
    id: int


class IngestResult(_Answer, tag="ingest_result"):
    results: list[outcomes.IntakeResult]


class IngestTurnResult(_Answer, tag="ingest_turn_result"):
    result: outcomes.IntakeResult


class WaitIdleResult(_Answer, tag="wait_idle_result"):
    pass


class RecallResult(_Answer, tag="recall_result"):
    recall: Recall


class FetchRecallResult(_Answer, tag="fetch_recall_result"):
    recall: Recall


class RecallsResult(_Answer, tag="recalls_result"):
    records: list[RecallRecord]


class FeedbackResult(_Answer, tag="feedback_result"):
    report: FeedbackReport


class MaintainResult(_Answer, tag="maintain_result"):
    report: MaintenanceReport


class AttentionResult(_Answer, tag="attention_result"):
    items: list[AttentionItem]


class ConsumeAttentionResult(_Answer, tag="consume_attention_result"):
    consumed: int


class ClearResult(_Answer, tag="clear_result"):
    report: ClearReport


class WaitClearedResult(_Answer, tag="wait_cleared_result"):
    pass


class AddDirectiveResult(_Answer, tag="add_directive_result"):
    directive_id: str


class IngestEventResult(_Answer, tag="ingest_event_result"):
    result: outcomes.IntakeResult


class DeclareSessionResult(_Answer, tag="declare_session_result"):
    pass


class SessionCursorResult(_Answer, tag="session_cursor_result"):
    event_id: str | None


class ReplayDeadLettersResult(_Answer, tag="replay_dead_letters_result"):
    batches: int


class RememberResult(_Answer, tag="remember_result"):
    result: outcomes.RememberResult


class ForgetResult(_Answer, tag="forget_result"):
    result: outcomes.ForgetResult


class ArchiveResult(_Answer, tag="archive_result"):
    result: outcomes.LifecycleResult


class UnarchiveResult(_Answer, tag="unarchive_result"):
    result: outcomes.LifecycleResult


class ConflictsResult(_Answer, tag="conflicts_result"):
    conflicts: list[outcomes.Conflict]


class ResolveConflictResult(_Answer, tag="resolve_conflict_result"):
    conflict: outcomes.Conflict


class EntitiesResult(_Answer, tag="entities_result"):
    entities: list[Entity]


class EvidenceResult(_Answer, tag="evidence_result"):
    items: list[EvidenceItem]


class MemoriesResult(_Answer, tag="memories_result"):
    memories: list[MemoryItem]


class MemoryResult(_Answer, tag="memory_result"):
    detail: MemoryDetail


class EditResult(_Answer, tag="edit_result"):
    report: EditReport


class RetireResult(_Answer, tag="retire_result"):
    report: RetireReport


class DirectivesCreateResult(_Answer, tag="directives_create_result"):
    directive: Directive


class DirectivesProposeResult(_Answer, tag="directives_propose_result"):
    directive: Directive


class DirectivesApproveResult(_Answer, tag="directives_approve_result"):
    directive: Directive


class DirectivesRevokeResult(_Answer, tag="directives_revoke_result"):
    directive: Directive


class DirectivesListResult(_Answer, tag="directives_list_result"):
    directives: list[Directive]


class StatusResult(_Answer, tag="status_result"):
    status: StatusReport


class DrainResult(_Answer, tag="drain_result"):
    report: DrainReport


class ResumeResult(_Answer, tag="resume_result"):
    pass


class ReconfigureResult(_Answer, tag="reconfigure_result"):
    report: ReconfigureReport


class PingResult(_Answer, tag="ping_result"):
    pass


class Busy(_Answer, tag="busy"):
    """The request was not started: ``max_in_flight`` requests are already running."""

    max_in_flight: int


class Error(_Message, tag="error"):
    """A typed failure: ``code`` names the error (design/ipc.md lists them)."""

    id: int | None
    code: str
    message: str


REQUESTS: tuple[type[_Request], ...] = (
    IngestRequest,
    IngestTurnRequest,
    WaitIdleRequest,
    RecallRequest,
    FetchRecallRequest,
    ClearRequest,
    WaitClearedRequest,
    AddDirectiveRequest,
    IngestEventRequest,
    DeclareSessionRequest,
    SessionCursorRequest,
    ReplayDeadLettersRequest,
    RememberRequest,
    ForgetRequest,
    ArchiveRequest,
    UnarchiveRequest,
    RetireRequest,
    DirectivesCreateRequest,
    DirectivesProposeRequest,
    DirectivesApproveRequest,
    DirectivesRevokeRequest,
    DirectivesListRequest,
    StatusRequest,
    DrainRequest,
    ResumeRequest,
    ReconfigureRequest,
    PingRequest,
    RecallsRequest,
    FeedbackRequest,
    MaintainRequest,
    AttentionRequest,
    ConsumeAttentionRequest,
    ConflictsRequest,
    ResolveConflictRequest,
    EntitiesRequest,
    EvidenceRequest,
    MemoriesRequest,
    MemoryRequest,
    EditRequest,
)
RESULTS: tuple[type[_Answer], ...] = (
    IngestResult,
    IngestTurnResult,
    WaitIdleResult,
    RecallResult,
    FetchRecallResult,
    ClearResult,
    WaitClearedResult,
    AddDirectiveResult,
    IngestEventResult,
    DeclareSessionResult,
    SessionCursorResult,
    ReplayDeadLettersResult,
    RememberResult,
    ForgetResult,
    ArchiveResult,
    UnarchiveResult,
    RetireResult,
    DirectivesCreateResult,
    DirectivesProposeResult,
    DirectivesApproveResult,
    DirectivesRevokeResult,
    DirectivesListResult,
    StatusResult,
    DrainResult,
    ResumeResult,
    ReconfigureResult,
    PingResult,
    RecallsResult,
    FeedbackResult,
    MaintainResult,
    AttentionResult,
    ConsumeAttentionResult,
    ConflictsResult,
    ResolveConflictResult,
    EntitiesResult,
    EvidenceResult,
    MemoriesResult,
    MemoryResult,
    EditResult,
)

Request = _Request
Response = _Answer | Error | Welcome
