"""One recall, end to end: query embedding, candidates, ranking, budget and rendering.

A recall runs in two phases that overlap. The lexical lists (claim and event FTS, a reader
thread, milliseconds) are read first, beside the vector side (the query embedding, which a
cold model can hold up for seconds, then the exact scan of the projection). The complete
result validates and ranks every list in one snapshot. An answer due before the vector side
is done is ranked from the lexical lists already read (:meth:`RecallRun.partial`): the same
validation, suppression, scope and budget, without the query vector, and the manifest says
``vector_pending``; the complete result goes on and is stored for ``fetch_recall``.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

import attrs
import numpy as np
import numpy.typing as npt
import trio

from cairn.clock import DomainClock
from cairn.config import MemoryConfig
from cairn.domain.ids import AgentId
from cairn.domain.metadata import RecallFilter
from cairn.domain.scope import RecallContext
from cairn.providers.gateway import QueryEmbeddingGateway
from cairn.query.analysis import QueryAnalysis, analyse
from cairn.retrieval.attributes import AskedQuestion, with_attribute_list
from cairn.retrieval.budget import Demand, Shares, allocate
from cairn.retrieval.candidates import (
    CandidateRequest,
    Candidates,
    ProposedLists,
    lexical_candidates,
    validate_with_refill,
    vector_candidates,
)
from cairn.retrieval.entity_lists import (
    EntityFocus,
    entity_focus,
    focus_lists,
    with_focus,
)
from cairn.retrieval.rank import rank_candidates
from cairn.retrieval.render import (
    directive_render_lines,
    memory_demand,
    render_contribution,
    render_directives,
)
from cairn.retrieval.sections import SectionItems, load_sections
from cairn.retrieval.suppress import (
    hidden_events,
    suppress_candidates,
    topic_matcher,
)
from cairn.retrieval.types import (
    Degradation,
    Manifest,
    Recall,
    RecallItem,
    RecallStatus,
)
from cairn.runtime.actors.maintenance import AuditBuffer
from cairn.runtime.database import Database
from cairn.runtime.projection import Projection
from cairn.runtime.query_compiler import QueryCompiler
from cairn.runtime.threads import run_in_thread
from cairn.store.directives import active_directives
from cairn.store.fts import query_terms
from cairn.store.requests import forget_epoch
from cairn.vectors.index import ExactVectorIndex

if TYPE_CHECKING:
    from cairn.domain.directive import ActiveDirective
    from cairn.runtime.database import Reader

__all__ = [
    "ComputedRecall",
    "RecallPlan",
    "RecallRun",
    "RecallServices",
    "partial_margin_s",
]


@attrs.frozen
class RecallPlan:
    """What the caller asked for."""

    query: str
    context: RecallContext
    k: int
    budget_bytes: int
    query_vector: npt.NDArray[np.float32] | None = None
    # Recall what held at this moment (aware datetime) instead of now.
    as_of: dt.datetime | None = None
    # The host's key for the turn this recall contributes to (cairn.runtime.contributions).
    turn_id: str | None = None
    # Turns classified as noise (heartbeats, acknowledgements, logs…) are candidates too.
    include_noise: bool = False
    # Only the memories this keeps (tags, kinds, time), in every candidate source.
    recall_filter: RecallFilter | None = None


@attrs.frozen
class ComputedRecall:
    """A recall and the agent's forget epoch of the snapshot it was computed on: a late
    result is stored only if no forget, clear or suppression committed since."""

    recall: Recall
    forget_epoch: int


@attrs.frozen
class RecallServices:
    """What a recall of one agent reads and where it records what it showed."""

    agent_id: AgentId
    database: Database
    gateway: QueryEmbeddingGateway
    projection: Projection
    config: MemoryConfig
    clock: DomainClock
    audit: AuditBuffer
    vector_limiter: trio.CapacityLimiter
    query_compiler: QueryCompiler | None = None


def _shares(config: MemoryConfig) -> Shares:
    return Shares(
        directive=config.directive_share,
        persona_floor=config.persona_floor_share,
        persona_ceiling=config.persona_ceiling_share,
        recall_reserve=config.recall_reserve_share,
        borrow=config.borrow_share,
    )


def partial_margin_s(config: MemoryConfig, wait_s: float) -> float:
    """How long before the wait budget ends a partial answer starts to be ranked: its share
    of the budget. Concurrent recalls rank their partial answers one after another on the
    reader connections, so the margin grows with the budget rather than being fixed."""
    return wait_s * config.recall_partial_share


@attrs.define(eq=False)
class RecallRun:
    """One recall in progress. :meth:`complete` computes the whole result;
    :meth:`partial` answers from the lexical lists :meth:`complete` has read so far."""

    plan: RecallPlan
    request_id: str
    services: RecallServices
    now: dt.datetime = attrs.field(init=False)
    _terms: list[str] = attrs.field(init=False)
    # The claim and event FTS lists, once read (``_lexical_read`` is set then).
    _lexical: ProposedLists = attrs.field(factory=lambda: ProposedLists({}), init=False)
    _lexical_read: trio.Event = attrs.field(factory=trio.Event, init=False)
    # The vector side's query vector and index, kept for refilling the vector lists.
    _query_vector: npt.NDArray[np.float32] | None = attrs.field(
        default=None, init=False
    )
    _index: ExactVectorIndex | None = attrs.field(default=None, init=False)
    _analysis: QueryAnalysis = attrs.field(init=False)
    _focus: EntityFocus = attrs.field(factory=EntityFocus, init=False)
    _analysis_degradation: Degradation | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        # One moment for both answers: the partial one is the complete one minus vectors.
        self.now = self.services.clock.now()
        self._terms = list(query_terms(self.plan.query))
        self._analysis = analyse(
            self.plan.query, self.now, self.services.config.timezone
        )

    def _request(
        self, query_vector: npt.NDArray[np.float32] | None = None
    ) -> CandidateRequest:
        config = self.services.config
        return CandidateRequest(
            agent_id=self.services.agent_id,
            terms=self._terms,
            scopes=self.plan.context.applicable(),
            query_vector=query_vector,
            lexical_limit=config.lexical_candidates,
            vector_limit=config.vector_candidates,
            now=self.now,
            as_of=self.plan.as_of,
            want=self.plan.k,
            refill_cap=config.vector_refill_cap,
            include_noise=self.plan.include_noise,
            recall_filter=self.plan.recall_filter,
        )

    async def complete(self) -> ComputedRecall:
        """Lexical lists and the vector side side by side, then one snapshot validates
        every candidate and ranks them."""
        degradations: list[Degradation] = []
        vector_lists: list[ProposedLists] = []
        compiler = self.services.query_compiler
        if compiler is not None and compiler.enabled:
            self._analysis, offline = await compiler.compile(
                self._analysis, self.plan.query, self.now
            )
            if offline is not None:
                self._analysis_degradation = offline
                degradations.append(offline)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._read_lexical)
            nursery.start_soon(self._search_vectors, vector_lists, degradations)
        recall, epoch = await self._answer(
            RecallStatus.OK, vector_lists[0] if vector_lists else None, degradations
        )
        return ComputedRecall(recall, epoch)

    async def partial(self) -> Recall:
        """The answer from what is ready: the lexical lists (waited for if still being
        read) ranked without the query vector. Cancel it at the deadline for ``pending``."""
        await self._lexical_read.wait()
        degradations = [Degradation.VECTOR_PENDING]
        if self._analysis_degradation is not None:
            degradations.append(self._analysis_degradation)
        if self.services.projection.reindexing:
            degradations.append(Degradation.REINDEXING)
        recall, _ = await self._answer(RecallStatus.PARTIAL, None, degradations)
        return recall

    async def _read_lexical(self) -> None:
        """The lexical lists, and the query analysis with the lists it adds (the names
        it resolves are the agent's aliases in the same snapshot)."""
        request = self._request()
        analysis = self._analysis
        question = AskedQuestion.of(self.plan.query)
        limit = self.services.config.lexical_candidates

        def read(reader: Reader) -> tuple[ProposedLists, EntityFocus]:
            proposed = lexical_candidates(reader.lexical, request)
            focus = entity_focus(reader.connection, request.agent_id, analysis)
            extra = focus_lists(
                reader.lexical,
                request.agent_id,
                request.terms,
                focus,
                question,
                limit,
                request.recall_filter,
            )
            return attrs.evolve(proposed, lists={**proposed.lists, **extra}), focus

        self._lexical, self._focus = await self.services.database.read(read)
        self._lexical_read.set()

    async def _search_vectors(
        self, found: list[ProposedLists], degradations: list[Degradation]
    ) -> None:
        """The query vector (the caller's or the gateway's), then the exact scan of the
        agent's projection; what is missing is said in ``degradations``."""
        services = self.services
        projection = services.projection
        query_vector = self.plan.query_vector
        query_identity = None
        if query_vector is None:
            embedded = await services.gateway.embed_query(
                services.agent_id, self.plan.query
            )
            query_vector, query_identity = embedded.vector, embedded.identity
            if embedded.degradation is not None:
                degradations.append(embedded.degradation)
        await projection.wait_ready()
        index, index_identity = projection.index, projection.identity
        if self.plan.query_vector is not None:
            query_identity = index_identity  # a caller's vector is taken to fit it
        if projection.reindexing:
            degradations.append(Degradation.REINDEXING)
        elif index is None:
            degradations.append(Degradation.VECTOR_UNAVAILABLE)
        if index is not None and query_identity != index_identity:
            # The embedder switched between embedding the query and reading the slot: the
            # vector and the projection are of different spaces and must never meet.
            index = None
            if Degradation.REINDEXING not in degradations:
                degradations.append(Degradation.REINDEXING)
        if index is None or query_vector is None:
            return
        request = self._request(query_vector)
        vector_index: ExactVectorIndex = index
        self._query_vector, self._index = query_vector, index
        found.append(
            await run_in_thread(
                lambda: vector_candidates(vector_index, request),
                limiter=services.vector_limiter,
            )
        )

    async def _answer(
        self,
        status: RecallStatus,
        vector: ProposedLists | None,
        degradations: list[Degradation],
    ) -> tuple[Recall, int]:
        """Validate and rank the lexical lists and ``vector`` (refilled while filtering
        leaves it short) in one snapshot, fit the budget, render, audit."""
        services, plan, now = self.services, self.plan, self.now
        agent_id, config = services.agent_id, services.config
        lexical = self._lexical
        index = None if vector is None else self._index
        request = self._request(None if vector is None else self._query_vector)
        question = AskedQuestion.of(plan.query)
        as_of = plan.as_of is not None
        focus = self._focus

        def validate_and_rank(
            reader: Reader,
        ) -> tuple[
            Candidates,
            list[RecallItem],
            list[ActiveDirective],
            tuple[SectionItems, ...],
            int,
        ]:
            # Ranking is pure Python work of a few milliseconds: it runs here, in the
            # reader thread, rather than on the trio loop.
            candidates = validate_with_refill(
                reader.connection, request, lexical, vector, index
            )
            directives = active_directives(reader.connection, agent_id)
            # Suppressed topics leave before ranking and the audit row (never "accessed").
            matcher = topic_matcher(directives)
            hidden = hidden_events(reader.connection, agent_id, candidates.events)
            candidates, _ = suppress_candidates(candidates, matcher, hidden)
            # The persona and working sections, in the same snapshot. They describe the
            # present: a recall as of another moment shows none.
            sections = (
                ()
                if as_of
                else load_sections(
                    reader.connection, agent_id, now, matcher, plan.recall_filter
                )
            )
            candidates = with_attribute_list(
                candidates, question, request.moment, as_of=as_of
            )
            candidates = with_focus(reader.connection, candidates, focus)
            ranked = rank_candidates(
                candidates,
                request.moment,
                config.fusion_weights(),
                config.rrf_k,
                as_of=as_of,
                limit=plan.k,
                off_focus=config.off_focus_weight,
                sessions_cap=(
                    config.list_session_cap
                    if self._analysis.shape.wants_coverage
                    else None
                ),
            )
            epoch = forget_epoch(reader.connection, agent_id)
            return candidates, ranked[: plan.k], directives, sections, epoch

        candidates, ranked, directives, sections, epoch = await services.database.read(
            validate_and_rank
        )
        degradations = list(degradations)
        if candidates.lexical_exhausted or candidates.vector_exhausted:
            degradations.append(Degradation.CANDIDATE_BUDGET_EXHAUSTED)
        directive_lines = directive_render_lines(directives)
        directive_demand = render_directives(directive_lines, plan.budget_bytes).text
        container, persona_demand, recall_demand = memory_demand(sections, ranked)
        allocation = allocate(
            plan.budget_bytes,
            Demand(
                directive=len(directive_demand.encode("utf-8")),
                persona=persona_demand,
                recall=recall_demand,
                container=container,
            ),
            _shares(config),
        )
        directive_block = render_directives(directive_lines, allocation.directive_bytes)
        memory_block = render_contribution(
            sections,
            ranked,
            allocation.persona_bytes,
            allocation.recall_bytes,
            allocation.container_bytes,
        )
        selected = set(memory_block.included)
        items = tuple(item for item in ranked if item.id in selected)
        manifest = Manifest(
            selected_ids=memory_block.included,
            dropped_ids=memory_block.dropped,
            dropped_directive_ids=directive_block.dropped,
            allocation=allocation,
            degradations=tuple(degradations),
            candidates=candidates.proposed,
            section_ids=memory_block.section_ids,
            dropped_section_ids=memory_block.dropped_section_ids,
        )
        detail: dict[str, object] = {
            "request_id": self.request_id,
            "selected": list(memory_block.included),
        }
        if memory_block.section_ids:
            detail["sections"] = list(memory_block.section_ids)
        if status is not RecallStatus.OK:
            detail["status"] = status.value
        services.audit.add(agent_id, now, "recall", json.dumps(detail))
        recall = Recall(
            status=status,
            request_id=self.request_id,
            items=items,
            memory_block=memory_block.text,
            directive_block=directive_block.text,
            manifest=manifest,
        )
        return recall, epoch
