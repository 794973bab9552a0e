"""The dirty-work queue: claims changed since maintenance last looked at them.

Every committed mutation of a claim (insert, new sources, supersede, archive, edit, merge)
bumps the claim's dirty *generation* in the same transaction (:func:`mark_dirty`).
Maintenance reads a bounded batch of seeds with their generations, works them, and
settles a seed only if its generation is still the one it read (:func:`settle_seeds`): a
claim changed meanwhile stays dirty and is looked at again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import apsw

    from cairn.domain.ids import AgentId

__all__ = ["DirtySeed", "load_seeds", "mark_dirty", "settle_seeds"]


@attrs.frozen
class DirtySeed:
    """One claim maintenance owes a look, as of ``generation``."""

    claim_rowid: int
    generation: int


def mark_dirty(
    connection: apsw.Connection, agent_id: AgentId, claim_rowids: Iterable[int]
) -> None:
    """Bump the dirty generation of each claim (the caller owns the transaction)."""
    connection.executemany(
        "INSERT INTO dirty_work (agent_id, claim_rowid, generation) VALUES (?, ?, 1)"
        " ON CONFLICT DO UPDATE SET generation = generation + 1",
        [(agent_id, rowid) for rowid in claim_rowids],
    )


def load_seeds(
    connection: apsw.Connection, agent_id: AgentId, limit: int
) -> list[DirtySeed]:
    """At most ``limit`` dirty claims of the agent, oldest claim first."""
    return [
        DirtySeed(int(rowid), int(generation))
        for rowid, generation in connection.execute(
            "SELECT claim_rowid, generation FROM dirty_work WHERE agent_id = ?"
            " ORDER BY claim_rowid LIMIT ?",
            (agent_id, limit),
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
