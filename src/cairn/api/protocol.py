"""The memory API, declared once for every surface.

``MemoryApi`` and ``DirectivesApi`` are what the embedded :class:`cairn.Memory`, the trio
IPC client and the asyncio adapter implement; ``BlockingMemoryApi`` and
``BlockingDirectivesApi`` are their synchronous twins (the blocking IPC client). The
parameters, defaults and return types are identical across surfaces:
``tests/test_api_parity.py`` compares every surface's signatures against these, and
``cairn.api.conformance`` has mypy check each class against them.

A method is added in two places: here (both twins) and in the embedded runtime; each
surface then gains a one-line method (the parity test names the ones missing). Methods
that only make sense in-process (``use_embedder``, ``use_text_provider``,
``resume_interrupted_clears``) are not part of the API; neither is the clients' ``ping``.

``query_vector`` is any iterable of floats (a list, a tuple, a one-dimensional numpy
array): a caller's precomputed query embedding, used instead of embedding ``query``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

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
        IngestReport,
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
    "BlockingDirectivesApi",
    "BlockingMemoryApi",
    "DirectivesApi",
    "MemoryApi",
]


class DirectivesApi(Protocol):
    """``memory.directives``: the user's standing instructions for each agent.

    ``create`` and ``approve`` are the only ways a directive becomes active: call them on
    an explicit user action only. ``propose`` (for a model's suggestion) makes a draft.
    """

    async def create(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive: ...

    async def propose(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive: ...

    async def approve(self, agent_id: str, directive_id: str) -> Directive: ...

    async def revoke(self, agent_id: str, directive_id: str) -> Directive: ...

    # Last: inside the class body the name ``list`` is this method from here on.
    async def list(
        self, agent_id: str, *, status: str | None = None
    ) -> list[Directive]: ...


class MemoryApi(Protocol):
    """Long-term memory for agents: ingest turns, recall before a model call, forget.

    Every method is a checkpoint. Embedded, each is the :class:`cairn.Memory` method of
    the same name (its docstring states the cancellation guarantees); over IPC it is one
    request and its answer (design/ipc.md), with the same typed errors.
    """

    @property
    def directives(self) -> DirectivesApi: ...

    # -- ingestion ---------------------------------------------------------------------
    async def ingest(self, agent_id: str, turns: Sequence[Turn]) -> IngestReport: ...

    async def ingest_turn(self, agent_id: str, turn: Turn) -> IntakeResult: ...

    async def ingest_event(self, agent_id: str, event: Turn) -> IntakeResult: ...

    async def declare_session(
        self,
        agent_id: str,
        session_id: str,
        *,
        subagent: bool = False,
        forked_from: tuple[str, str] | None = None,
    ) -> None: ...

    async def session_cursor(self, agent_id: str, session_id: str) -> str | None: ...

    async def replay_dead_letters(self, agent_id: str) -> int: ...

    async def wait_idle(self, agent_id: str | None = None) -> None: ...

    # -- recall ------------------------------------------------------------------------
    async def recall(
        self,
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
    ) -> Recall: ...

    async def fetch_recall(self, agent_id: str, request_id: str) -> Recall: ...

    async def recalls(
        self, agent_id: str, *, session_id: str | None = None, limit: int = 50
    ) -> list[RecallRecord]: ...

    async def feedback(
        self,
        agent_id: str,
        request_id: str,
        *,
        used: Sequence[str] = (),
        wrong: Sequence[str] = (),
    ) -> FeedbackReport: ...

    async def maintain(self, agent_id: str) -> MaintenanceReport: ...

    # -- attention -----------------------------------------------------------------------
    async def attention(
        self, agent_id: str, *, session_id: str | None = None, limit: int = 50
    ) -> list[AttentionItem]: ...

    async def consume_attention(
        self, agent_id: str, item_ids: Sequence[int]
    ) -> int: ...

    # -- forgetting --------------------------------------------------------------------
    async def clear(self, agent_id: str) -> ClearReport: ...

    async def wait_cleared(self, agent_id: str) -> None: ...

    async def remember(
        self,
        agent_id: str,
        text: str,
        *,
        by: str,
        kind: str = "fact",
        scope: Scope | None = None,
        metadata: Metadata | None = None,
    ) -> RememberResult: ...

    async def forget(self, agent_id: str, item_id: str) -> ForgetResult: ...

    async def archive(self, agent_id: str, claim_id: str) -> LifecycleResult: ...

    async def unarchive(self, agent_id: str, claim_id: str) -> LifecycleResult: ...

    async def conflicts(
        self, agent_id: str, *, include_resolved: bool = False
    ) -> list[Conflict]: ...

    async def resolve_conflict(
        self, agent_id: str, conflict_id: str, *, keep: str
    ) -> Conflict: ...

    # -- entities ----------------------------------------------------------------------
    async def entities(
        self, agent_id: str, *, name: str | None = None, limit: int = 100
    ) -> list[Entity]: ...

    # -- evidence ----------------------------------------------------------------------
    async def evidence(
        self, agent_id: str, refs: Sequence[str]
    ) -> list[EvidenceItem]: ...

    # -- inspection --------------------------------------------------------------------
    async def memories(
        self,
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
    ) -> list[MemoryItem]: ...

    async def memory(self, agent_id: str, claim_id: str) -> MemoryDetail: ...

    async def edit(self, agent_id: str, claim_id: str, text: str) -> EditReport: ...

    async def retire(self, agent_id: str) -> RetireReport: ...

    async def add_directive(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> str: ...

    # -- providers, status and lifecycle -------------------------------------------------
    async def reconfigure(self) -> ReconfigureReport: ...

    async def status(self) -> StatusReport: ...

    async def drain(self, timeout_s: float | None = None) -> DrainReport: ...

    async def resume(self) -> None: ...


class BlockingDirectivesApi(Protocol):
    """:class:`DirectivesApi` for synchronous code."""

    def create(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive: ...

    def propose(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive: ...

    def approve(self, agent_id: str, directive_id: str) -> Directive: ...

    def revoke(self, agent_id: str, directive_id: str) -> Directive: ...

    def list(self, agent_id: str, *, status: str | None = None) -> list[Directive]: ...


class BlockingMemoryApi(Protocol):
    """:class:`MemoryApi` for synchronous code: each call blocks until its answer."""

    @property
    def directives(self) -> BlockingDirectivesApi: ...

    def ingest(self, agent_id: str, turns: Sequence[Turn]) -> IngestReport: ...

    def ingest_turn(self, agent_id: str, turn: Turn) -> IntakeResult: ...

    def ingest_event(self, agent_id: str, event: Turn) -> IntakeResult: ...

    def declare_session(
        self,
        agent_id: str,
        session_id: str,
        *,
        subagent: bool = False,
        forked_from: tuple[str, str] | None = None,
    ) -> None: ...

    def session_cursor(self, agent_id: str, session_id: str) -> str | None: ...

    def replay_dead_letters(self, agent_id: str) -> int: ...

    def wait_idle(self, agent_id: str | None = None) -> None: ...

    def recall(
        self,
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
    ) -> Recall: ...

    def fetch_recall(self, agent_id: str, request_id: str) -> Recall: ...

    def recalls(
        self, agent_id: str, *, session_id: str | None = None, limit: int = 50
    ) -> list[RecallRecord]: ...

    def feedback(
        self,
        agent_id: str,
        request_id: str,
        *,
        used: Sequence[str] = (),
        wrong: Sequence[str] = (),
    ) -> FeedbackReport: ...

    def maintain(self, agent_id: str) -> MaintenanceReport: ...

    def attention(
        self, agent_id: str, *, session_id: str | None = None, limit: int = 50
    ) -> list[AttentionItem]: ...

    def consume_attention(self, agent_id: str, item_ids: Sequence[int]) -> int: ...

    def clear(self, agent_id: str) -> ClearReport: ...

    def wait_cleared(self, agent_id: str) -> None: ...

    def remember(
        self,
        agent_id: str,
        text: str,
        *,
        by: str,
        kind: str = "fact",
        scope: Scope | None = None,
        metadata: Metadata | None = None,
    ) -> RememberResult: ...

    def forget(self, agent_id: str, item_id: str) -> ForgetResult: ...

    def archive(self, agent_id: str, claim_id: str) -> LifecycleResult: ...

    def unarchive(self, agent_id: str, claim_id: str) -> LifecycleResult: ...

    def conflicts(
        self, agent_id: str, *, include_resolved: bool = False
    ) -> list[Conflict]: ...

    def resolve_conflict(
        self, agent_id: str, conflict_id: str, *, keep: str
    ) -> Conflict: ...

    def entities(
        self, agent_id: str, *, name: str | None = None, limit: int = 100
    ) -> list[Entity]: ...

    def evidence(self, agent_id: str, refs: Sequence[str]) -> list[EvidenceItem]: ...

    def memories(
        self,
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
    ) -> list[MemoryItem]: ...

    def memory(self, agent_id: str, claim_id: str) -> MemoryDetail: ...

    def edit(self, agent_id: str, claim_id: str, text: str) -> EditReport: ...

    def retire(self, agent_id: str) -> RetireReport: ...

    def add_directive(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> str: ...

    def reconfigure(self) -> ReconfigureReport: ...

    def status(self) -> StatusReport: ...

    def drain(self, timeout_s: float | None = None) -> DrainReport: ...

    def resume(self) -> None: ...
