"""Durable clear jobs: every claim and stored turn of an agent tombstoned and deleted,
crash-safely.

A job row (agent, claim and event rowid cutoffs, time, counts, phase; never plaintext) is
written together with the epoch advance that fences the agent's in-flight work; from then
on the SQLite triggers refuse claim writes for the agent and `load_claims`/`load_events`
hide every claim and turn at or below the cutoffs, so nothing cleared is recalled while the
job runs. The ``claims`` phase deletes the claims, then the turns they were learned from
(evidence tombstones of the IDs keep a replay out), in bounded transactions; phases resume
from the stored phase after a crash. A job written before schema 5 has no event cutoff and
keeps the turns, as it said when it started.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import attrs

from cairn.domain.ids import AgentId
from cairn.store.forget_evidence import delete_evidence
from cairn.store.fts_purge import request_fts_purge
from cairn.store.merge import tombstone_merged
from cairn.store.requests import drop_late_results
from cairn.store.tombstones import write_tombstone

if TYPE_CHECKING:
    import apsw

__all__ = [
    "CLEAR_BATCH",
    "ClearJob",
    "ClearedBatch",
    "PendingClearJob",
    "clear_batch",
    "clear_lineage",
    "finish_clear",
    "pending_clear",
    "pending_clear_agents",
    "pending_clear_jobs",
    "start_clear",
]

# At most this many claims per transaction, so other agents' writes interleave.
CLEAR_BATCH = 256


@attrs.frozen
class ClearJob:
    job_id: int
    agent_id: str
    rowid_cutoff: int
    phase: str
    deleted_claims: int
    purpose: str = "clear"
    # Turns at or below this rowid go too; None for a job from before schema 5.
    event_cutoff: int | None = None
    deleted_events: int = 0


@attrs.frozen
class PendingClearJob:
    """A clear job not done yet, as status and doctor report it."""

    job_id: int
    agent_id: AgentId
    phase: str
    deleted_claims: int
    created_at: str

    def as_json(self) -> dict[str, object]:
        """The fields by name, in order (the shape of ``clear_jobs_pending`` entries)."""
        return attrs.asdict(self)


def pending_clear(connection: apsw.Connection, agent_id: AgentId) -> ClearJob | None:
    row = connection.execute(
        "SELECT job_id, agent_id, rowid_cutoff, phase, deleted_claims, purpose,"
        " event_cutoff, deleted_events"
        " FROM clear_jobs WHERE agent_id = ? AND phase <> 'done' ORDER BY job_id LIMIT 1",
        (agent_id,),
    ).fetchone()
    if row is None:
        return None
    return ClearJob(
        int(row[0]),
        str(row[1]),
        int(row[2]),
        str(row[3]),
        int(row[4]),
        str(row[5]),
        None if row[6] is None else int(row[6]),
        int(row[7]),
    )


def pending_clear_agents(connection: apsw.Connection) -> list[AgentId]:
    """Agents with a pending job, oldest job first (startup resumes them in this order)."""
    return [
        AgentId(str(row[0]))
        for row in connection.execute(
            "SELECT agent_id FROM clear_jobs WHERE phase <> 'done'"
            " GROUP BY agent_id ORDER BY min(job_id)"
        )
    ]


def pending_clear_jobs(connection: apsw.Connection) -> list[PendingClearJob]:
    """Every clear job not done yet, of every agent, oldest first (for status and doctor)."""
    return [
        PendingClearJob(
            job_id=int(job_id),
            agent_id=AgentId(str(agent_id)),
            phase=str(phase),
            deleted_claims=int(deleted),
            created_at=str(created_at),
        )
        for job_id, agent_id, phase, deleted, created_at in connection.execute(
            "SELECT job_id, agent_id, phase, deleted_claims, created_at FROM clear_jobs"
            " WHERE phase <> 'done' ORDER BY job_id"
        )
    ]


def start_clear(
    connection: apsw.Connection,
    agent_id: AgentId,
    now: dt.datetime,
    purpose: str = "clear",
) -> tuple[ClearJob, int]:
    """Persist a job (or return the pending one) and advance the agent's epoch.

    Returns the job and the new epoch. Runs in one transaction with the epoch advance, so
    the fence and the job appear together. A retire joins a pending clear by upgrading its
    purpose (the phases are the same; only the end differs).
    """
    if purpose not in {"clear", "retire"}:
        raise ValueError(f"unknown clear purpose {purpose!r}")
    connection.execute(
        "INSERT INTO agents (agent_id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (agent_id, now.astimezone(dt.UTC).isoformat()),
    )
    if purpose == "retire":
        connection.execute(
            "UPDATE clear_jobs SET purpose = 'retire' WHERE agent_id = ? AND phase <> 'done'",
            (agent_id,),
        )
    existing = pending_clear(connection, agent_id)
    row = connection.execute(
        "SELECT coalesce(max(rowid), 0) FROM claims WHERE agent_id = ?", (agent_id,)
    ).fetchone()
    cutoff = int(row[0]) if row is not None else 0
    events = connection.execute(
        "SELECT coalesce(max(rowid), 0) FROM events WHERE agent_id = ?", (agent_id,)
    ).fetchone()
    event_cutoff = int(events[0]) if events is not None else 0
    if existing is not None and (
        existing.rowid_cutoff < cutoff or (existing.event_cutoff or 0) < event_cutoff
    ):
        # A clear asked for while one runs covers what was written since the first:
        # the pending job reaches up to now and goes through its phases again (each is
        # idempotent; a step that read the job before this sees it changed and stops).
        connection.execute(
            "UPDATE clear_jobs SET rowid_cutoff = max(rowid_cutoff, ?),"
            " event_cutoff = max(coalesce(event_cutoff, 0), ?), phase = 'claims'"
            " WHERE job_id = ?",
            (cutoff, event_cutoff, existing.job_id),
        )
        existing = pending_clear(connection, agent_id)
    if existing is None:
        connection.execute(
            "INSERT INTO clear_jobs (agent_id, rowid_cutoff, event_cutoff, created_at,"
            " phase, purpose) VALUES (?, ?, ?, ?, 'claims', ?)",
            (
                agent_id,
                cutoff,
                event_cutoff,
                now.astimezone(dt.UTC).isoformat(),
                purpose,
            ),
        )
        existing = pending_clear(connection, agent_id)
        assert existing is not None  # noqa: S101 - inserted just above
    connection.execute(
        "UPDATE agents SET config_epoch = config_epoch + 1 WHERE agent_id = ?",
        (agent_id,),
    )
    # A late result computed before the clear may quote what it clears.
    drop_late_results(connection, agent_id)
    epoch = connection.execute(
        "SELECT config_epoch FROM agents WHERE agent_id = ?", (agent_id,)
    ).fetchone()
    return existing, 0 if epoch is None else int(epoch[0])


@attrs.frozen
class ClearedBatch:
    """One batch of a clear: deleted claim and turn rowids (their vectors go in the vector
    phase), and turns re-indexed because their context turn was cleared."""

    claims: tuple[int, ...] = ()
    events: tuple[int, ...] = ()
    reindexed: tuple[int, ...] = ()


def clear_batch(
    connection: apsw.Connection, job: ClearJob, now: dt.datetime
) -> ClearedBatch:
    """Tombstone and delete up to CLEAR_BATCH claims, or once none are left up to
    CLEAR_BATCH turns; advance the phase when neither is left.

    FTS rows and embeddings go with each row through the delete triggers.
    """
    rows = connection.execute(
        "SELECT rowid, provenance_key, content_hash FROM claims"
        " WHERE agent_id = ? AND rowid <= ? LIMIT ?",
        (job.agent_id, job.rowid_cutoff, CLEAR_BATCH),
    ).fetchall()
    stamp = now.astimezone(dt.UTC).isoformat()
    for _rowid, provenance, content in rows:
        write_tombstone(connection, job.agent_id, str(provenance), str(content), stamp)
    rowids = [int(row[0]) for row in rows]  # type: ignore[arg-type]
    tombstone_merged(connection, AgentId(job.agent_id), rowids, stamp)
    connection.executemany("DELETE FROM claims WHERE rowid = ?", [(r,) for r in rowids])
    if rowids:
        connection.execute(
            "UPDATE clear_jobs SET deleted_claims = deleted_claims + ? WHERE job_id = ?",
            (len(rowids), job.job_id),
        )
        return ClearedBatch(claims=tuple(rowids))
    if job.event_cutoff is not None:
        events = [
            int(row[0])
            for row in connection.execute(
                "SELECT rowid FROM events WHERE agent_id = ? AND rowid <= ? LIMIT ?",
                (job.agent_id, job.event_cutoff, CLEAR_BATCH),
            )
        ]
        if events:
            removal = delete_evidence(
                connection, AgentId(job.agent_id), events, now, tombstone_content=False
            )
            connection.execute(
                "UPDATE clear_jobs SET deleted_events = deleted_events + ?"
                " WHERE job_id = ?",
                (len(events), job.job_id),
            )
            return ClearedBatch(
                claims=tuple(rowid for rowid, _ in removal.claims_removed),
                events=removal.event_rowids,
                reindexed=removal.reindexed,
            )
        # Extraction batches left without a turn have nothing to do.
        connection.execute(
            "DELETE FROM event_batches WHERE agent_id = ? AND status <> 'committed'"
            " AND NOT EXISTS (SELECT 1 FROM events e"
            "  WHERE e.batch_id = event_batches.batch_id)",
            (job.agent_id,),
        )
        connection.execute(
            "DELETE FROM hidden_evidence WHERE agent_id = ? AND event_rowid <= ?",
            (job.agent_id, job.event_cutoff),
        )
    _advance(connection, job, "lineage")
    return ClearedBatch()


def clear_lineage(connection: apsw.Connection, job: ClearJob, now: dt.datetime) -> None:
    """Drop derivations and dirty work of the cleared claims, then enter the vector phase.

    Also asks for the lexical index purge that removes the cleared rows' tokens.
    """
    request_fts_purge(connection, "claim_fts", now)
    if job.event_cutoff is not None:
        request_fts_purge(connection, "event_fts", now)
    connection.execute(
        "DELETE FROM derivations WHERE agent_id = ? AND child_rowid <= ?",
        (job.agent_id, job.rowid_cutoff),
    )
    connection.execute(
        "DELETE FROM dirty_work WHERE agent_id = ? AND claim_rowid <= ?",
        (job.agent_id, job.rowid_cutoff),
    )
    _advance(connection, job, "vectors")


def _as_read(connection: apsw.Connection, job: ClearJob) -> bool:
    """Whether the stored job is still the one ``job`` was read as (a later clear may
    have raised its cutoffs and sent it back to its first phase)."""
    row = connection.execute(
        "SELECT 1 FROM clear_jobs WHERE job_id = ? AND phase = ? AND rowid_cutoff = ?"
        " AND event_cutoff IS ?",
        (job.job_id, job.phase, job.rowid_cutoff, job.event_cutoff),
    ).fetchone()
    return row is not None


def _advance(connection: apsw.Connection, job: ClearJob, phase: str) -> None:
    if _as_read(connection, job):
        connection.execute(
            "UPDATE clear_jobs SET phase = ? WHERE job_id = ?", (phase, job.job_id)
        )


def finish_clear(connection: apsw.Connection, job: ClearJob) -> tuple[int, int] | None:
    """The job row goes last; returns how many claims and turns the job deleted, or
    None when the job was extended since it was read (it is not finished then)."""
    if not _as_read(connection, job):
        return None
    row = connection.execute(
        "SELECT deleted_claims, deleted_events FROM clear_jobs WHERE job_id = ?",
        (job.job_id,),
    ).fetchone()
    connection.execute("DELETE FROM clear_jobs WHERE job_id = ?", (job.job_id,))
    return (0, 0) if row is None else (int(row[0]), int(row[1]))
