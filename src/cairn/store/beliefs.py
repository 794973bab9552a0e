"""The learning layer's rows: the signal ledger, beliefs, and the learning pass's cursors.

Synchronous; the caller owns the transaction. Signals are idempotent by
``(claim, kind, source_key)``: recording one twice changes nothing. Both tables reference
the claim with ``ON DELETE CASCADE``, so a forget, a clear or a retire takes them with it
(schema 0014). No text is stored: IDs, counts, weights and times only.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

import attrs

from cairn.domain.belief import Belief, SignalKind, Stage
from cairn.domain.claim import ClaimKind, Lifecycle, Origin
from cairn.errors import InvalidInputError, UnknownRequestError

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    "ClaimFacts",
    "Derivation",
    "FeedbackRecorded",
    "RecallSelection",
    "Signal",
    "SignalTotal",
    "advance_cursors",
    "claim_facts",
    "claim_rowids",
    "claims_after",
    "derivations_of",
    "learning_cursors",
    "load_beliefs",
    "quarantine_claim",
    "recall_selections",
    "record_feedback",
    "record_signals",
    "retract_evidence_signals",
    "review_due",
    "save_belief",
    "signal_totals",
]


def _stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat()


@attrs.frozen
class Signal:
    claim_rowid: int
    kind: SignalKind
    source_key: str
    weight: float
    at: str


@attrs.frozen
class SignalTotal:
    count: int
    weight: float
    last_at: str | None


def record_signals(
    connection: apsw.Connection, agent_id: AgentId, signals: Iterable[Signal]
) -> int:
    """Record each signal of a claim the agent still has; returns how many were new."""
    added = 0
    for signal in signals:
        connection.execute(
            "INSERT OR IGNORE INTO signals (agent_id, claim_rowid, kind, source_key,"
            " weight, at) SELECT ?, rowid, ?, ?, ?, ? FROM claims"
            " WHERE rowid = ? AND agent_id = ?",
            (
                agent_id,
                signal.kind.value,
                signal.source_key,
                signal.weight,
                signal.at,
                signal.claim_rowid,
                agent_id,
            ),
        )
        added += connection.changes()
    return added


def retract_evidence_signals(
    connection: apsw.Connection, claim_rowid: int, keep: Sequence[str]
) -> int:
    """Drop the claim's repeated-evidence signals whose source is no longer one of its
    sources (a forgotten turn takes its support with it)."""
    marks = ", ".join("?" for _ in keep) or "NULL"
    connection.execute(
        "DELETE FROM signals WHERE claim_rowid = ? AND kind = ?"  # noqa: S608 - placeholders only
        f" AND source_key NOT IN ({marks})",
        (claim_rowid, SignalKind.REPEATED_EVIDENCE.value, *keep),
    )
    return connection.changes()


def signal_totals(
    connection: apsw.Connection, claim_rowid: int
) -> dict[SignalKind, SignalTotal]:
    return {
        SignalKind(kind): SignalTotal(int(count), float(weight), last)
        for kind, count, weight, last in connection.execute(
            "SELECT kind, count(*), total(weight), max(at) FROM signals"
            " WHERE claim_rowid = ? GROUP BY kind",
            (claim_rowid,),
        )
    }


@attrs.frozen
class ClaimFacts:
    """What the learning pass reads of a claim besides its signals."""

    rowid: int
    claim_id: str
    kind: ClaimKind
    origin: Origin
    lifecycle: Lifecycle
    prior: float
    created_at: str
    from_assistant: bool
    sources: tuple[tuple[int, str], ...]
    """(event rowid, received_at) of each source turn, oldest first."""


def claim_facts(
    connection: apsw.Connection, agent_id: AgentId, claim_rowid: int
) -> ClaimFacts | None:
    """The claim's facts (``None``: not the agent's, or gone); a malformed row raises
    ValueError."""
    row = connection.execute(
        "SELECT claim_id, kind, origin, lifecycle, confidence, created_at FROM claims"
        " WHERE rowid = ? AND agent_id = ?",
        (claim_rowid, agent_id),
    ).fetchone()
    if row is None:
        return None
    claim_id, kind, origin, lifecycle, prior, created_at = row
    sources = connection.execute(
        "SELECT DISTINCT e.rowid, e.received_at, e.role FROM claim_sources s"
        " JOIN events e ON e.rowid = s.event_rowid WHERE s.claim_rowid = ?"
        " ORDER BY e.rowid",
        (claim_rowid,),
    ).fetchall()
    return ClaimFacts(
        rowid=claim_rowid,
        claim_id=str(claim_id),
        kind=ClaimKind(kind),
        origin=Origin(origin),
        lifecycle=Lifecycle(lifecycle),
        prior=float(prior),
        created_at=str(created_at),
        from_assistant=bool(sources)
        and all(role == "assistant" for *_, role in sources),
        sources=tuple((int(str(rowid)), str(at)) for rowid, at, _ in sources),
    )


@attrs.frozen
class Derivation:
    rowid: int
    relation: str
    parent_rowid: int
    child_rowid: int
    created_at: str
    parent_sources: int
    child_sources: int


def derivations_of(
    connection: apsw.Connection, agent_id: AgentId, claim_rowid: int
) -> list[Derivation]:
    """The supersede and edit edges the claim is either end of, with each end's source
    count."""
    return [
        Derivation(int(rowid), str(relation), int(parent), int(child), str(at), ps, cs)
        for rowid, relation, parent, child, at, ps, cs in connection.execute(
            "SELECT d.rowid, d.relation, d.parent_rowid, d.child_rowid, d.created_at,"
            " (SELECT count(DISTINCT event_rowid) FROM claim_sources"
            "  WHERE claim_rowid = d.parent_rowid),"
            " (SELECT count(DISTINCT event_rowid) FROM claim_sources"
            "  WHERE claim_rowid = d.child_rowid)"
            " FROM derivations d WHERE d.agent_id = ?"
            " AND (d.parent_rowid = ? OR d.child_rowid = ?)"
            " AND d.relation IN ('supersede', 'edit') ORDER BY d.rowid",
            (agent_id, claim_rowid, claim_rowid),
        )
    ]


def load_beliefs(
    connection: apsw.Connection, claim_rowids: Iterable[int]
) -> dict[int, Belief]:
    """The beliefs of these claims (the caller checked owner and scope of the claims)."""
    rowids = list(claim_rowids)
    beliefs: dict[int, Belief] = {}
    for start in range(0, len(rowids), 500):
        chunk = rowids[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for row in connection.execute(
            "SELECT claim_rowid, confidence, usefulness, stability, contradiction_risk,"  # noqa: S608 - placeholders only
            f" use_count, stage FROM beliefs WHERE claim_rowid IN ({marks})",
            chunk,
        ):
            rowid, confidence, usefulness, stability, risk, uses, stage = row
            beliefs[int(rowid)] = Belief(
                int(rowid),
                float(confidence),
                float(usefulness),
                float(stability),
                float(risk),
                int(uses),
                Stage(stage),
            )
    return beliefs


def save_belief(
    connection: apsw.Connection, agent_id: AgentId, belief: Belief, now: dt.datetime
) -> bool:
    """Upsert the belief (``updated_at`` moves only when a value changed, ``reviewed_at``
    always); returns whether a value changed."""
    stamp = _stamp(now)
    values = (
        round(belief.confidence, 6),
        round(belief.usefulness, 6),
        round(belief.stability, 6),
        round(belief.contradiction_risk, 6),
        belief.use_count,
        belief.stage.value,
    )
    before = connection.execute(
        "SELECT confidence, usefulness, stability, contradiction_risk, use_count, stage"
        " FROM beliefs WHERE claim_rowid = ?",
        (belief.claim_rowid,),
    ).fetchone()
    changed = before is None or tuple(before) != values
    connection.execute(
        "INSERT INTO beliefs (claim_rowid, agent_id, confidence, usefulness, stability,"
        " contradiction_risk, use_count, stage, updated_at, reviewed_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET"
        " confidence = excluded.confidence, usefulness = excluded.usefulness,"
        " stability = excluded.stability,"
        " contradiction_risk = excluded.contradiction_risk,"
        " use_count = excluded.use_count, stage = excluded.stage,"
        " updated_at = CASE WHEN ? THEN excluded.updated_at ELSE updated_at END,"
        " reviewed_at = excluded.reviewed_at",
        (belief.claim_rowid, agent_id, *values, stamp, stamp, changed),
    )
    return changed


def quarantine_claim(
    connection: apsw.Connection, agent_id: AgentId, claim_rowid: int, now: dt.datetime
) -> bool:
    """Move an active claim to lifecycle ``quarantined`` (out of recall, kept for audit),
    with an audit row naming it; returns whether it moved."""
    stamp = _stamp(now)
    connection.execute(
        "UPDATE claims SET lifecycle = 'quarantined', revision = revision + 1,"
        " updated_at = ? WHERE rowid = ? AND agent_id = ? AND lifecycle = 'active'",
        (stamp, claim_rowid, agent_id),
    )
    if not connection.changes():
        return False
    connection.execute(
        "INSERT INTO audit (agent_id, at, action, detail) SELECT ?, ?, 'quarantine',"
        " claim_id FROM claims WHERE rowid = ?",
        (agent_id, stamp, claim_rowid),
    )
    return True


def review_due(
    connection: apsw.Connection, agent_id: AgentId, before: dt.datetime, limit: int
) -> list[int]:
    """Claims whose belief was last reviewed before ``before``, oldest review first."""
    return [
        int(rowid)
        for (rowid,) in connection.execute(
            "SELECT claim_rowid FROM beliefs WHERE agent_id = ? AND reviewed_at < ?"
            " AND stage NOT IN ('superseded', 'quarantined')"
            " ORDER BY reviewed_at, claim_rowid LIMIT ?",
            (agent_id, _stamp(before), limit),
        )
    ]


def learning_cursors(connection: apsw.Connection, agent_id: AgentId) -> tuple[int, int]:
    """(last recall record read, last claim given a belief by the backfill walk)."""
    row = connection.execute(
        "SELECT recall_seq, claim_rowid FROM learning_cursors WHERE agent_id = ?",
        (agent_id,),
    ).fetchone()
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


def advance_cursors(
    connection: apsw.Connection, agent_id: AgentId, recall_seq: int, claim_rowid: int
) -> None:
    connection.execute(
        "INSERT INTO learning_cursors (agent_id, recall_seq, claim_rowid)"
        " VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET"
        " recall_seq = max(recall_seq, excluded.recall_seq),"
        " claim_rowid = max(claim_rowid, excluded.claim_rowid)",
        (agent_id, recall_seq, claim_rowid),
    )


def claims_after(
    connection: apsw.Connection, agent_id: AgentId, claim_rowid: int, limit: int
) -> list[int]:
    """The agent's claims after ``claim_rowid`` in rowid order (the backfill walk)."""
    return [
        int(rowid)
        for (rowid,) in connection.execute(
            "SELECT rowid FROM claims WHERE rowid > ? AND agent_id = ?"
            " ORDER BY rowid LIMIT ?",
            (claim_rowid, agent_id, limit),
        )
    ]


@attrs.frozen
class RecallSelection:
    seq: int
    request_id: str
    created_at: str
    selected_ids: tuple[str, ...]


def _selected(manifest: str | None) -> tuple[str, ...]:
    if manifest is None:
        return ()
    ids = json.loads(manifest).get("selected_ids", ())
    return tuple(str(item) for item in ids)


def recall_selections(
    connection: apsw.Connection, agent_id: AgentId, after_seq: int, limit: int
) -> list[RecallSelection]:
    """The agent's recall records after ``after_seq``, oldest first, with what each
    selected (a record still pending selected nothing yet)."""
    return [
        RecallSelection(int(seq), str(request_id), str(at), _selected(manifest))
        for seq, request_id, at, manifest in connection.execute(
            "SELECT seq, request_id, created_at, manifest FROM recall_records"
            " WHERE seq > ? AND agent_id = ? ORDER BY seq LIMIT ?",
            (after_seq, agent_id, limit),
        )
    ]


def claim_rowids(
    connection: apsw.Connection, agent_id: AgentId, claim_ids: Iterable[str]
) -> dict[str, int]:
    """Claim ID -> rowid for those of ``claim_ids`` that are the agent's claims."""
    found: dict[str, int] = {}
    for claim_id in dict.fromkeys(claim_ids):
        row = connection.execute(
            "SELECT rowid FROM claims WHERE claim_id = ? AND agent_id = ?",
            (claim_id, agent_id),
        ).fetchone()
        if row is not None:
            found[claim_id] = int(row[0])
    return found


@attrs.frozen
class FeedbackRecorded:
    """What a feedback call recorded: the claims it credited, and how many signals were
    new (0 for a repeat of the same report)."""

    claim_rowids: tuple[int, ...]
    used: int
    wrong: int
    new_signals: int


# A "wrong" report weighs as much as four independent sources: two of them outweigh an
# extracted claim's prior, three a user's own remember (cairn.maintenance.learning).
USED_WEIGHT = 1.0
WRONG_WEIGHT = 4.0


def record_feedback(
    connection: apsw.Connection,
    agent_id: AgentId,
    request_id: str,
    used: Sequence[str],
    wrong: Sequence[str],
    now: dt.datetime,
) -> FeedbackRecorded:
    """Record a host's report on what one recall returned. Every ID must be one that
    request returned (its record's manifest); an ID naming a turn rather than a claim is
    accepted and credits no claim (turns have no belief). Repeating a report changes
    nothing."""
    both = sorted(set(used) & set(wrong))
    if both:
        raise InvalidInputError(
            f"item {both[0]} is reported both used and wrong; report it as one or the other"
        )
    row = connection.execute(
        "SELECT manifest FROM recall_records WHERE agent_id = ? AND request_id = ?",
        (agent_id, request_id),
    ).fetchone()
    if row is None:
        raise UnknownRequestError(
            f"agent {agent_id} has no recall with request ID {request_id}"
        )
    returned = set(_selected(None if row[0] is None else str(row[0])))
    strangers = [item for item in (*used, *wrong) if item not in returned]
    if strangers:
        raise InvalidInputError(
            f"recall {request_id} did not return item {strangers[0]}: feedback can only"
            " name items that recall returned"
        )
    rowids = claim_rowids(connection, agent_id, (*used, *wrong))
    stamp = _stamp(now)
    key = f"request:{request_id}"
    signals = [
        Signal(rowids[item], SignalKind.FEEDBACK_USED, key, USED_WEIGHT, stamp)
        for item in dict.fromkeys(used)
        if item in rowids
    ] + [
        Signal(rowids[item], SignalKind.FEEDBACK_WRONG, key, WRONG_WEIGHT, stamp)
        for item in dict.fromkeys(wrong)
        if item in rowids
    ]
    added = record_signals(connection, agent_id, signals)
    return FeedbackRecorded(
        tuple(dict.fromkeys(signal.claim_rowid for signal in signals)),
        sum(1 for s in signals if s.kind is SignalKind.FEEDBACK_USED),
        sum(1 for s in signals if s.kind is SignalKind.FEEDBACK_WRONG),
        added,
    )
