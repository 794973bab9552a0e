"""Expanding a recalled item's refs into the turns behind it (``Memory.evidence``).

A ref is an event ID (what a recalled item's ``source_refs`` hold) or a claim ID, which
stands for every source turn of that claim. Each ref answers on its own, so one bad ref
in a batch still lets the others answer: an unknown or forgotten ID is an entry saying
so, never an error. A turn a forgotten claim cited stays stored but is shown as
``hidden`` without its text, as recall hides it, so a forgotten statement does not come
back through its source.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from cairn.api.reports import EvidenceItem
from cairn.store.evidence import load_events
from cairn.store.forget_evidence import resolve_evidence
from cairn.store.tombstones import event_id_hash, evidence_tombstoned

if TYPE_CHECKING:
    from collections.abc import Sequence

    import apsw

    from cairn.domain.evidence import EvidenceEvent
    from cairn.domain.ids import AgentId

__all__ = ["read_evidence"]


def read_evidence(
    connection: apsw.Connection, agent_id: AgentId, refs: Sequence[str]
) -> list[EvidenceItem]:
    """One entry per ref (a claim ref: one per source turn), in the order asked."""
    found: list[EvidenceItem] = []
    for ref in refs:
        found.extend(_expand(connection, agent_id, ref))
    return found


def _expand(
    connection: apsw.Connection, agent_id: AgentId, ref: str
) -> list[EvidenceItem]:
    rowids = resolve_evidence(connection, agent_id, ref)
    if rowids is not None:
        return [_turn(connection, agent_id, ref, rowid, None) for rowid in rowids]
    claim = connection.execute(
        "SELECT rowid FROM claims WHERE agent_id = ? AND claim_id = ?"
        " AND NOT EXISTS (SELECT 1 FROM clear_jobs j WHERE j.agent_id = claims.agent_id"
        "  AND j.phase <> 'done' AND claims.rowid <= j.rowid_cutoff)",
        (agent_id, ref),
    ).fetchone()
    if claim is not None:
        sources = [
            int(str(row[0]))
            for row in connection.execute(
                "SELECT DISTINCT event_rowid FROM claim_sources WHERE claim_rowid = ?"
                " ORDER BY event_rowid",
                (int(str(claim[0])),),
            )
        ]
        if not sources:
            return [EvidenceItem(ref=ref, state="unsourced", claim_id=ref)]
        return [_turn(connection, agent_id, ref, rowid, ref) for rowid in sources]
    if evidence_tombstoned(connection, agent_id, [event_id_hash(agent_id, ref)]):
        return [EvidenceItem(ref=ref, state="forgotten", event_id=ref)]
    return [EvidenceItem(ref=ref, state="unknown")]


def _turn(
    connection: apsw.Connection,
    agent_id: AgentId,
    ref: str,
    rowid: int,
    claim_id: str | None,
) -> EvidenceItem:
    row = connection.execute(
        "SELECT event_id FROM events WHERE rowid = ?", (rowid,)
    ).fetchone()
    event_id = None if row is None else str(row[0])
    if connection.execute(
        "SELECT 1 FROM hidden_evidence WHERE agent_id = ? AND event_rowid = ?",
        (agent_id, rowid),
    ).fetchone():
        return EvidenceItem(ref, "hidden", event_id=event_id, claim_id=claim_id)
    event = load_events(connection, agent_id, [rowid]).get(rowid)
    if event is None:
        return EvidenceItem(ref, "withdrawn", event_id=event_id, claim_id=claim_id)
    return _present(ref, event, claim_id)


def _present(ref: str, event: EvidenceEvent, claim_id: str | None) -> EvidenceItem:
    return EvidenceItem(
        ref=ref,
        state="present",
        event_id=event.event_id,
        claim_id=claim_id,
        session_id=event.session_id,
        role=event.role.value,
        speaker=event.speaker,
        kind=event.kind.value,
        at=event.occurred_at.astimezone(dt.UTC).isoformat(),
        text=event.text,
    )
