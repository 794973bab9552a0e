"""The embedded API: ``async with open_memory(path) as memory``.

The runtime owns the database, the vector projections and the embedder, and starts one
supervisor per agent lazily, inside its own root nursery.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import trio

from cairn.api import bounds
from cairn.api.reports import (
    ClearReport,
    DrainReport,
    EmbedderIdentity,
    FeedbackReport,
    IngestReport,
    MaintenanceReport,
    ReconfigureReport,
    RetireReport,
    TextModelIdentity,
)
from cairn.api.status import AgentStatus, StatusReport
from cairn.clock import DomainClock, SystemDomainClock
from cairn.configuration import load_memory_config
from cairn.domain.claim import Origin
from cairn.domain.evidence import SessionInfo, SessionKind
from cairn.domain.ids import EventId, SessionId
from cairn.domain.metadata import Metadata, RecallFilter
from cairn.domain.outcomes import IntakeOutcome, IntakeRejection, IntakeResult
from cairn.domain.scope import RecallContext
from cairn.errors import (
    ArgumentOutOfRangeError,
    CairnError,
    ConflictingEventError,
    InvalidInputError,
)
from cairn.ingestion.extract import RuleExtractor
from cairn.ingestion.intake import rejection_error
from cairn.ingestion.screen import screen_identifier
from cairn.providers.gateway import QueryEmbeddingGateway
from cairn.providers.settings import (
    load_embedding_settings,
    load_text_settings,
)
from cairn.runtime import clearing, lifecycle
from cairn.runtime.actors.write_coordinator import SharedWrite, SharedWriter
from cairn.runtime.admission import WriteAdmission
from cairn.runtime.contributions import read_attention, read_records
from cairn.runtime.core import RuntimeCore
from cairn.runtime.database import Database
from cairn.runtime.directives import DirectiveBook
from cairn.runtime.directory_lock import hold_directory
from cairn.runtime.entities import read_entities
from cairn.runtime.evidence import read_evidence
from cairn.runtime.inspection import memory_filter, read_memories, read_memory
from cairn.runtime.providers import (
    ActiveEmbedder,
    SharedHttpClient,
    build_embedder,
    build_text_provider,
)
from cairn.runtime.recall import RecallPlan
from cairn.runtime.registry import AgentRegistry
from cairn.runtime.scrubbing import Scrubber
from cairn.runtime.supervisor import AgentServices
from cairn.runtime.switching import ProviderSwitch
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.runtime.writes import ConsumeAttention, RecordFeedback, ResolveConflict
from cairn.store.conflicts import list_conflicts
from cairn.store.dirty import count_dirty
from cairn.store.repair import repair_claims
from cairn.store.sessions import session_cursor
from cairn.store.status import agent_counts
from cairn.vectors.manager import VectorStoreManager

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import AsyncIterator, Iterable, Iterator, Sequence

    from cairn.api.reports import (
        AttentionItem,
        EditReport,
        Entity,
        EvidenceItem,
        MemoryDetail,
        MemoryItem,
        RecallRecord,
    )
    from cairn.config import MemoryConfig
    from cairn.domain.evidence import Turn
    from cairn.domain.outcomes import (
        Conflict,
        ForgetResult,
        LifecycleResult,
        RememberResult,
    )
    from cairn.domain.scope import Scope
    from cairn.providers.embedding import EmbeddingProvider, Vectors
    from cairn.providers.http.text import TextProvider
    from cairn.retrieval.types import Recall
    from cairn.vectors.identity import EmbeddingIdentity

__all__ = ["Memory", "open_memory"]

DATABASE_NAME = "cairn.db"
MAINTAIN_BATCHES = 64
"""Dirty batches one ``maintain`` call works at most (a bound on one call's time)."""


@attrs.define(eq=False)
class Memory:
    """The embedded API. A facade: it validates input and hands off to the runtime's
    parts (cairn.runtime.core), which it keeps private."""

    _core: RuntimeCore
    # One resume of interrupted clears at a time: a call made while open's own is under
    # way returns only once that one has finished (and discarded a retired agent).
    _resuming: trio.Lock = attrs.field(factory=trio.Lock, init=False)

    @property
    def path(self) -> Path:
        return self._core.path

    @property
    def embedder(self) -> EmbeddingProvider:
        """The embedder serving now (it changes on :meth:`use_embedder`)."""
        return self._core.active.provider

    # -- ingestion ---------------------------------------------------------------------
    async def ingest(self, agent_id: str, turns: Sequence[Turn]) -> IngestReport:
        """Store turns as evidence (idempotent by event ID); extraction follows in the background.

        Atomic with respect to cancellation: the batch commits whole or not at all. A
        turn over the per-message segment cap raises MessageTooLargeError and nothing of
        the call is stored.
        """
        async with self._core.admission.write(agent_id) as supervisor:
            return IngestReport(tuple(await supervisor.ingest(turns)))

    async def ingest_turn(self, agent_id: str, turn: Turn) -> IntakeResult:
        """Ingest one turn; a reused ID with other content raises ConflictingEventError."""
        (result,) = (await self.ingest(agent_id, [turn])).results
        if result.outcome is IntakeOutcome.REJECTED:
            raise rejection_error(result) or ConflictingEventError(turn.event_id)
        return result

    async def ingest_event(self, agent_id: str, event: Turn) -> IntakeResult:
        """Ingest one turn or runtime event (``Turn.kind``): a message, a tool result
        summary, a task started/finished/failed/blocked or needs-input event, or an edit
        or deletion of an earlier message (``Turn.replaces``). Secrets are redacted before
        anything is stored; a reused ID with other content raises ConflictingEventError,
        an edit of an unknown message InvalidInputError."""
        (result,) = (await self.ingest(agent_id, [event])).results
        if result.outcome is IntakeOutcome.REJECTED:
            if result.rejection is IntakeRejection.UNKNOWN_REPLACED_EVENT:
                raise InvalidInputError(result.reason or "unknown replaced event")
            raise rejection_error(result) or ConflictingEventError(event.event_id)
        return result

    async def declare_session(
        self,
        agent_id: str,
        session_id: str,
        *,
        subagent: bool = False,
        forked_from: tuple[str, str] | None = None,
    ) -> None:
        """Say how a session is extracted: a ``subagent`` session is recalled into but never
        extracted; a session ``forked_from=(parent_session_id, event_id)`` does not
        re-extract the parent's messages it replays."""
        try:
            info = SessionInfo(
                SessionId(session_id),
                SessionKind.SUBAGENT if subagent else SessionKind.MAIN,
                None
                if forked_from is None
                else (SessionId(forked_from[0]), EventId(forked_from[1])),
            )
        except ValueError as error:
            raise InvalidInputError(str(error)) from None
        screen_identifier("session ID", session_id)
        if forked_from is not None:
            screen_identifier("parent session ID", forked_from[0])
            screen_identifier("fork event ID", forked_from[1])
        async with self._core.admission.write(agent_id) as supervisor:
            await supervisor.declare_session(info)

    async def session_cursor(self, agent_id: str, session_id: str) -> str | None:
        """The event ID up to which the session is settled (extracted and embedded), or
        ``None`` before its first settled event."""
        agent = (await self._core.registry.get(agent_id)).agent_id
        return await self._core.database.read(
            lambda reader: session_cursor(reader.connection, agent, session_id)
        )

    async def replay_dead_letters(self, agent_id: str) -> int:
        """Give the agent's dead extraction batches fresh attempts; returns how many."""
        async with self._core.admission.write(agent_id) as supervisor:
            return await supervisor.replay_dead_letters()

    async def wait_idle(self, agent_id: str | None = None) -> None:
        """Wait until accepted turns are extracted and embedded (one agent, or all).

        Raises :class:`~cairn.errors.PipelineStalledError` instead of waiting forever
        when an agent's background extraction or embedding cannot commit (its last
        writes all failed on a storage fault, the latest during this wait); a fault that
        clears is waited through (:meth:`AgentSupervisor.wait_idle`)."""
        if agent_id is not None:
            supervisor = await self._core.registry.get(agent_id)
            await supervisor.wait_idle(give_up_on_stall=True)
            return
        for supervisor in self._core.registry.running():
            await supervisor.wait_idle(give_up_on_stall=True)

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
    ) -> Recall:
        """Recall a bounded contribution for ``query``.

        If the work misses ``wait_s`` the answer is ``partial``, within ``wait_s``: what
        was ready (the lexical candidates, ranked without the query vector; the manifest
        says ``vector_pending``), with a request ID; or ``pending`` with only the request
        ID if nothing was ready. The work finishes in the background and
        :meth:`fetch_recall` returns the complete result. With ``as_of`` (an aware
        datetime) the answer is what held then: turns after it are unseen, and each
        attribute's value is the one current at that moment. Every answer is recorded
        durably before it returns (:meth:`recalls`). ``turn_id`` is the host's key for the
        turn the prompt is built for: a second recall of the same session and turn returns
        that turn's contribution again (same request ID and blocks) without retrieving,
        unless a forget, clear or suppression committed since. Turns intake classified as
        noise (heartbeats, bare acknowledgements, log lines, tracebacks, progress output,
        turns without words) are stored but not recalled unless ``include_noise`` (a
        repeat of a ``turn_id`` answers the recorded contribution, as it was asked).

        ``k``, ``budget_bytes``, ``wait_s``, ``query_vector`` and ``as_of`` outside their
        ranges (cairn.api.bounds) raise ArgumentOutOfRangeError before anything runs.

        ``tags``, ``kinds``, ``since`` and ``until`` keep only the memories carrying any
        of the tags, of one of the kinds (claim kinds, ``"evidence"`` for turns), said
        at or after ``since`` and before ``until``: applied in SQL by every candidate
        source before its limit, so ``k`` filtered items come back when they exist
        (cairn.domain.metadata.RecallFilter; a bad one raises InvalidMetadataError).
        """
        if not query.strip():
            raise InvalidInputError("the query must not be blank")
        recall_filter = RecallFilter(tags=tags, kinds=kinds, since=since, until=until)
        if as_of is not None:
            bounds.check_as_of(as_of)
        if turn_id is not None:
            if not turn_id.strip():
                raise InvalidInputError("turn_id must be a non-blank string")
            # Stored with the recall's record, like the session ID.
            screen_identifier("turn ID", turn_id)
        if context is None:
            context = RecallContext(session_id=session_id)
        if context.session_id is not None:
            screen_identifier("session ID", context.session_id)
        config = self._core.config
        plan = RecallPlan(
            query=query,
            context=context,
            k=config.recall_k if k is None else bounds.check_k(k),
            budget_bytes=config.budget_bytes
            if budget_bytes is None
            else bounds.check_budget_bytes(budget_bytes),
            query_vector=None
            if query_vector is None
            else _query_vector(query_vector, self._core.active.identity),
            as_of=as_of,
            turn_id=turn_id,
            include_noise=_flag("include_noise", include_noise),
            recall_filter=recall_filter if recall_filter.active else None,
        )
        wait = config.recall_wait_s if wait_s is None else bounds.check_wait_s(wait_s)
        supervisor = await self._core.registry.get(agent_id)
        with _single_error():
            return await supervisor.recall(plan, wait)

    async def fetch_recall(self, agent_id: str, request_id: str) -> Recall:
        """A recall's answer by its request ID: a pending one's late result (or still
        ``pending``), or an on-time answer, while its text is kept
        (``recall_result_retention_s``; a forget, clear or suppression drops it).
        Unknown, expired or dropped raises UnknownRequestError."""
        return await (await self._core.registry.get(agent_id)).fetch_recall(request_id)

    async def recalls(
        self, agent_id: str, *, session_id: str | None = None, limit: int = 50
    ) -> list[RecallRecord]:
        """The durable records of the agent's recalls (one session's, or all), newest
        first: what each selected, dropped and allocated, by ID. A record outlives its
        answer's text (a forget drops the text, never the record)."""
        bounds.check_limit(limit)
        if session_id is not None:
            screen_identifier("session ID", session_id)
        agent = (await self._core.registry.get(agent_id)).agent_id
        return await self._core.database.read(
            lambda reader: read_records(
                reader.connection, agent, session_id=session_id, limit=limit
            )
        )

    async def feedback(
        self,
        agent_id: str,
        request_id: str,
        *,
        used: Sequence[str] = (),
        wrong: Sequence[str] = (),
    ) -> FeedbackReport:
        """Report which items of recall ``request_id`` helped (``used``) or were wrong
        (``wrong``), by the IDs its items carry. The learning layer turns this into
        signals: used claims gain usefulness and trust, a claim reported wrong loses
        trust and, reported wrong twice, leaves recall (quarantined, kept for audit).
        Every ID must be one that recall returned (InvalidInputError otherwise), an
        unknown request raises UnknownRequestError; repeating a report changes nothing."""
        used_ids = bounds.check_feedback_ids("used", used)
        wrong_ids = bounds.check_feedback_ids("wrong", wrong)
        async with self._core.admission.write(agent_id) as supervisor:
            recorded = await supervisor.commit(
                RecordFeedback(request_id, used_ids, wrong_ids)
            )
        return FeedbackReport(
            request_id, recorded.used, recorded.wrong, recorded.new_signals
        )

    async def maintain(self, agent_id: str) -> MaintenanceReport:
        """Maintenance of the agent now instead of at its timer: dirty work through
        every pass (merge, challenge, reflection, learning, persona) until none is
        waiting, at most ``MAINTAIN_BATCHES`` (64) batches and no new one after
        ``MemoryConfig.maintain_budget_s`` (call again while ``remaining`` is not 0: a
        seed that keeps failing stays dirty and rotates). A short-lived process
        (``cairn ingest``) consolidates this way before it exits. A write: refused while
        draining, since drain pauses maintenance."""
        budget_s = self._core.config.maintain_budget_s
        async with self._core.admission.write(agent_id) as supervisor:
            batches, settled = await supervisor.maintain(MAINTAIN_BATCHES, budget_s)
            agent = supervisor.agent_id
        remaining = await self._core.database.read(
            lambda reader: count_dirty(reader.connection, agent)
        )
        return MaintenanceReport(agent, batches, settled, remaining)

    async def attention(
        self, agent_id: str, *, session_id: str | None = None, limit: int = 50
    ) -> list[AttentionItem]:
        """The agent's unconsumed notices, newest first: late recall results ready to
        fetch, and failed, blocked and needs-input events of its tasks (repeats of one
        task in a session merged, with a count). Event texts are loaded now, so a
        forgotten or cleared event is never shown."""
        bounds.check_limit(limit)
        if session_id is not None:
            screen_identifier("session ID", session_id)
        agent = (await self._core.registry.get(agent_id)).agent_id
        return await self._core.database.read(
            lambda reader: read_attention(
                reader.connection, agent, session_id=session_id, limit=limit
            )
        )

    async def consume_attention(self, agent_id: str, item_ids: Sequence[int]) -> int:
        """Mark notices consumed (they leave :meth:`attention`); returns how many of
        the agent's open items that was. Another agent's IDs change nothing."""
        ids = bounds.check_item_ids(item_ids)
        async with self._core.admission.write(agent_id) as supervisor:
            return await supervisor.commit(ConsumeAttention(ids))

    # -- forgetting ----------------------------------------------------------------------
    async def clear(self, agent_id: str) -> ClearReport:
        """Clear the agent's memories (claims) durably; evidence and directives remain.

        Resumes after a crash from the stored phase. Returns what was and was not removed.
        """
        return await clearing.clear(self._core.admission, self._core.database, agent_id)

    async def remember(
        self,
        agent_id: str,
        text: str,
        *,
        by: str,
        kind: str = "fact",
        scope: Scope | None = None,
        metadata: Metadata | None = None,
    ) -> RememberResult:
        """Store one claim explicitly (redacted like a turn). ``by`` is required:
        ``"user"`` is the user's own add and releases a tombstone of exactly this claim;
        ``"model"`` never does (it is suppressed). ``metadata`` is kept with the claim
        (a claim already stored with these words gains its tags)."""
        draft, origin = lifecycle.remember_draft(text, kind, scope, by, metadata)
        if origin is Origin.USER:
            # The user's own word joins its attribute's chain as it is stored; a
            # model's waits for the challenge pass, which never lets it overturn what
            # the user said (cairn.maintenance.challenge).
            draft = await run_in_thread(
                lambda: lifecycle.keyed_draft(draft), limiter=self._core.limiters.cpu
            )
        async with self._core.admission.write(agent_id) as supervisor:
            return await lifecycle.remember(supervisor, draft, origin)

    async def forget(self, agent_id: str, item_id: str) -> ForgetResult:
        """Forget what recall showed, by the ID its item carries: a claim, or a stored turn
        or segment (with every index entry and vector of it, and the claims learned only
        from it). Hash-only tombstones keep it from coming back through a replay, an
        import or a model's remember. An unknown ID raises UnknownMemoryError."""
        async with self._core.admission.write(agent_id) as supervisor:
            return await lifecycle.forget(supervisor, item_id)

    async def archive(self, agent_id: str, claim_id: str) -> LifecycleResult:
        """Take a claim out of recall but keep it locally (undo with :meth:`unarchive`)."""
        async with self._core.admission.write(agent_id) as supervisor:
            return await lifecycle.archive(supervisor, claim_id, archived=True)

    async def unarchive(self, agent_id: str, claim_id: str) -> LifecycleResult:
        async with self._core.admission.write(agent_id) as supervisor:
            return await lifecycle.archive(supervisor, claim_id, archived=False)

    # -- conflicts -----------------------------------------------------------------------
    async def conflicts(
        self, agent_id: str, *, include_resolved: bool = False
    ) -> list[Conflict]:
        """Contradictions maintenance could not decide, oldest first: two claims of one
        scope stating incompatible values, both still recalled (marked ``conflicting``)
        until :meth:`resolve_conflict`. ``include_resolved`` adds the decided ones."""
        agent = (await self._core.registry.get(agent_id)).agent_id
        return await self._core.database.read(
            lambda reader: list_conflicts(
                reader.connection, agent, include_resolved=include_resolved
            )
        )

    async def resolve_conflict(
        self, agent_id: str, conflict_id: str, *, keep: str
    ) -> Conflict:
        """Decide a conflict: ``keep`` is the claim ID that holds (the other becomes its
        history, with lineage) or ``"both"``. Both claims are looked at again by
        maintenance. An unknown conflict raises UnknownConflictError, a claim that is
        not one of its two UnknownClaimError, a resolved one InvalidTransitionError."""
        screen_identifier("conflict ID", conflict_id)
        screen_identifier("claim ID", keep)
        async with self._core.admission.write(agent_id) as supervisor:
            return await supervisor.commit(ResolveConflict(conflict_id, keep))

    # -- entities ------------------------------------------------------------------------
    async def entities(
        self, agent_id: str, *, name: str | None = None, limit: int = 100
    ) -> list[Entity]:
        """The people, places, organisations, projects and artefacts the agent's turns
        speak of, most mentioned first: each with its canonical name, every alias
        (speaker name, name, translation, nickname, kinship reference) with the turns
        that give it, and the relations claims state between them. ``name`` keeps the
        ones known by that name, any alias, folded as aliases are (case, width and a
        trailing possessive do not count: ``"mel"`` finds Melanie by her nickname). A
        blank ``name`` raises InvalidInputError, a ``limit`` outside 1 to 1000
        ArgumentOutOfRangeError."""
        bounds.check_limit(limit)
        if name is not None and not name.strip():
            raise InvalidInputError("the name must not be blank")
        agent = (await self._core.registry.get(agent_id)).agent_id
        return await self._core.database.read(
            lambda reader: read_entities(
                reader.connection, agent, name=name, limit=limit
            )
        )

    # -- evidence ------------------------------------------------------------------------
    async def evidence(self, agent_id: str, refs: Sequence[str]) -> list[EvidenceItem]:
        """The stored turns behind recalled items: each ref (an event ID from a
        recalled item's ``source_refs``, or a claim ID, which expands to each of its
        source turns) as an EvidenceItem, in the order asked. A ref naming nothing, or
        a forgotten turn, is an entry saying so (``state``), so the other refs still
        answer. 1 to 100 refs (else ArgumentOutOfRangeError); a blank ref is
        InvalidInputError."""
        checked = bounds.check_evidence_refs(refs)
        agent = (await self._core.registry.get(agent_id)).agent_id
        return await self._core.database.read(
            lambda reader: read_evidence(reader.connection, agent, checked)
        )

    # -- inspection ----------------------------------------------------------------------
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
    ) -> list[MemoryItem]:
        """What the agent remembers, newest stored first: every claim (archived and
        superseded ones too, unless ``lifecycle`` says which), each filter applied
        before ``limit``. ``kind`` and ``lifecycle`` are one value each (another is
        InvalidInputError naming the values there are); ``scope`` exactly that scope;
        ``since`` (inclusive) and ``until`` (exclusive) bound when it was stored (aware
        datetimes); ``text`` is found anywhere in its words (ASCII case folded); ``tags``
        keeps those carrying any of them (caller metadata, cairn.Metadata). A
        ``limit`` outside 1 to 1000 is ArgumentOutOfRangeError."""
        bounds.check_limit(limit)
        wanted = memory_filter(
            kind=kind,
            scope=scope,
            lifecycle=lifecycle,
            since=since,
            until=until,
            text=text,
            tags=tags,
        )
        agent = (await self._core.registry.get(agent_id)).agent_id
        return await self._core.database.read(
            lambda reader: read_memories(reader.connection, agent, wanted, limit)
        )

    async def memory(self, agent_id: str, claim_id: str) -> MemoryDetail:
        """One memory with the stored turns behind it (as :meth:`evidence` expands its
        ID) and its lineage: the edits, supersessions, merges and reflections it is
        either end of. An ID naming no claim of the agent (a forgotten one included) is
        UnknownClaimError."""
        screen_identifier("claim ID", claim_id)
        agent = (await self._core.registry.get(agent_id)).agent_id
        return await self._core.database.read(
            lambda reader: read_memory(reader.connection, agent, claim_id)
        )

    async def edit(self, agent_id: str, claim_id: str, text: str) -> EditReport:
        """Rewrite a memory as the user: a new revision with ``text`` (redacted like a
        turn) takes its place in recall, with an ``edit`` lineage edge from the old
        one, which stays stored as history, out of recall. The new revision keeps the
        kind, scope, attribute and validity; cancelled, either both happened or
        neither. UnknownClaimError for an unknown or forgotten claim,
        InvalidTransitionError for an archived one (an edited revision included:
        edit the newer one), ProtectedClaimError for persona and working rows,
        InvalidInputError for a blank text or one saying what the memory says."""
        words = lifecycle.edit_text(claim_id, text)
        async with self._core.admission.write(agent_id) as supervisor:
            return await lifecycle.edit(supervisor, claim_id, words)

    async def resume_interrupted_clears(self) -> None:
        """Finish clear and retire jobs a crash left pending, agent by agent (run at open;
        a call while that run is under way waits for it)."""
        async with self._resuming:
            await clearing.resume_pending_clears(
                self._core.database, self._core.registry
            )

    async def retire(self, agent_id: str) -> RetireReport:
        """Delete the agent's whole namespace: claims, evidence, directives, tombstones,
        lineage, dirty work, audit and vector files. A new agent with the same ID starts
        empty. Durable: a crash midway resumes at the next open."""
        return await clearing.retire(
            self._core.admission, self._core.registry, agent_id
        )

    async def wait_cleared(self, agent_id: str) -> None:
        """Start the agent if needed and wait until no clear job of it is pending (a job
        left by a crash resumes when the agent starts)."""
        supervisor = await self._core.registry.get(agent_id)
        await supervisor.wait_cleared()
        if supervisor.retired:
            # A retire resumed at this start: the next call gets a new, empty agent,
            # never the retired one on its way out (RuntimeClosedError).
            await self._core.registry.discard(supervisor, "agent retired")

    # -- directives --------------------------------------------------------------------
    @property
    def directives(self) -> DirectiveBook:
        """``create``/``propose``/``approve``/``revoke``/``list`` of standing directives."""
        core = self._core
        return DirectiveBook(core.registry, core.admission, core.database)

    async def add_directive(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> str:
        """Create an active directive: an explicit user action, never called by extraction."""
        created = await self.directives.create(agent_id, text, kind=kind)
        return created.directive_id

    # -- providers ---------------------------------------------------------------------
    async def reconfigure(self) -> ReconfigureReport:
        """Apply the provider configuration without a restart: ``[embedding]`` and
        ``[text]`` are re-read from the file and the environment and both providers are
        switched (:meth:`use_embedder`, :meth:`use_text_provider`). The report says whether
        the embedding identity changed and what serves now. Bad configuration raises
        InvalidInputError and changes nothing.
        """
        switch = self._core.switch
        changed = await switch.reconfigure()
        text_provider = switch.text_provider
        return ReconfigureReport(
            changed,
            EmbedderIdentity.of(self.embedder.identity),
            None
            if text_provider is None
            else TextModelIdentity.of(text_provider.identity),
        )

    def use_text_provider(self, provider: TextProvider | None) -> None:
        """Extract with ``provider`` from the next batch on (None: the rule extractor)."""
        self._core.switch.use_text_provider(provider)

    async def use_embedder(self, embedder: EmbeddingProvider) -> bool:
        """Switch to ``embedder`` live; returns whether the embedding identity changed.

        A new identity (provider, model, dimension or metric) is an epoch change for every
        running agent: in-flight embedding work of the old identity is cancelled and,
        whatever cancellation misses, refused at commit; the old vector projection stops
        serving at once; each live agent rebuilds its projection for the new identity in
        the background (stored vectors of that identity are reused, the rest are
        re-embedded) while recall carries on lexically and says ``reindexing``. The query
        breaker and deadline state are cleared either way.
        """
        return await self._core.switch.use_embedder(embedder)

    # -- status and lifecycle ------------------------------------------------------------
    async def status(self) -> StatusReport:
        """Stored counts of every agent; the state of each (running, stopped, failed or
        unavailable, with the failure and restarts); runtime state of running agents."""
        core = self._core
        counts = await core.database.read(
            lambda reader: agent_counts(reader.connection)
        )
        registry = core.registry
        agents: dict[str, AgentStatus] = {}
        for agent in sorted({*counts, *registry.known()}):
            health = registry.health(agent)
            stored: dict[str, Any] = dict(counts.get(agent, {}))
            entry = AgentStatus(
                agent,
                health.state,
                failure=health.failure,
                restarts=health.restarts,
                **stored,
            )
            supervisor = registry.running_supervisor(agent)
            if supervisor is not None:
                identity = supervisor.vector_identity
                entry = attrs.evolve(
                    entry,
                    statistics=supervisor.statistics(),
                    epoch=supervisor.fence.epoch,
                    query_breaker=core.gateway.breaker(agent).state.value,
                    vector_identity=None
                    if identity is None
                    else EmbedderIdentity.of(identity),
                    projection_save_error=supervisor.projection.save_error,
                )
            agents[agent] = entry
        return StatusReport(
            str(core.path),
            EmbedderIdentity.of(self.embedder.identity),
            tuple(agents.values()),
            embedder_warm=core.gateway.warm_state.value,
        )

    # -- drain -------------------------------------------------------------------------
    async def drain(self, timeout_s: float | None = None) -> DrainReport:
        """Stop accepting writes, then wait until all accepted work is extracted and embedded
        and forgotten text has left the disk (FTS purge and WAL checkpoint).

        New writes (ingest, clear, remember, directives …) raise :class:`DrainingError`
        from the moment this is called; reads keep working. A write already accepted is
        waited for, never dropped. On timeout (default ``MemoryConfig.drain_timeout_s``)
        raises :class:`DrainTimeoutError` and stays drained; :meth:`resume` re-arms in
        either case.
        """
        limit_s = (
            self._core.config.drain_timeout_s
            if timeout_s is None
            else bounds.check_drain_timeout_s(timeout_s)
        )
        agents, elapsed_s = await self._core.admission.drain(limit_s)
        return DrainReport(agents, elapsed_s)

    async def resume(self) -> None:
        """Accept writes again after :meth:`drain`."""
        await self._core.admission.resume()

    async def aclose(self) -> None:
        """Stop every agent: stop accepting, drain within the timeout, publish, close."""
        if self._core.registry.closed:
            return
        await self._core.registry.stop_all()
        # What the agents' last writes left owed (a failure stays owed for the next open).
        await self._core.scrubber.attempt()


def _flag(name: str, value: object) -> bool:
    """A yes-or-no argument: a bool, never a truthy stand-in ("no" is truthy)."""
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name} must be true or false")
    return value


def _query_vector(values: Iterable[float], identity: EmbeddingIdentity) -> Vectors:
    """A caller's query embedding as float32, refused unless it has the serving
    embedder's dimension and finite float32 values, and (for cosine) a direction."""
    if not isinstance(values, np.ndarray):
        values = list(values)  # any iterable of floats
    array = np.asarray(values)
    if array.dtype.kind not in "iuf":
        raise ArgumentOutOfRangeError(
            f"query_vector must hold {identity.dimension} numbers;"
            f" got {bounds.shown_value(values)}"
        )
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused below
        vector = array.astype(np.float32).reshape(-1)
    if vector.size != identity.dimension:
        raise ArgumentOutOfRangeError(
            f"query_vector must have {identity.dimension} values (the serving"
            f" embedder's dimension); got {vector.size}"
        )
    finite = np.isfinite(vector)
    if not finite.all():
        bad = array.reshape(-1)[int(np.argmin(finite))]
        raise ArgumentOutOfRangeError(
            "query_vector values must be finite numbers within float32's range;"
            f" got {bounds.shown_value(bad.item())}"
        )
    if identity.metric == "cos" and not vector.any():
        raise ArgumentOutOfRangeError(
            "query_vector must not be all zeros: a cosine ranking needs a direction"
        )
    return vector


@contextlib.contextmanager
def _single_error() -> Iterator[None]:
    """Raise a cairn error that arrived as the only one in a group, unwrapped.

    Recall runs its candidate reads in a nursery; what fails there arrives as an
    ExceptionGroup, but the caller is owed the typed error (and the IPC server an error
    frame with its code, never ``internal``).
    """
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        if len(leaves) == 1 and isinstance(leaves[0], CairnError):
            raise leaves[0] from None
        raise


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            yield from _leaves(error)
        else:
            yield error


@contextlib.asynccontextmanager
async def open_memory(
    path: str | Path,
    config: MemoryConfig | None = None,
    *,
    clock: DomainClock | None = None,
    embedder: EmbeddingProvider | None = None,
    text_provider: TextProvider | None = None,
) -> AsyncIterator[Memory]:
    """Open (creating if needed) the memory in data directory ``path``.

    Without a ``config``, ``[memory]`` of ``cairn.toml`` and ``CAIRN_MEMORY_*`` make it
    over MemoryConfig's defaults (cairn.configuration); a ``config`` given is used whole.

    Without an ``embedder``, the one configured in ``cairn.toml``/``CAIRN_EMBEDDING_*``
    serves (cairn.providers.settings), by default the embedded local model. Without a
    ``text_provider``, the one configured under ``[text]``/``CAIRN_TEXT_*`` extracts, and
    with none configured (the default) the rule extractor does.
    """
    data_dir = Path(path)
    explicit = config
    # Read before the runtime's limiters exist (the config sizes them).
    chosen, settings, text_settings = await run_in_thread(
        lambda: (
            explicit if explicit is not None else load_memory_config(data_dir).config,
            load_embedding_settings(data_dir),
            load_text_settings(data_dir),
        ),
        limiter=trio.CapacityLimiter(1),
    )
    config = chosen
    limiters = Limiters(store_read=trio.CapacityLimiter(config.reader_connections))
    # One writing process per data directory (cairn.runtime.directory_lock): held while
    # the runtime is open, unless this process (a server, a CLI command) holds it already.
    directory = hold_directory(data_dir)
    await run_in_thread(directory.__enter__, limiter=limiters.store_write)
    http = SharedHttpClient()
    try:
        if embedder is None:
            embedder = await build_embedder(settings, limiters, http)
        if text_provider is None:
            text_provider = build_text_provider(text_settings, http)
        # Extraction through a text model; without one the rule extractor serves.
        async with _open_runtime(
            data_dir, config, clock, embedder, limiters, http, text_provider
        ) as memory:
            yield memory
    finally:
        # After the runtime has stopped: its last provider calls are over by then.
        try:
            await http.aclose()
        finally:
            with trio.CancelScope(shield=True):
                await run_in_thread(
                    lambda: directory.__exit__(None, None, None),
                    limiter=limiters.store_write,
                )


@contextlib.asynccontextmanager
async def _open_runtime(
    data_dir: Path,
    config: MemoryConfig,
    clock: DomainClock | None,
    embedder: EmbeddingProvider,
    limiters: Limiters,
    http: SharedHttpClient,
    text_provider: TextProvider | None,
) -> AsyncIterator[Memory]:
    database = await Database.open(
        data_dir / DATABASE_NAME,
        limiters,
        readers=config.reader_connections,
        synchronous_full=config.synchronous_full,
        vfs=config.vfs,
    )
    domain_clock = clock or SystemDomainClock()
    shared = SharedWriter(database, domain_clock)
    scrubber = Scrubber(database, shared)
    try:
        # Before any agent starts: damaged rows are repaired, never served as they are.
        await shared.commit(SharedWrite(repair_claims, "open-time repair"))
        # And the text of what was forgotten before a crash leaves the disk: pending FTS
        # purges of every agent, then the WAL checkpoint (a busy one is retried by the
        # scrubber's task).
        await scrubber.attempt()
    except BaseException:
        with trio.CancelScope(shield=True):
            await database.aclose()
        raise
    # f32 rows searched with BLAS: 2x faster than usearch's f16 kernel here, and it does not
    # thrash the GIL beside busy threads (design/vectors.md); blobs on disk stay f16.
    vectors = VectorStoreManager(data_dir / "vectors", storage="f32")
    active = ActiveEmbedder(embedder)
    gateway = QueryEmbeddingGateway(
        embedder,
        deadline_floor_s=config.query_deadline_floor_s,
        deadline_ceiling_s=config.query_deadline_ceiling_s,
        failure_threshold=config.breaker_failures,
        window_s=config.breaker_window_s,
        cooldown_s=config.breaker_cooldown_s,
        warmup_wait_s=config.query_warmup_wait_s,
    )
    body_error: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            switch_box: list[ProviderSwitch] = []
            services = AgentServices(
                database=database,
                limiters=limiters,
                config=config,
                clock=domain_clock,
                embedder=active,
                gateway=gateway,
                vectors=vectors,
                extractor=RuleExtractor(),
                text_provider=lambda: switch_box[0].text_provider,
                wake_scrub=scrubber.wake,
            )
            await nursery.start(scrubber.run)
            # The query embedder loads in the background, so the first recall finds it warm.
            nursery.start_soon(gateway.keep_warm)
            registry = AgentRegistry(services, nursery)
            admission = WriteAdmission(registry, scrubber)
            registry.on_start = admission.started
            switch = ProviderSwitch(
                data_dir, limiters, active, gateway, registry, http, text_provider
            )
            switch_box.append(switch)
            memory = Memory(
                RuntimeCore(
                    path=data_dir,
                    config=config,
                    clock=domain_clock,
                    database=database,
                    limiters=limiters,
                    vectors=vectors,
                    active=active,
                    gateway=gateway,
                    registry=registry,
                    admission=admission,
                    switch=switch,
                    shared=shared,
                    scrubber=scrubber,
                )
            )
            nursery.start_soon(memory.resume_interrupted_clears)
            try:
                yield memory
                await memory.aclose()
            except BaseException as error:  # noqa: BLE001 - re-raised below, unwrapped
                # The caller's own error leaves unwrapped: the nursery is an internal
                # detail, so `except InvalidInputError` works around `async with`.
                body_error = error
            finally:
                nursery.cancel_scope.cancel(reason="memory closed")
    finally:
        with trio.CancelScope(shield=True):
            await run_in_thread(vectors.close, limiter=limiters.index)
            await database.aclose()
    if body_error is not None:
        raise body_error
