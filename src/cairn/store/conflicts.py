"""Conflicts: contradictions maintenance could not decide, kept for the user to resolve.

A row names two claims of one scope (``claim_a`` the older rowid), a reason code and, once
resolved, the decision; never text (the texts are the claims' own, read when listed). A
claim's rows go with it: both columns reference ``claims`` ``ON DELETE CASCADE``, so the
forget, clear and retire transactions that delete a claim delete its conflicts too.

Resolving keeps one claim (the other is superseded with a ``supersede`` derivation to the
kept one, and succession leaves it out of its attribute's chain from then on,
:func:`resolved_losers_sql`) or keeps both; either way both claims get a new dirty
generation, so maintenance looks at them again.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import attrs

from cairn.domain.ids import opaque_id
from cairn.domain.outcomes import Conflict
from cairn.errors import InvalidTransitionError, UnknownClaimError, UnknownConflictError
from cairn.store.dirty import mark_dirty
from cairn.store.succession import order_succession

if TYPE_CHECKING:
    from collections.abc import Iterable

    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    "KEEP_BOTH",
    "ConflictPair",
    "conflicted_pairs",
    "list_conflicts",
    "open_conflict",
    "record_decision",
    "reinstate_losers",
    "resolve_conflict",
    "superseded_by",
]

KEEP_BOTH = "both"
"""``keep`` value of a resolution that keeps both claims."""


@attrs.frozen
class ConflictPair:
    """The claim rowids of one conflict, older first."""

    first: int
    second: int

    @classmethod
    def of(cls, one: int, other: int) -> ConflictPair:
        return cls(min(one, other), max(one, other))


def _stamp(now: dt.datetime) -> str:
    return now.astimezone(dt.UTC).isoformat()


def conflicted_pairs(
    connection: apsw.Connection, agent_id: AgentId, rowids: set[int]
) -> set[ConflictPair]:
    """Pairs touching ``rowids`` that already have a row (open or resolved): the engine
    never raises a pair twice, nor overrides what the user decided."""
    found: set[ConflictPair] = set()
    for rowid in rowids:
        for first, second in connection.execute(
            "SELECT claim_a, claim_b FROM conflicts WHERE agent_id = ?"
            " AND (claim_a = ? OR claim_b = ?)",
            (agent_id, rowid, rowid),
        ):
            found.add(ConflictPair(int(first), int(second)))
    return found


def _scope_of(
    connection: apsw.Connection, agent_id: AgentId, rowid: int
) -> tuple[str, str | None] | None:
    row = connection.execute(
        "SELECT scope, scope_key FROM claims WHERE rowid = ? AND agent_id = ?",
        (rowid, agent_id),
    ).fetchone()
    return (
        None if row is None else (str(row[0]), None if row[1] is None else str(row[1]))
    )


def open_conflict(
    connection: apsw.Connection,
    agent_id: AgentId,
    pair: ConflictPair,
    reason: str,
    now: dt.datetime,
) -> bool:
    """Record an undecided pair (both claims of the agent and of one scope); ``False``
    when it was already recorded or the claims are not a pair of one scope."""
    first, second = (
        _scope_of(connection, agent_id, pair.first),
        _scope_of(connection, agent_id, pair.second),
    )
    if first is None or first != second:
        return False
    connection.execute(
        "INSERT OR IGNORE INTO conflicts (conflict_id, agent_id, claim_a, claim_b, scope,"
        " scope_key, reason, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'open', ?)",
        (
            opaque_id(),
            agent_id,
            pair.first,
            pair.second,
            first[0],
            first[1],
            reason,
            _stamp(now),
        ),
    )
    return connection.changes() > 0


def record_decision(
    connection: apsw.Connection,
    agent_id: AgentId,
    kept: int,
    superseded: int,
    reason: str,
    now: dt.datetime,
) -> None:
    """Record a pair the engine decided against succession's order (the text provider
    ordered it), resolved at once: the loser stays out of its chain like a user's."""
    pair = ConflictPair.of(kept, superseded)
    scope = _scope_of(connection, agent_id, kept)
    if scope is None:
        return
    stamp = _stamp(now)
    connection.execute(
        "INSERT OR IGNORE INTO conflicts (conflict_id, agent_id, claim_a, claim_b, scope,"
        " scope_key, reason, status, resolution, kept_rowid, superseded_rowid,"
        " created_at, resolved_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, 'resolved', 'keep_one', ?, ?, ?, ?)",
        (
            opaque_id(),
            agent_id,
            pair.first,
            pair.second,
            scope[0],
            scope[1],
            reason,
            kept,
            superseded,
            stamp,
            stamp,
        ),
    )


_LIST = (
    "SELECT k.conflict_id, a.claim_id, b.claim_id, a.text, b.text, k.reason, k.status,"
    " k.scope, k.scope_key, k.created_at, k.resolution, kept.claim_id, k.resolved_at"
    " FROM conflicts k JOIN claims a ON a.rowid = k.claim_a"
    " JOIN claims b ON b.rowid = k.claim_b"
    " LEFT JOIN claims kept ON kept.rowid = k.kept_rowid"
    " WHERE k.agent_id = ? AND a.agent_id = k.agent_id AND b.agent_id = k.agent_id"
    # A pending clear hides every claim it covers until it is done.
    " AND NOT EXISTS (SELECT 1 FROM clear_jobs j WHERE j.agent_id = k.agent_id"
    "  AND j.phase <> 'done' AND k.claim_a <= j.rowid_cutoff)"
)


def _conflict(row: tuple[object, ...]) -> Conflict:
    return Conflict(
        conflict_id=str(row[0]),
        claim_ids=(str(row[1]), str(row[2])),
        texts=(str(row[3]), str(row[4])),
        reason=str(row[5]),
        status=str(row[6]),
        scope=str(row[7]),
        scope_key=None if row[8] is None else str(row[8]),
        created_at=str(row[9]),
        resolution=None if row[10] is None else str(row[10]),
        kept=None if row[11] is None else str(row[11]),
        resolved_at=None if row[12] is None else str(row[12]),
    )


def list_conflicts(
    connection: apsw.Connection,
    agent_id: AgentId,
    *,
    include_resolved: bool = False,
    limit: int = 100,
) -> list[Conflict]:
    """The agent's open conflicts (with ``include_resolved``, the decided ones too),
    oldest first."""
    sql = _LIST + ("" if include_resolved else " AND k.status = 'open'")
    return [
        _conflict(tuple(row))
        for row in connection.execute(
            sql + " ORDER BY k.created_at, k.conflict_id LIMIT ?", (agent_id, limit)
        )
    ]


def _get(connection: apsw.Connection, agent_id: AgentId, conflict_id: str) -> Conflict:
    row = connection.execute(
        _LIST + " AND k.conflict_id = ?", (agent_id, conflict_id)
    ).fetchone()
    if row is None:
        raise UnknownConflictError(
            f"agent {agent_id!r} has no conflict {conflict_id!r}"
        )
    return _conflict(tuple(row))


def _rowid(connection: apsw.Connection, agent_id: AgentId, claim_id: str) -> int:
    row = connection.execute(
        "SELECT rowid FROM claims WHERE agent_id = ? AND claim_id = ?",
        (agent_id, claim_id),
    ).fetchone()
    if row is None:
        raise UnknownClaimError(f"agent {agent_id!r} has no claim {claim_id!r}")
    return int(row[0])


def resolve_conflict(
    connection: apsw.Connection,
    agent_id: AgentId,
    conflict_id: str,
    keep: str,
    now: dt.datetime,
) -> Conflict:
    """The user's decision on an open conflict; the caller owns the transaction.

    ``keep`` is the claim ID to keep (the other is superseded, with lineage) or
    :data:`KEEP_BOTH`. An unknown conflict is :class:`UnknownConflictError`, a claim that
    is not one of the pair :class:`UnknownClaimError`, a conflict already resolved
    :class:`InvalidTransitionError`; nothing is written then.
    """
    conflict = _get(connection, agent_id, conflict_id)
    if conflict.status != "open":
        raise InvalidTransitionError(
            f"conflict {conflict_id} is already resolved ({conflict.resolution})"
        )
    if keep != KEEP_BOTH and keep not in conflict.claim_ids:
        raise UnknownClaimError(
            f"claim {keep!r} is not one of conflict {conflict_id}'s claims"
            f" ({', '.join(conflict.claim_ids)}); keep one of them or {KEEP_BOTH!r}"
        )
    first, second = (
        _rowid(connection, agent_id, claim) for claim in conflict.claim_ids
    )
    stamp = _stamp(now)
    if keep == KEEP_BOTH:
        connection.execute(
            "UPDATE conflicts SET status = 'resolved', resolution = 'keep_both',"
            " resolved_at = ? WHERE conflict_id = ?",
            (stamp, conflict_id),
        )
    else:
        kept = first if keep == conflict.claim_ids[0] else second
        loser = second if kept == first else first
        connection.execute(
            "UPDATE conflicts SET status = 'resolved', resolution = 'keep_one',"
            " kept_rowid = ?, superseded_rowid = ?, resolved_at = ? WHERE conflict_id = ?",
            (kept, loser, stamp, conflict_id),
        )
        supersede(connection, agent_id, kept=kept, loser=loser, stamp=stamp)
    mark_dirty(connection, agent_id, (first, second))
    connection.execute(
        "INSERT INTO audit (agent_id, at, action, detail) VALUES (?, ?, 'resolve', ?)",
        (agent_id, stamp, conflict_id),
    )
    return _get(connection, agent_id, conflict_id)


def supersede(
    connection: apsw.Connection,
    agent_id: AgentId,
    *,
    kept: int,
    loser: int,
    stamp: str,
) -> None:
    """Make ``loser`` history of ``kept`` with a ``supersede`` derivation, and ``kept``
    current: ``loser`` held until the later of the two evidence times. A kept claim in
    an attribute chain takes its place there by evidence time (the loser, out of the
    chain once a resolution names it, no longer counts)."""
    times = [
        str(row[0])
        for row in connection.execute(
            "SELECT evidence_at FROM claims WHERE rowid IN (?, ?)"
            " AND evidence_at IS NOT NULL",
            (kept, loser),
        )
    ]
    connection.execute(
        "UPDATE claims SET lifecycle = 'superseded', superseded_at = ?,"
        " updated_at = ?, revision = revision + 1"
        " WHERE rowid = ? AND lifecycle IN ('active', 'superseded')",
        (max(times, key=dt.datetime.fromisoformat, default=None), stamp, loser),
    )
    keyed = connection.execute(
        "SELECT subject IS NOT NULL AND predicate IS NOT NULL, lifecycle FROM claims"
        " WHERE rowid = ?",
        (kept,),
    ).fetchone()
    if keyed is not None and bool(keyed[0]):
        # The chain re-orders without the loser: the kept value is current if it is
        # the newest left, history of a newer value otherwise.
        connection.execute(
            "UPDATE claims SET lifecycle = 'active', superseded_at = NULL,"
            " updated_at = ?, revision = revision + 1"
            " WHERE rowid = ? AND lifecycle = 'superseded'",
            (stamp, kept),
        )
        order_succession(connection, agent_id, kept, stamp)
    elif keyed is not None and str(keyed[1]) == "superseded":
        connection.execute(
            "UPDATE claims SET lifecycle = 'active', superseded_at = NULL,"
            " updated_at = ?, revision = revision + 1 WHERE rowid = ?",
            (stamp, kept),
        )
    if not connection.execute(
        "SELECT 1 FROM derivations WHERE agent_id = ? AND parent_rowid = ?"
        " AND child_rowid = ? AND relation = 'supersede'",
        (agent_id, loser, kept),
    ).fetchone():
        connection.execute(
            "INSERT INTO derivations (agent_id, parent_rowid, child_rowid, relation,"
            " created_at) VALUES (?, ?, ?, 'supersede', ?)",
            (agent_id, loser, kept, stamp),
        )


def superseded_by(
    connection: apsw.Connection, agent_id: AgentId, rowids: Iterable[int]
) -> set[int]:
    """Claims a challenge or a resolution superseded in favour of one of ``rowids``
    (outside succession's own chains): read before ``rowids`` are deleted, for
    :func:`reinstate_losers` after."""
    losers: set[int] = set()
    for rowid in rowids:
        for (loser,) in connection.execute(
            "SELECT d.parent_rowid FROM derivations d JOIN claims p"
            " ON p.rowid = d.parent_rowid WHERE d.agent_id = ? AND d.child_rowid = ?"
            " AND d.relation = 'supersede' AND p.lifecycle = 'superseded'"
            " AND (p.predicate IS NULL OR p.rowid IN (SELECT superseded_rowid"
            "  FROM conflicts WHERE agent_id = ? AND kept_rowid = ?))",
            (agent_id, rowid, agent_id, rowid),
        ):
            losers.add(int(loser))
    return losers - set(rowids)


def reinstate_losers(
    connection: apsw.Connection, agent_id: AgentId, losers: Iterable[int], stamp: str
) -> None:
    """After the claims that won over ``losers`` are gone (forgotten, withdrawn with
    their turn): each loser stands as if the winner had never been said. An unkeyed one
    still superseded by another live claim stays history; a keyed one takes its place
    in its chain again (its resolution went with the winner)."""
    for loser in losers:
        row = connection.execute(
            "SELECT predicate IS NOT NULL AND subject IS NOT NULL FROM claims"
            " WHERE rowid = ? AND agent_id = ? AND lifecycle = 'superseded'",
            (loser, agent_id),
        ).fetchone()
        if row is None:
            continue
        if bool(row[0]):
            order_succession(connection, agent_id, loser, stamp)
            continue
        if connection.execute(
            "SELECT 1 FROM derivations WHERE agent_id = ? AND parent_rowid = ?"
            " AND relation = 'supersede'",
            (agent_id, loser),
        ).fetchone():
            continue
        connection.execute(
            "UPDATE claims SET lifecycle = 'active', superseded_at = NULL,"
            " updated_at = ?, revision = revision + 1 WHERE rowid = ?",
            (stamp, loser),
        )
