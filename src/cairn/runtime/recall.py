"""One recall, end to end: query embedding, candidates, ranking, budget and rendering."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

import attrs
import numpy as np
import numpy.typing as npt
import trio

from cairn.domain.scope import RecallContext
from cairn.retrieval.attributes import AskedQuestion, with_attribute_list
from cairn.retrieval.budget import allocate
from cairn.retrieval.candidates import (
    CandidateRequest,
    Candidates,
    ProposedLists,
    lexical_candidates,
    validate_with_refill,
    vector_candidates,
)
from cairn.retrieval.rank import rank_candidates
from cairn.retrieval.render import (
    directive_render_lines,
    render_directives,
    render_memory,
)
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
from cairn.runtime.threads import run_in_thread
from cairn.store.directives import active_directives
from cairn.store.fts import query_terms
from cairn.store.requests import forget_epoch

if TYPE_CHECKING:
    from cairn.clock import DomainClock
    from cairn.config import MemoryConfig
    from cairn.domain.directive import ActiveDirective
    from cairn.domain.ids import AgentId
    from cairn.providers.gateway import QueryEmbeddingGateway
    from cairn.runtime.actors.maintenance import AuditBuffer
    from cairn.runtime.database import Database, Reader
    from cairn.runtime.projection import Projection
    from cairn.vectors.identity import EmbeddingIdentity
    from cairn.vectors.index import ExactVectorIndex

__all__ = ["ComputedRecall", "RecallPlan", "compute_recall"]


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


@attrs.frozen
class ComputedRecall:
    """A recall and the agent's forget epoch of the snapshot it was computed on: a late
    result is stored only if no forget, clear or suppression committed since."""

    recall: Recall
    forget_epoch: int


def _searchable_index(
    projection: Projection,
    query_identity: EmbeddingIdentity | None,
    degradations: list[Degradation],
) -> ExactVectorIndex | None:
    """The projection's index if the query vector fits it; otherwise ``None``, and why."""
    index, index_identity = projection.index, projection.identity
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
    return index


async def compute_recall(
    plan: RecallPlan,
    *,
    request_id: str,
    agent_id: AgentId,
    database: Database,
    gateway: QueryEmbeddingGateway,
    projection: Projection,
    config: MemoryConfig,
    clock: DomainClock,
    audit: AuditBuffer,
    vector_limiter: trio.CapacityLimiter,
) -> ComputedRecall:
    now = clock.now()
    degradations: list[Degradation] = []
    query_vector = plan.query_vector
    query_identity = (
        projection.identity
    )  # a caller's vector is taken to fit the projection
    if query_vector is None:
        embedded = await gateway.embed_query(agent_id, plan.query)
        query_vector = embedded.vector
        query_identity = embedded.identity
        if embedded.degradation is not None:
            degradations.append(embedded.degradation)
    index = _searchable_index(projection, query_identity, degradations)
    question = AskedQuestion.of(plan.query)
    request = CandidateRequest(
        agent_id=agent_id,
        terms=query_terms(plan.query),
        scopes=plan.context.applicable(),
        query_vector=query_vector,
        lexical_limit=config.lexical_candidates,
        vector_limit=config.vector_candidates,
        now=now,
        as_of=plan.as_of,
        want=plan.k,
        refill_cap=config.vector_refill_cap,
    )

    # Lexical search (a reader thread) and the exact vector scan (a CPU-bound numpy call
    # in its own thread) run side by side; then one snapshot validates every candidate.
    lexical_lists = ProposedLists({})
    vector_lists: ProposedLists | None = None

    async def lexical() -> None:
        nonlocal lexical_lists
        lexical_lists = await database.read(
            lambda reader: lexical_candidates(reader.lexical, request)
        )

    async def vector(vector_index: ExactVectorIndex) -> None:
        nonlocal vector_lists
        vector_lists = await run_in_thread(
            lambda: vector_candidates(vector_index, request), limiter=vector_limiter
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(lexical)
        if index is not None and query_vector is not None:
            nursery.start_soon(vector, index)

    def validate_and_rank(
        reader: Reader,
    ) -> tuple[Candidates, list[RecallItem], list[ActiveDirective], int]:
        # Ranking is pure Python work of a few milliseconds: it runs here, in the reader
        # thread, rather than on the trio loop.
        candidates = validate_with_refill(
            reader.connection, request, lexical_lists, vector_lists, index
        )
        directives = active_directives(reader.connection, agent_id)
        # Suppressed topics leave before ranking and the audit row (never "accessed").
        hidden = hidden_events(reader.connection, agent_id, candidates.events)
        candidates, _ = suppress_candidates(
            candidates, topic_matcher(directives), hidden
        )
        candidates = with_attribute_list(
            candidates, question, request.moment, as_of=plan.as_of is not None
        )
        ranked = rank_candidates(
            candidates,
            request.moment,
            config.fusion_weights(),
            config.rrf_k,
            as_of=plan.as_of is not None,
        )
        epoch = forget_epoch(reader.connection, agent_id)
        return candidates, ranked[: plan.k], directives, epoch

    candidates, ranked, directives, epoch = await database.read(validate_and_rank)
    if candidates.lexical_exhausted or candidates.vector_exhausted:
        degradations.append(Degradation.CANDIDATE_BUDGET_EXHAUSTED)
    directive_lines = directive_render_lines(directives)
    directive_demand = render_directives(directive_lines, plan.budget_bytes).text
    allocation = allocate(
        plan.budget_bytes, config.directive_share, len(directive_demand.encode("utf-8"))
    )
    directive_block = render_directives(directive_lines, allocation.directive_bytes)
    memory_block = render_memory(ranked, allocation.memory_bytes)
    selected = set(memory_block.included)
    items = tuple(item for item in ranked if item.id in selected)
    manifest = Manifest(
        selected_ids=memory_block.included,
        dropped_ids=memory_block.dropped,
        dropped_directive_ids=directive_block.dropped,
        allocation=allocation,
        degradations=tuple(degradations),
        candidates=candidates.proposed,
    )
    audit.add(
        agent_id,
        now,
        "recall",
        json.dumps({"request_id": request_id, "selected": list(memory_block.included)}),
    )
    recall = Recall(
        status=RecallStatus.OK,
        request_id=request_id,
        items=items,
        memory_block=memory_block.text,
        directive_block=directive_block.text,
        manifest=manifest,
    )
    return ComputedRecall(recall, epoch)
