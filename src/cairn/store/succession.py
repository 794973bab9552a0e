"""Succession: which claim of an attribute is current, ordered by evidence time.

Claims with the same subject and predicate in the same scope are values of one attribute
over time ("Mei lives in Shanghai", then "Mei moved to Berlin"). The current value is the
one whose evidence is newest (with the statements just before it that only restate it);
every other one is superseded, and ``superseded_at`` says until when it held (the evidence
time of the next value). Order is evidence time, not
arrival: a turn dated Jan 1 that is ingested after one dated Jan 20 is the older value, so
any ingestion order gives the same current state (tests/store/test_succession.py).

A claim's evidence time (``claims.evidence_at``) is when its evidence says the value took
effect: its ``valid_from`` when it has one, else the earliest of its source turns' ``at``,
else when it was stored (a remembered claim). A ``valid_from`` of a week, month or year
("moved to Lisbon last month") says only that the change fell somewhere in that period,
and the chain places it at the middle of what is left of the period once what the chain
itself says is taken in: not after the statement, and after every other value of the
chain said within the period before it (the user still held that value when they said
so), or said after the period but before the statement and no more than one period after
the period (the move is news to that value: "I live in Porto", then minutes later "I
moved to Lisbon last month"). So "I live in Porto" said on October 1 is older than "I
moved to Lisbon last month" said in November, while "I moved to Berlin" dated December 22 is newer than "I moved to
Porto last month" said with it in January. Its evidence time, and so the "until" of the
value before it, stays the period's start. A plan's or an event's ``valid_from`` is when
the planned thing happens, not when the plan was made, so their evidence time is always the
statement's: a trip moved *earlier* is still the newer plan.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import attrs

from cairn.domain.claim import ClaimKind
from cairn.domain.ids import AgentId
from cairn.domain.values import restates
from cairn.store.dirty import mark_dirty

if TYPE_CHECKING:
    from collections.abc import Iterable

    import apsw

__all__ = [
    "backfill_succession",
    "chains_of",
    "order_succession",
    "refresh_evidence_time",
    "reorder_chains",
    "reorder_coarse_chains",
    "values_at",
]

# Kinds whose validity is about the thing described, not about when it became true.
_STATED_KINDS = frozenset({ClaimKind.PLAN, ClaimKind.EVENT, ClaimKind.RECURRING})


def _utc(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat()


_STATED = ",".join(f"'{kind.value}'" for kind in sorted(_STATED_KINDS))
# The evidence time of the claims row in scope, from its own columns and its sources.
_STATEMENT_AT = (
    "coalesce((SELECT min(e.occurred_at) FROM claim_sources s"
    "  JOIN events e ON e.rowid = s.event_rowid WHERE s.claim_rowid = claims.rowid),"
    "  created_at)"
)
# The end of a coarse valid_from's period, in the stored format (UTC, +00:00).
_PERIOD_END = (
    "strftime('%Y-%m-%dT%H:%M:%S+00:00', valid_from, CASE time_precision"
    " WHEN 'week' THEN '+7 days' WHEN 'month' THEN '+1 month' ELSE '+1 year' END)"
)
_COARSE = "time_precision IN ('week', 'month', 'year')"
_EVIDENCE_AT = (
    f"CASE WHEN kind NOT IN ({_STATED}) AND valid_from IS NOT NULL THEN valid_from"
    f" ELSE {_STATEMENT_AT} END"
)
_IS_COARSE = f"kind NOT IN ({_STATED}) AND valid_from IS NOT NULL AND {_COARSE}"
# What ordering a chain reads of each claim (_Link): its evidence time, its statement's,
# a coarse valid_from's period, and its strength.
_LINK_COLUMNS = (
    f"rowid, evidence_at, lifecycle, superseded_at, text, {_STATEMENT_AT},"
    f" CASE WHEN {_IS_COARSE} THEN valid_from END,"
    f" CASE WHEN {_IS_COARSE} THEN {_PERIOD_END} END,"
    " CASE origin WHEN 'user' THEN 2 WHEN 'extracted' THEN 1 ELSE 0 END, confidence"
)


# A claim a resolved conflict superseded stays out of its chain (cairn.store.conflicts).
_NOT_RESOLVED_LOSER = (
    " AND rowid NOT IN (SELECT superseded_rowid FROM conflicts k"
    "  WHERE k.agent_id = claims.agent_id AND k.superseded_rowid IS NOT NULL)"
)


def refresh_evidence_time(connection: apsw.Connection, rowid: int) -> None:
    """Store claim ``rowid``'s evidence time, after its sources are written (a merge
    that adds an earlier source moves it earlier)."""
    connection.execute(
        f"UPDATE claims SET evidence_at = {_EVIDENCE_AT} WHERE rowid = ?",  # noqa: S608 - our SQL
        (rowid,),
    )


def order_succession(
    connection: apsw.Connection,
    agent_id: AgentId,
    rowid: int,
    stamp: str | None,
    *,
    reorder: bool = True,
    honour_resolutions: bool = True,
    dirty: bool = True,
) -> int:
    """Re-order the attribute chain claim ``rowid`` belongs to; the caller owns the
    transaction. Returns how many claims this made superseded.

    The chain is every active or superseded claim of the agent with the claim's subject,
    predicate and scope (never across scopes), sorted by evidence time (rowid breaks ties,
    so a restatement at the same moment wins). Each claim is superseded until the
    evidence time of the first later claim that says another value, with a ``supersede``
    derivation to it; a claim that every later one only restates
    (:func:`cairn.domain.values.restates`: "moved to Lisbon", then "lives in Lisbon
    now") stays active beside them, so the current value is the newest one and all its
    restatements.
    Lineage is only ever added: an edge written before an out-of-order arrival stays.
    ``stamp`` is the ``updated_at`` of changed rows (``None``: leave it, as a migration
    does: it changes no business time). Without ``reorder`` (an import, which restores
    each row's recorded lifecycle) lifecycles stay as they are and only the superseded
    rows learn until when they held.

    At equal evidence time the stronger claim is the newer: a user's statement before a
    model's, then the higher confidence (cairn.maintenance.challenge's order). A claim a
    resolved conflict superseded (cairn.store.conflicts) is not in the chain: it stays
    history of what the user kept. ``honour_resolutions`` is off only for migration 0008,
    which runs before the conflicts table exists.
    Every claim whose lifecycle or ``superseded_at`` changed gets a new dirty generation
    (``dirty``: off only in migration 0008, which runs before the queue has its columns).
    """
    anchor = connection.execute(
        "SELECT subject, predicate, scope, scope_key FROM claims"
        " WHERE rowid = ? AND agent_id = ?",
        (rowid, agent_id),
    ).fetchone()
    if anchor is None or anchor[0] is None or anchor[1] is None:
        return 0
    subject = str(anchor[0])
    chain = _in_order(
        [
            _Link(
                int(row[0]),
                str(row[1]),
                str(row[2]),
                row[3],
                str(row[4]),
                str(row[5]),
                None if row[6] is None else (str(row[6]), str(row[7])),
                (int(row[8]), float(row[9])),
            )
            for row in connection.execute(
                f"SELECT {_LINK_COLUMNS} FROM claims"  # noqa: S608 - our SQL
                " WHERE agent_id = ? AND subject = ? AND predicate = ? AND scope = ?"
                " AND scope_key IS ? AND lifecycle IN ('active', 'superseded')"
                + (_NOT_RESOLVED_LOSER if honour_resolutions else ""),
                (agent_id, *anchor),
            )
        ],
        subject,
    )
    newly_superseded = 0
    changed: list[int] = []
    for index, older in enumerate(chain):
        newer = _next_value(chain, index, subject)
        if newer is None:
            if reorder and older.lifecycle == "superseded":
                # Nothing later says another value (it was restated, or the value that
                # replaced it is gone, or it was superseded out of order before
                # schema 8): it holds again.
                connection.execute(
                    "UPDATE claims SET lifecycle = 'active', superseded_at = NULL,"
                    " updated_at = coalesce(?, updated_at), revision = revision + 1"
                    " WHERE rowid = ?",
                    (stamp, older.rowid),
                )
                changed.append(older.rowid)
            continue
        if older.lifecycle == "superseded":
            if older.until == newer.evidence_at:
                continue  # unchanged, its edge written when it was superseded
            # Only when it stopped holding changed (a value arrived in between).
            connection.execute(
                "UPDATE claims SET superseded_at = ?,"
                " updated_at = coalesce(?, updated_at) WHERE rowid = ?",
                (newer.evidence_at, stamp, older.rowid),
            )
            changed.append(older.rowid)
        elif not reorder:
            continue
        else:
            newly_superseded += 1
            connection.execute(
                "UPDATE claims SET lifecycle = 'superseded', superseded_at = ?,"
                " updated_at = coalesce(?, updated_at), revision = revision + 1"
                " WHERE rowid = ?",
                (newer.evidence_at, stamp, older.rowid),
            )
            changed.append(older.rowid)
        if not reorder:
            continue  # an import brings its own lineage records
        if not connection.execute(
            "SELECT 1 FROM derivations WHERE agent_id = ? AND parent_rowid = ?"
            " AND child_rowid = ? AND relation = 'supersede'",
            (agent_id, older.rowid, newer.rowid),
        ).fetchone():
            connection.execute(
                "INSERT INTO derivations (agent_id, parent_rowid, child_rowid, relation,"
                " created_at) VALUES (?, ?, ?, 'supersede',"
                " coalesce(?, (SELECT updated_at FROM claims WHERE rowid = ?)))",
                (agent_id, older.rowid, newer.rowid, stamp, newer.rowid),
            )
    if dirty and changed:
        mark_dirty(connection, agent_id, changed)
    return newly_superseded


@attrs.frozen
class _Link:
    """One claim of an attribute chain, as succession reads it."""

    rowid: int
    evidence_at: str
    lifecycle: str
    until: object
    text: str
    stated_at: str
    # A coarse valid_from's period, start and end (None: the evidence time is a moment).
    period: tuple[str, str] | None
    # Who wins a tie (cairn.maintenance.challenge): the user's own word, then what was
    # extracted from their turns, then a model's; then the surer claim.
    strength: tuple[int, float]


def _in_order(links: list[_Link], subject: str) -> list[_Link]:
    """``links`` oldest first: by evidence time, a coarse period placed as the module
    docstring says, then strength, then rowid (a restatement at the same moment wins)."""

    stated = {link.rowid: dt.datetime.fromisoformat(link.stated_at) for link in links}

    def order_at(link: _Link) -> str:
        if link.period is None:
            return link.evidence_at
        start, period_end = (
            dt.datetime.fromisoformat(moment) for moment in link.period
        )
        said = stated[link.rowid]
        end = min(period_end, said)
        # Another value said before this statement and no later than one period after
        # the period: the move is news to it ("I live in Porto", then minutes later "I
        # moved to Lisbon last month"), so it is placed after it. Said longer after (a
        # move "in 2019" told after "I live in Porto" in 2025), a later change fits in
        # between and the period stands.
        horizon = min(said, period_end + (period_end - start))
        low = max(
            (
                stated[other.rowid]
                for other in links
                if other.rowid != link.rowid
                and start <= stated[other.rowid] < horizon
                and not restates(other.text, link.text, subject)
            ),
            default=start,
        )
        if low >= end:
            end = said
        # Clamped: a statement made before its period begins leaves nothing of it.
        return _utc(max(start, min(end, low + (end - low) / 2)))

    keyed = [(order_at(link), link.strength, link.rowid, link) for link in links]
    keyed.sort(key=lambda entry: entry[:3])
    return [entry[3] for entry in keyed]


def _next_value(chain: list[_Link], index: int, subject: str) -> _Link | None:
    """The first claim after ``chain[index]`` that says another value (``None``: every
    later one restates it, "moved to Lisbon" then "lives in Lisbon now")."""
    older = chain[index]
    for newer in chain[index + 1 :]:
        if not restates(older.text, newer.text, subject):
            return newer
    return None


Chain = tuple[object, object, object, object]
"""An attribute chain's key: subject, predicate, scope, scope key."""


def chains_of(connection: apsw.Connection, rowids: Iterable[int]) -> set[Chain]:
    """The attribute chains claims ``rowids`` belong to: read before they are deleted,
    for :func:`reorder_chains` after."""
    chains: set[Chain] = set()
    for rowid in rowids:
        row = connection.execute(
            "SELECT subject, predicate, scope, scope_key FROM claims WHERE rowid = ?"
            " AND subject IS NOT NULL AND predicate IS NOT NULL",
            (rowid,),
        ).fetchone()
        if row is not None:
            chains.add((row[0], row[1], row[2], row[3]))
    return chains


def reorder_chains(
    connection: apsw.Connection,
    agent_id: AgentId,
    chains: Iterable[Chain],
    stamp: str | None,
) -> None:
    """Re-order chains that lost claims (forgotten, or withdrawn with their turn): the
    newest value left is current again, as if the removed one had never been said, so no
    value stays superseded by (and "until" the time of) something that is gone
    (tests/runtime/test_forget_succession.py)."""
    for chain in chains:
        head = connection.execute(
            "SELECT rowid FROM claims WHERE agent_id = ? AND subject = ?"
            " AND predicate = ? AND scope = ? AND scope_key IS ?"
            " AND lifecycle IN ('active', 'superseded')"
            " ORDER BY evidence_at DESC, rowid DESC LIMIT 1",
            (agent_id, *chain),
        ).fetchone()
        if head is not None:
            order_succession(connection, agent_id, int(head[0]), stamp)


def backfill_succession(connection: apsw.Connection) -> None:
    """Schema 8: every claim's evidence time, then every chain re-ordered by it (the
    Python step of migration 0008, inside its transaction, the clear fence lifted for
    this transaction only)."""
    connection.execute(
        "INSERT OR IGNORE INTO clear_fence_override (agent_id)"
        " SELECT DISTINCT agent_id FROM clear_jobs WHERE phase <> 'done'"
    )
    connection.execute(f"UPDATE claims SET evidence_at = {_EVIDENCE_AT}")  # noqa: S608 - our SQL
    heads = connection.execute(
        "SELECT max(rowid), agent_id FROM claims WHERE subject IS NOT NULL"
        " AND predicate IS NOT NULL AND lifecycle IN ('active', 'superseded')"
        " GROUP BY agent_id, subject, predicate, scope, scope_key"
    ).fetchall()
    for rowid, agent_id in heads:
        order_succession(
            connection,
            AgentId(str(agent_id)),
            int(str(rowid)),
            None,
            honour_resolutions=False,
            dirty=False,
        )
    connection.execute("DELETE FROM clear_fence_override")


def reorder_coarse_chains(connection: apsw.Connection) -> None:
    """Schemas 17 and 18: the chains holding a claim whose ``valid_from`` is a week, month or
    year re-ordered by the period rule above (resolutions honoured; the clear fence
    lifted for this transaction only)."""
    connection.execute(
        "INSERT OR IGNORE INTO clear_fence_override (agent_id)"
        " SELECT DISTINCT agent_id FROM clear_jobs WHERE phase <> 'done'"
    )
    coarse = connection.execute(
        "SELECT rowid, agent_id FROM claims"  # noqa: S608 - our SQL
        f" WHERE valid_from IS NOT NULL AND {_COARSE} AND subject IS NOT NULL"
        " AND predicate IS NOT NULL AND lifecycle IN ('active', 'superseded')"
    ).fetchall()
    for rowid, agent_id in coarse:
        order_succession(
            connection, AgentId(str(agent_id)), int(str(rowid)), None, dirty=False
        )
    connection.execute("DELETE FROM clear_fence_override")


def values_at(
    connection: apsw.Connection,
    agent_id: AgentId,
    attributes: Iterable[tuple[str, str, str, str | None]],
    moment: dt.datetime,
) -> dict[tuple[str, str, str, str | None], int]:
    """The rowid of the claim holding each ``(subject, predicate, scope, scope_key)``
    attribute at ``moment``: the newest by evidence time that began by then and was not
    superseded by then. Attributes with no such claim are left out. Unvalidated: pass the
    rowids through ``load_claims``."""
    stamp = _utc(moment)
    found: dict[tuple[str, str, str, str | None], int] = {}
    for attribute in dict.fromkeys(attributes):
        row = connection.execute(
            "SELECT rowid FROM claims WHERE agent_id = ? AND subject = ?"
            " AND predicate = ? AND scope = ? AND scope_key IS ?"
            " AND lifecycle IN ('active', 'superseded')"
            " AND (evidence_at IS NULL OR evidence_at <= ?)"
            " AND (superseded_at IS NULL OR superseded_at > ?)"
            " ORDER BY evidence_at DESC, rowid DESC LIMIT 1",
            (agent_id, *attribute, stamp, stamp),
        ).fetchone()
        if row is not None:
            found[attribute] = int(row[0])
    return found
