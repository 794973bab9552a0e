"""Runtime configuration: frozen attrs, durations as ``*_s`` floats, sizes in bytes."""

from __future__ import annotations

import zoneinfo
from typing import Any

import attrs

from cairn.errors import InvalidInputError

__all__ = ["MemoryConfig"]


def _positive_or_none(
    instance: object, attribute: attrs.Attribute[Any], value: float | None
) -> None:
    if value is not None:
        _positive(instance, attribute, value)


def _positive(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if value <= 0:
        raise ValueError(f"{attribute.name} must be positive")


def _share(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not 0 <= value <= 1:
        raise InvalidInputError(f"{attribute.name} must be a share from 0 to 1")


def _time_zone(_: object, attribute: attrs.Attribute[Any], value: str) -> None:
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise InvalidInputError(
            f"{attribute.name} must be an IANA time zone name such as UTC or"
            f" Europe/Lisbon, not {value!r}"
        ) from None


@attrs.frozen
class MemoryConfig:
    """Knobs of one memory runtime. Defaults serve the embedded, offline case."""

    # Recall: how long a caller waits for the complete result, and the byte budget of the
    # whole contribution (memory block + directive block). A recall that misses the wait
    # answers at its end with what is ready (`partial`: the lexical lists ranked without
    # the query vector, a ranking started when `recall_partial_share` of the wait is left,
    # in case the complete result misses), or `pending` if nothing is. Measured in
    # design/recall.md ("First recalls").
    recall_wait_s: float = attrs.field(default=0.5, validator=_positive)
    recall_partial_share: float = attrs.field(
        default=0.5, validator=[attrs.validators.gt(0), attrs.validators.lt(1)]
    )
    budget_bytes: int = attrs.field(default=4096, validator=_positive)
    # The allocator's shares of the budget (cairn.retrieval.budget, design/recall.md):
    # the directive block's ceiling; the persona and working sections' floor and
    # ceiling; query recall's reservation (never lent to the sections); and how much of
    # the budget one part may borrow of the others' unused shares.
    directive_share: float = attrs.field(default=0.25, validator=_share)
    persona_floor_share: float = attrs.field(default=0.10, validator=_share)
    persona_ceiling_share: float = attrs.field(default=0.35, validator=_share)
    recall_reserve_share: float = attrs.field(default=0.40, validator=_share)
    borrow_share: float = attrs.field(default=0.35, validator=_share)
    recall_k: int = attrs.field(default=10, validator=_positive)
    # Candidate pools per source before fusion.
    lexical_candidates: int = attrs.field(default=60, validator=_positive)
    vector_candidates: int = attrs.field(default=60, validator=_positive)
    # When filtering (scope, lifecycle, forgetting) leaves the vector list short of k, the
    # search refills geometrically up to this many hits, then says
    # `candidate_budget_exhausted` (architecture §4).
    vector_refill_cap: int = attrs.field(default=800, validator=_positive)
    # Weights of the fused lists (weighted reciprocal rank fusion); 0 turns a list off.
    # Defaults measured on LoCoMo dev, see design/recall.md.
    weight_claim_lexical: float = 0.5
    weight_event_lexical: float = 2.0
    weight_claim_vector: float = 0.5
    weight_event_vector: float = 1.0
    # Claims holding a value of the attribute the question asks for ("where does she
    # live" -> lives_in), newest first: the answer to a changed fact (design/recall.md).
    weight_claim_attribute: float = 1.0
    # The query analysis's lists (cairn.retrieval.entity_lists): the question's words among
    # the turns of the entities it names, the vector list's turns of those entities, the
    # turns speaking of them, the claims of their relations (two hops), the current-state
    # view's value of an attribute the question asks for, the tasks at the status a
    # question asks about ("what is blocked?"), and
    # the question's words among the turns of a time window it names.
    weight_entity_lexical: float = 2.0
    weight_entity_vector: float = 1.0
    weight_entity_mention: float = 0.5
    weight_entity_graph: float = 0.5
    weight_current_state: float = 1.0
    weight_task_state: float = 2.0
    # With a text provider configured: how long a recall waits for the model's query
    # contract (cairn.runtime.query_compiler); 0 keeps the analysis offline.
    query_compile_s: float = attrs.field(
        default=0.0, validator=attrs.validators.ge(0.0)
    )
    weight_time_window: float = 1.0
    # A question naming an entity the agent knows: a turn neither said by it nor speaking
    # of it ranks at this share of its score ("Thanks, Melanie!" says nothing of her).
    off_focus_weight: float = 0.6
    # A list or count question ("what activities…", "how many…") gathers across
    # sessions: at most this many items of one session before every other session's
    # (None: no such cap).
    list_session_cap: int | None = attrs.field(
        default=None, validator=_positive_or_none
    )
    rrf_k: int = attrs.field(default=10, validator=_positive)
    # Ingestion: events are cut into segments of at most `event_max_bytes` UTF-8 bytes; a
    # batch holds up to `extraction_batch` events (and `extraction_batch_bytes` of text,
    # the prompt's budget) and waits at most `extraction_linger_s`
    # for more (urgent events start it at once); its lease lasts `extraction_lease_s`; a
    # failing batch retries with exponential backoff and is dead after
    # `extraction_max_attempts`. A text provider call is bounded by
    # `extraction_timeout_s` and `extraction_max_tokens`.
    event_max_bytes: int = attrs.field(default=2400, validator=_positive)
    extraction_batch: int = attrs.field(default=20, validator=_positive)
    extraction_batch_bytes: int = attrs.field(default=12_000, validator=_positive)
    extraction_linger_s: float = attrs.field(default=30.0, validator=_positive)
    # The linger is there to share one text-model call between turns; the offline rules
    # gain nothing by waiting, so without a text provider a batch waits at most this long
    # (a host's next prompt then finds the claims of the turn just captured).
    rules_linger_s: float = attrs.field(default=0.2, validator=_positive)
    extraction_lease_s: float = attrs.field(default=120.0, validator=_positive)
    extraction_max_attempts: int = attrs.field(default=5, validator=_positive)
    extraction_backoff_s: float = attrs.field(default=2.0, validator=_positive)
    extraction_backoff_cap_s: float = attrs.field(default=300.0, validator=_positive)
    extraction_timeout_s: float = attrs.field(default=60.0, validator=_positive)
    extraction_max_tokens: int = attrs.field(default=2048, validator=_positive)
    # Embedding batches.
    embed_batch: int = attrs.field(default=32, validator=_positive)
    embed_linger_s: float = attrs.field(default=0.02, validator=_positive)
    # One embedding call holds a background thread for at most this much text (at least
    # one text); other agents take their turns between calls (cairn.runtime.fairness).
    embed_slice_bytes: int = attrs.field(default=8_000, validator=_positive)
    # Query embedding: an adaptive deadline (smoothed latency x headroom) clamped to
    # [floor, ceiling], and a circuit breaker per (agent, provider, model).
    query_deadline_floor_s: float = attrs.field(default=0.8, validator=_positive)
    query_deadline_ceiling_s: float = attrs.field(default=2.0, validator=_positive)
    # The query embedder warms in the background at open (model load, one short text); a
    # query meanwhile waits at most this long for it, outside the deadline and breaker.
    query_warmup_wait_s: float = attrs.field(default=10.0, validator=_positive)
    breaker_failures: int = attrs.field(default=3, validator=_positive)
    breaker_window_s: float = attrs.field(default=30.0, validator=_positive)
    breaker_cooldown_s: float = attrs.field(default=30.0, validator=_positive)
    # Bounded channels between actors: a full channel is backpressure.
    channel_size: int = attrs.field(default=64, validator=_positive)
    # Maintenance cadence (trio clock) and the stop/drain bound.
    maintenance_interval_s: float = attrs.field(default=2.0, validator=_positive)
    drain_timeout_s: float = attrs.field(default=30.0, validator=_positive)
    # Dirty work (cairn.runtime.actors.maintenance): a batch is at most
    # `maintenance_seed_batch` seeds, each with at most `maintenance_vector_neighbours`
    # and `maintenance_lexical_neighbours` same-scope neighbours, and at most
    # `maintenance_neighbour_budget` neighbours in all. A batch that filled up is followed
    # by the next after `maintenance_cooldown_s` instead of a whole interval. A batch runs
    # under `maintenance_pass_timeout_s` (its provider questions too, each also under
    # `maintenance_question_timeout_s` and `maintenance_max_tokens`). A seed that failed
    # for now waits `maintenance_retry_backoff_s` * 2^(attempts - 1) (capped) and is
    # settled as terminal after `maintenance_max_attempts`.
    maintenance_seed_batch: int = attrs.field(default=64, validator=_positive)
    # A `maintain` call starts no new batch once it has run `maintain_budget_s` (the
    # batch under way finishes): one call answers in bounded time however much is dirty,
    # and its report's `remaining` says to call again.
    maintain_budget_s: float = attrs.field(default=10.0, validator=_positive)
    maintenance_vector_neighbours: int = attrs.field(default=8, validator=_positive)
    maintenance_lexical_neighbours: int = attrs.field(default=8, validator=_positive)
    maintenance_neighbour_budget: int = attrs.field(default=256, validator=_positive)
    maintenance_cooldown_s: float = attrs.field(default=0.25, validator=_positive)
    maintenance_pass_timeout_s: float = attrs.field(default=60.0, validator=_positive)
    maintenance_question_timeout_s: float = attrs.field(
        default=30.0, validator=_positive
    )
    maintenance_max_tokens: int = attrs.field(default=1024, validator=_positive)
    maintenance_max_attempts: int = attrs.field(default=5, validator=_positive)
    maintenance_retry_backoff_s: float = attrs.field(default=30.0, validator=_positive)
    maintenance_retry_backoff_cap_s: float = attrs.field(
        default=3600.0, validator=_positive
    )
    # Retention, on the domain clock: late recall results are kept for
    # `recall_result_retention_s` and at most `recall_results_per_agent` of them per agent
    # (the cap holds at every insert); audit rows for `audit_retention_s` (30 days) and at
    # most `audit_rows_per_agent`. A maintenance pass deletes at most `retention_batch`
    # rows of each table.
    recall_result_retention_s: float = attrs.field(default=3600.0, validator=_positive)
    recall_results_per_agent: int = attrs.field(default=1000, validator=_positive)
    audit_retention_s: float = attrs.field(default=30 * 86400.0, validator=_positive)
    audit_rows_per_agent: int = attrs.field(default=100_000, validator=_positive)
    retention_batch: int = attrs.field(default=2000, validator=_positive)
    # The ID-only record of each recall (what a turn was shown) is kept longer than the
    # answers' text: `recall_record_retention_s` (30 days), at most
    # `recall_records_per_agent`; attention notices until untouched for
    # `attention_retention_s` (7 days), consumed or not.
    recall_record_retention_s: float = attrs.field(
        default=30 * 86400.0, validator=_positive
    )
    recall_records_per_agent: int = attrs.field(default=100_000, validator=_positive)
    attention_retention_s: float = attrs.field(default=7 * 86400.0, validator=_positive)
    # Agents: an agent with no call and nothing owed for `agent_idle_timeout_s` is stopped
    # (it starts again on its next call); an agent whose actors failed restarts on its
    # next call after `agent_restart_backoff_s` * 2^(failures - 1) (capped at
    # `agent_restart_backoff_cap_s`), and after `agent_max_failures` failures within
    # `agent_failure_window_s` calls get AgentUnavailableError until the window passes.
    agent_idle_timeout_s: float = attrs.field(default=300.0, validator=_positive)
    agent_restart_backoff_s: float = attrs.field(default=0.5, validator=_positive)
    agent_restart_backoff_cap_s: float = attrs.field(default=10.0, validator=_positive)
    agent_max_failures: int = attrs.field(default=5, validator=_positive)
    agent_failure_window_s: float = attrs.field(default=300.0, validator=_positive)
    # One message becomes at most this many `event_max_bytes` segments (about 2.4 MB at
    # the defaults); a longer one is refused with MessageTooLargeError.
    max_segments_per_message: int = attrs.field(default=1000, validator=_positive)
    # Storage.
    # `synchronous=FULL` for every commit (default NORMAL: an acknowledged ingest may be
    # lost on power loss, never on a crash). Forget, clear, retire, imports and the
    # scrubber's transactions commit FULL whatever this says (design/architecture.md,
    # "Storage"; bench/durability.py).
    synchronous_full: bool = False
    # The name of a registered SQLite VFS every connection opens through (None: the
    # default one): fault injection (cairn.stress.vfs) and special storage.
    vfs: str | None = None
    reader_connections: int = attrs.field(default=2, validator=_positive)
    # The zone a turn's local time words are read in when it carries no offset of its own
    # ("tomorrow at 9", "下周三") by extraction and by recall's query analysis. Stored
    # times stay UTC; the domain clock is UTC whatever this says.
    timezone: str = attrs.field(default="UTC", validator=_time_zone)

    def __attrs_post_init__(self) -> None:
        if self.persona_floor_share > self.persona_ceiling_share:
            raise InvalidInputError(
                "persona_floor_share must not be above persona_ceiling_share"
            )
        if (
            self.directive_share + self.persona_floor_share + self.recall_reserve_share
            > 1
        ):
            raise InvalidInputError(
                "directive_share, persona_floor_share and recall_reserve_share"
                " must add up to at most 1"
            )
        if self.persona_ceiling_share + self.recall_reserve_share > 1:
            raise InvalidInputError(
                "persona_ceiling_share and recall_reserve_share must add up to at most 1"
            )

    def fusion_weights(self) -> dict[str, float]:
        return {
            "claim_fts": self.weight_claim_lexical,
            "event_fts": self.weight_event_lexical,
            "claim_vector": self.weight_claim_vector,
            "event_vector": self.weight_event_vector,
            "claim_attribute": self.weight_claim_attribute,
            "entity_fts": self.weight_entity_lexical,
            "entity_vector": self.weight_entity_vector,
            "entity_mention": self.weight_entity_mention,
            "entity_graph": self.weight_entity_graph,
            "current_state": self.weight_current_state,
            "task_state": self.weight_task_state,
            "time_window": self.weight_time_window,
        }
