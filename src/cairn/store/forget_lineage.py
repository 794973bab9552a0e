"""What a forget takes with it through lineage: the reflections derived from a claim.

A reflection (cairn.maintenance.reflection) may restate what its cited claims said, so it
cannot outlive any of them: forgetting a claim, or a turn that removes a claim, tombstones
and deletes every reflection derived from it, transitively, in the same transaction. Its
other cited claims stay (each still has its own evidence).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cairn.store.tombstones import write_tombstone

if TYPE_CHECKING:
    from collections.abc import Iterable

    import apsw

    from cairn.domain.ids import AgentId

__all__ = ["forget_derived_reflections"]


def forget_derived_reflections(
    connection: apsw.Connection,
    agent_id: AgentId,
    parents: Iterable[int],
    stamp: str,
) -> list[tuple[int, str]]:
    """Tombstone and delete the reflections derived from ``parents`` (transitively);
    returns their ``(rowid, claim_id)``. The caller owns the transaction and deletes the
    parents themselves."""
    frontier = list(dict.fromkeys(parents))
    seen = set(frontier)
    removed: list[tuple[int, str]] = []
    while frontier:
        parent = frontier.pop()
        for rowid, claim_id, provenance, content in connection.execute(
            "SELECT c.rowid, c.claim_id, c.provenance_key, c.content_hash"
            " FROM derivations d JOIN claims c ON c.rowid = d.child_rowid"
            " WHERE d.agent_id = ? AND d.parent_rowid = ? AND d.relation = 'reflection'"
            " AND c.agent_id = d.agent_id",
            (agent_id, parent),
        ).fetchall():
            child = int(str(rowid))
            if child in seen:
                continue
            seen.add(child)
            write_tombstone(connection, agent_id, str(provenance), str(content), stamp)
            removed.append((child, str(claim_id)))
            frontier.append(child)
    for child, _ in removed:
        connection.execute("DELETE FROM claims WHERE rowid = ?", (child,))
        connection.execute(
            "DELETE FROM dirty_work WHERE agent_id = ? AND claim_rowid = ?",
            (agent_id, child),
        )
        connection.execute(
            "DELETE FROM derivations WHERE agent_id = ?"
            " AND (parent_rowid = ? OR child_rowid = ?)",
            (agent_id, child, child),
        )
    return removed
