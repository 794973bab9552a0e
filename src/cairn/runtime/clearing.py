"""Clearing and retiring an agent: one durable job, two ends.

Both persist a job and advance the agent's epoch in one transaction, then run the job's
bounded batches through the agent's coordinator (cairn.runtime.actors.clear_jobs). A clear
deletes what was learned and the stored turns it was learned from, keeps the standing
directives and the tombstones (hashes only), and says so; a retire deletes the whole namespace
and its vector files, and the agent's actors are then cancelled: nothing it owned may run
on. A crash anywhere resumes from the stored phase when the runtime opens.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from cairn.api.reports import ClearReport, KeptCounts, RetireReport
from cairn.errors import RuntimeClosedError
from cairn.store.clear_jobs import pending_clear_agents
from cairn.store.status import count_rows

if TYPE_CHECKING:
    from cairn.runtime.admission import WriteAdmission
    from cairn.runtime.database import Database
    from cairn.runtime.registry import AgentRegistry

__all__ = ["clear", "resume_pending_clears", "retire"]

logger = logging.getLogger("cairn.runtime")

_KEPT_BY_CLEAR = ("events", "directives", "tombstones", "evidence_tombstones")


async def clear(
    admission: WriteAdmission, database: Database, agent_id: str
) -> ClearReport:
    """Clear the agent's memories (claims and the stored turns they were learned from);
    what was and was not removed, in words a user interface can show as they are."""
    async with admission.write(agent_id) as supervisor:
        outcome = await supervisor.run_clear_job("clear")
    agent, deleted = supervisor.agent_id, outcome.claims_deleted
    turns = outcome.events_deleted
    kept = await database.read(
        lambda reader: count_rows(reader.connection, agent, _KEPT_BY_CLEAR)
    )
    later = (
        f"{kept['events']} turns/events that arrived after the clear started, "
        if kept["events"]
        else ""
    )
    return ClearReport(
        agent_id=agent,
        claims_deleted=deleted,
        turns_deleted=turns,
        removed=(
            "claims",
            "evidence",
            "index entries",
            "vectors",
            "lineage",
            "dirty work",
            "late recall results",
        ),
        kept=("directives", "tombstones"),
        kept_counts=KeptCounts(**kept),
        summary=(
            f"memories cleared: {deleted} claims and {turns} stored turns/events deleted"
            f" with their index entries and vectors. Kept: {later}"
            f"{kept['directives']} standing directives (revoke them separately), and"
            f" {kept['tombstones'] + kept['evidence_tombstones']} tombstones (hashes"
            " only, so a replay or an import does not bring the cleared memories back)."
        ),
    )


async def retire(
    admission: WriteAdmission, registry: AgentRegistry, agent_id: str
) -> RetireReport:
    """Delete the agent's whole namespace; a new agent with the same ID starts empty."""
    async with admission.write(agent_id) as supervisor:
        outcome = await supervisor.run_clear_job("retire")
    await registry.discard(supervisor, "agent retired")
    return RetireReport.of(supervisor.agent_id, dict(outcome.rows_deleted or {}))


async def resume_pending_clears(database: Database, registry: AgentRegistry) -> None:
    """Finish clear and retire jobs a crash left pending, one agent after another.

    Claims under a pending job are invisible from the start (the read fence does not wait
    for this); running the jobs in sequence keeps several interrupted namespaces from
    competing for the writer at once.
    """
    for agent in await database.read(
        lambda reader: pending_clear_agents(reader.connection)
    ):
        try:
            running = await registry.get(agent)
            await running.wait_cleared()
        except RuntimeClosedError:
            return
        except Exception:
            # That agent failed (status says why); its job resumes at its next start.
            # Never the end of the runtime or of the other agents' jobs.
            logger.exception("resuming the clear job of agent %s failed", agent)
            continue
        if running.retired:
            # (Otherwise wait_cleared already woke ingestion and re-embedded what a
            # cleared turn's context touched.)
            await registry.discard(running, "agent retired")
