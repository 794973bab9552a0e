"""The wire messages: msgspec Structs tagged by their ``type`` field (design/ipc.md).

Every request carries a client-chosen ``id`` (an unsigned integer); every answer to it
carries the same ``id``: its ``<method>_result``, ``busy``, or ``error``. A frame-level
error (malformed or oversize frame) has ``id = None``. Adding a method is one request
Struct and one result Struct here (listed in ``REQUESTS``/``RESULTS``) plus one entry in
``cairn.ipc.dispatch.HANDLERS``.

Values with a public cairn type travel as that type's fields: ``Recall`` and its
items and manifest, ``IntakeResult``. Timestamps are ISO-8601 strings with an offset.
"""

from __future__ import annotations

from typing import Any

import msgspec

from cairn.retrieval.types import Recall
from cairn.store.evidence import IntakeResult

__all__ = [
    "PROTOCOL_VERSION",
    "REQUESTS",
    "RESULTS",
    "AddDirectiveRequest",
    "AddDirectiveResult",
    "Busy",
    "ClearRequest",
    "ClearResult",
    "DrainRequest",
    "DrainResult",
    "Error",
    "FetchRecallRequest",
    "FetchRecallResult",
    "Hello",
    "IngestRequest",
    "IngestResult",
    "IngestTurnRequest",
    "IngestTurnResult",
    "PingRequest",
    "PingResult",
    "RecallRequest",
    "RecallResult",
    "ReconfigureRequest",
    "ReconfigureResult",
    "Request",
    "Response",
    "ResumeRequest",
    "ResumeResult",
    "StatusRequest",
    "StatusResult",
    "TurnMessage",
    "WaitIdleRequest",
    "WaitIdleResult",
    "Welcome",
]

PROTOCOL_VERSION = 1


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


class FetchRecallRequest(_Request, tag="fetch_recall"):
    agent_id: str
    request_id: str


class ClearRequest(_Request, tag="clear"):
    agent_id: str


class AddDirectiveRequest(_Request, tag="add_directive"):
    agent_id: str
    text: str
    kind: str = "instruction"


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
    results: list[IntakeResult]


class IngestTurnResult(_Answer, tag="ingest_turn_result"):
    result: IntakeResult


class WaitIdleResult(_Answer, tag="wait_idle_result"):
    pass


class RecallResult(_Answer, tag="recall_result"):
    recall: Recall


class FetchRecallResult(_Answer, tag="fetch_recall_result"):
    recall: Recall


class ClearResult(_Answer, tag="clear_result"):
    claims_deleted: int
    removed: list[str]
    kept: list[str]


class AddDirectiveResult(_Answer, tag="add_directive_result"):
    directive_id: str


class StatusResult(_Answer, tag="status_result"):
    status: dict[str, Any]


class DrainResult(_Answer, tag="drain_result"):
    agents: int
    elapsed_s: float


class ResumeResult(_Answer, tag="resume_result"):
    pass


class ReconfigureResult(_Answer, tag="reconfigure_result"):
    changed: bool
    embedder: dict[str, Any]


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
    AddDirectiveRequest,
    StatusRequest,
    DrainRequest,
    ResumeRequest,
    ReconfigureRequest,
    PingRequest,
)
RESULTS: tuple[type[_Answer], ...] = (
    IngestResult,
    IngestTurnResult,
    WaitIdleResult,
    RecallResult,
    FetchRecallResult,
    ClearResult,
    AddDirectiveResult,
    StatusResult,
    DrainResult,
    ResumeResult,
    ReconfigureResult,
    PingResult,
)

Request = _Request
Response = _Answer | Error | Welcome
