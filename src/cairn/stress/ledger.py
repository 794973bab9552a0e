"""What maintenance did in a run, read from the stores after it: so a report shows that
merges, supersessions and conflicts really happened under the load, not only that
nothing broke.

Read from the rows that record each outcome: a merge leaves the merged-away claim's
identity (``claim_merges``), a supersession a ``supersede`` lineage edge (succession at
insert and the challenge pass alike), the challenge pass's key on a remembered claim the
claim's attribute (a user's remember has none of its own), a contradiction a
``conflicts`` row. What a clear or retire removed is not counted: the ledger is what the
memory still holds when the run ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from cairn.runtime.core import runtime_core

if TYPE_CHECKING:
    import apsw

    from cairn.runtime.memory import Memory

__all__ = ["Ledger", "read_ledger"]


@attrs.frozen
class Ledger:
    merges: int = 0
    """Claims merged into a near-duplicate."""
    supersedes: int = 0
    """Values made history by a newer value of their attribute."""
    keyed: int = 0
    """Remembered claims the challenge pass gave an attribute."""
    conflicts: int = 0
    """Contradictions raised for the user."""

    def figures(self) -> dict[str, int]:
        """The report's figures (cairn.stress.report.ModeResult.count)."""
        return {
            "maintenance merges": self.merges,
            "supersessions": self.supersedes,
            "remembered values keyed by the challenge pass": self.keyed,
            "conflicts raised": self.conflicts,
        }


def _count(connection: apsw.Connection, sql: str) -> int:
    row = connection.execute(sql).fetchone()
    return 0 if row is None else int(row[0])


def ledger_of(connection: apsw.Connection) -> Ledger:
    """The ledger of every agent the database holds."""
    return Ledger(
        merges=_count(connection, "SELECT count(*) FROM claim_merges"),
        supersedes=_count(
            connection, "SELECT count(*) FROM derivations WHERE relation = 'supersede'"
        ),
        keyed=_count(
            connection,
            "SELECT count(*) FROM claims WHERE origin = 'user'"
            " AND predicate IS NOT NULL",
        ),
        conflicts=_count(connection, "SELECT count(*) FROM conflicts"),
    )


async def read_ledger(memory: Memory) -> Ledger:
    return await runtime_core(memory).database.read(
        lambda reader: ledger_of(reader.connection)
    )
