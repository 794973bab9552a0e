"""The dirty-work queue: claims changed since maintenance last looked at them.

Every committed mutation of a claim (insert, new sources, lost sources, supersede or a
succession re-order, archive and unarchive, a re-added claim, an import) bumps the claim's
dirty *generation* in the same transaction (:func:`mark_dirty`). A deleted claim's row goes
with it, in the deleting transaction.

The queue is ordered: a new seed goes behind every seed of its agent already waiting
(``queued``, migration 0010). Maintenance reads a bounded batch from the front
(:func:`load_seeds`), works it, and then per seed either settles it (:func:`settle_seeds`:
done, stale or terminal) or rotates it (:func:`retry_seeds`: a temporary failure). Both act
only if the generation is still the one read: a claim changed meanwhile stays dirty, with
its new generation, and is looked at again. A rotated seed goes to the back of the queue,
behind work not yet tried, with its attempts counted and a not-before time (domain clock);
after ``max_attempts`` it is settled as terminal instead of being tried forever.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    "DirtySeed",
    "count_dirty",
    "load_seeds",
    "mark_dirty",
    "retry_seeds",
    "settle_seeds",
]


@attrs.frozen
class DirtySeed:
    """One claim maintenance owes a look, as of ``generation``."""

    claim_rowid: int
    generation: int
    attempts: int = 0
    """Retries of this generation so far (0: never tried, or changed since)."""


def _stamp(moment: dt.datetime) -> str:
    # One fixed width, so stored times compare as text.
    return moment.astimezone(dt.UTC).isoformat(timespec="microseconds")


def mark_dirty(
    connection: apsw.Connection, agent_id: AgentId, claim_rowids: Iterable[int]
) -> None:
    """Bump the dirty generation of each claim (the caller owns the transaction).

    A claim not yet queued goes to the back of its agent's queue; one already queued keeps
    its place, and its new generation starts with no attempts and no backoff.
    """
    connection.executemany(
        "INSERT INTO dirty_work (agent_id, claim_rowid, generation, queued)"
        " VALUES (?1, ?2, 1, (SELECT coalesce(max(queued), 0) + 1 FROM dirty_work"
        "  WHERE agent_id = ?1))"
        " ON CONFLICT DO UPDATE SET generation = generation + 1, attempts = 0,"
        " not_before = NULL, last_error = NULL",
        [(agent_id, rowid) for rowid in dict.fromkeys(claim_rowids)],
    )


def load_seeds(
    connection: apsw.Connection,
    agent_id: AgentId,
    limit: int,
    *,
    now: dt.datetime | None = None,
) -> list[DirtySeed]:
    """At most ``limit`` dirty claims of the agent from the front of its queue.

    With ``now``, seeds still backing off are left out. Claims under a pending clear are
    never handed out: they are about to go, and the clear fence refuses writes to them.
    """
    horizon = None if now is None else _stamp(now)
    return [
        DirtySeed(int(rowid), int(generation), int(attempts))
        for rowid, generation, attempts in connection.execute(
            "SELECT d.claim_rowid, d.generation, d.attempts FROM dirty_work d"
            " WHERE d.agent_id = ?1 AND (?2 IS NULL OR d.not_before IS NULL"
            "  OR d.not_before <= ?2)"
            " AND NOT EXISTS (SELECT 1 FROM clear_jobs j WHERE j.agent_id = ?1"
            "  AND j.phase <> 'done' AND d.claim_rowid <= j.rowid_cutoff)"
            " ORDER BY d.queued, d.claim_rowid LIMIT ?3",
            (agent_id, horizon, limit),
        )
    ]


def settle_seeds(
    connection: apsw.Connection, agent_id: AgentId, seeds: Sequence[DirtySeed]
) -> int:
    """Delete the seeds whose generation is unchanged; returns how many settled."""
    settled = 0
    for seed in seeds:
        connection.execute(
            "DELETE FROM dirty_work WHERE agent_id = ? AND claim_rowid = ?"
            " AND generation = ?",
            (agent_id, seed.claim_rowid, seed.generation),
        )
        settled += connection.changes()
    return settled


def retry_seeds(
    connection: apsw.Connection,
    agent_id: AgentId,
    retries: Sequence[tuple[DirtySeed, str, dt.datetime]],
    *,
    max_attempts: int,
) -> tuple[int, list[DirtySeed]]:
    """Rotate seeds that failed for now, each ``(seed, error class name, not before)``,
    to the back of the queue, not to be handed out again before that time.

    Only a seed still at the generation read is touched. One that has now failed
    ``max_attempts`` times is settled instead. Returns how many were rotated and the
    seeds settled as terminal (the caller logs them).
    """
    rotated = 0
    terminal: list[DirtySeed] = []
    for seed, error, not_before in retries:
        if seed.attempts + 1 >= max_attempts:
            connection.execute(
                "DELETE FROM dirty_work WHERE agent_id = ? AND claim_rowid = ?"
                " AND generation = ?",
                (agent_id, seed.claim_rowid, seed.generation),
            )
            if connection.changes():
                terminal.append(seed)
            continue
        connection.execute(
            "UPDATE dirty_work SET attempts = attempts + 1, not_before = ?3,"
            " last_error = ?4, queued = (SELECT max(queued) + 1 FROM dirty_work"
            "  WHERE agent_id = ?1)"
            " WHERE agent_id = ?1 AND claim_rowid = ?2 AND generation = ?5",
            (
                agent_id,
                seed.claim_rowid,
                _stamp(not_before),
                error[:100],
                seed.generation,
            ),
        )
        rotated += connection.changes()
    return rotated, terminal


def count_dirty(connection: apsw.Connection, agent_id: AgentId) -> int:
    """How many claims of the agent maintenance still owes a look."""
    row = connection.execute(
        "SELECT count(*) FROM dirty_work WHERE agent_id = ?", (agent_id,)
    ).fetchone()
    return 0 if row is None else int(row[0])
