"""``status()``: what a memory holds and how each agent's runtime is doing, as records."""

from __future__ import annotations

import enum

import attrs

from cairn.api.reports import EmbedderIdentity

__all__ = ["AgentState", "AgentStatistics", "AgentStatus", "StatusReport"]


class AgentState(enum.StrEnum):
    """Whether an agent's actors run, and whether the last run ended badly."""

    # Not running and not failed: never started in this process, or stopped cleanly.
    STOPPED = "stopped"
    RUNNING = "running"
    # The last run ended by an unexpected error; the next call restarts it (with backoff).
    FAILED = "failed"
    # Too many failures within the window: calls are refused until the window passes.
    UNAVAILABLE = "unavailable"


@attrs.frozen
class AgentStatistics:
    """Counters of one running agent's supervisor and actors, since it started."""

    # Units of accepted work (turns, embed jobs, clears) not yet settled.
    outstanding_work: int
    extraction_batches: int
    claims_extracted: int
    extraction_failures: int
    extraction_dead_letters: int
    extraction_rejected_candidates: int
    vectors_embedded: int
    embedding_failures: int
    # Results refused at commit because their epoch had passed (fenced work).
    stale_results_dropped: int
    writes_committed: int
    writes_failed: int
    # Results the write coordinator refused as stale (each backs off, never hot).
    writes_stale: int
    vectors_live: int
    # The projection is being rebuilt for a new embedding identity.
    reindexing: bool
    embedding_restarts: int
    maintenance_passes: int
    # Maintenance steps that failed (an I/O error): each retried with backoff.
    maintenance_failed_steps: int
    pending_late_recalls: int
    clear_jobs_completed: int
    audit_rows_dropped: int
    # Dirty work: batches worked, seeds settled, rotated behind other work for a retry,
    # and settled as terminal (a pass cannot work them, or out of attempts).
    maintenance_batches: int = 0
    maintenance_seeds_settled: int = 0
    maintenance_seeds_retried: int = 0
    maintenance_seeds_terminal: int = 0


@attrs.frozen
class AgentStatus:
    """One agent: stored counts for every agent of the data directory, and for agents
    this process runs their runtime state (``None`` fields otherwise).

    ``epoch`` is the running fence's epoch; ``query_breaker`` the query embedder's
    breaker (``closed``, ``open`` or ``half_open``); ``vector_identity`` the identity of
    the projection serving recall (``None`` while none is loaded).
    """

    agent_id: str
    state: AgentState
    events: int = 0
    claims: int = 0
    directives: int = 0
    embeddings: int = 0
    # Not counting dead letters.
    events_pending_extraction: int = 0
    extraction_batches_open: int = 0
    extraction_dead_letters: int = 0
    events_in_dead_letters: int = 0
    # Stored turns (and segments) classified as noise: kept, but not recalled by default.
    events_noise: int = 0
    # Claims maintenance still owes a look (cairn.store.dirty).
    dirty_seeds: int = 0
    epoch: int | None = None
    query_breaker: str | None = None
    vector_identity: EmbedderIdentity | None = None
    statistics: AgentStatistics | None = None
    # The last failure to save the projection's file (it still serves from memory).
    projection_save_error: str | None = None
    # Why the last run failed: the error's type name and a short reason.
    failure: str | None = None
    restarts: int = 0


@attrs.frozen
class StatusReport:
    """The data directory, the embedder serving, and every agent (sorted by ID)."""

    data_dir: str
    embedder: EmbedderIdentity
    agents: tuple[AgentStatus, ...]
    # Whether the query embedder has warmed up (loaded and embedded one text) since open
    # or the last switch: `cold`, `warming`, `warm` or `failed`.
    embedder_warm: str = "cold"

    @property
    def agent_ids(self) -> tuple[str, ...]:
        return tuple(agent.agent_id for agent in self.agents)

    def agent(self, agent_id: str) -> AgentStatus:
        """The status of ``agent_id``; KeyError if the data directory has no such agent."""
        for agent in self.agents:
            if agent.agent_id == agent_id:
                return agent
        raise KeyError(agent_id)
