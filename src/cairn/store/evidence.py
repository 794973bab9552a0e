"""Evidence rows: idempotent intake of turns and events, verbatim text."""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
import json
from typing import TYPE_CHECKING

import attrs

from cairn.domain.evidence import EvidenceEvent, Role, Turn
from cairn.domain.ids import AgentId, EventId, SessionId
from cairn.store.fts import index_text, namespace

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import apsw

__all__ = [
    "IntakeOutcome",
    "IntakeResult",
    "content_hash",
    "event_fts_body",
    "insert_turns",
    "load_events",
    "mark_extracted",
    "pending_events",
]


class IntakeOutcome(enum.StrEnum):
    INGESTED = "ingested"
    DUPLICATE = "duplicate"
    REJECTED = "rejected"


@attrs.frozen
class IntakeResult:
    event_id: EventId
    outcome: IntakeOutcome
    reason: str | None = None
    rowid: int | None = None


def content_hash(turn: Turn) -> str:
    """Identity of a turn's content; ``at`` counts only when the caller gave it."""
    canonical = json.dumps(
        [
            turn.session_id,
            turn.role.value,
            turn.text,
            turn.speaker,
            None if turn.at is None else turn.at.astimezone(dt.UTC).isoformat(),
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def insert_turns(
    connection: apsw.Connection,
    agent_id: AgentId,
    turns: Sequence[Turn],
    received_at: dt.datetime,
) -> list[IntakeResult]:
    """Insert new turns with their FTS rows; the caller owns the transaction.

    A stored ID with the same content hash is a duplicate; with another hash it is rejected
    and the stored row is left as it was.
    """
    results: list[IntakeResult] = []
    seen: dict[str, str] = {}
    received = received_at.astimezone(dt.UTC).isoformat()
    for turn in turns:
        digest = content_hash(turn)
        earlier = seen.get(turn.event_id)
        if earlier is None:
            row = connection.execute(
                "SELECT content_hash FROM events WHERE agent_id = ? AND event_id = ?",
                (agent_id, turn.event_id),
            ).fetchone()
            earlier = None if row is None else str(row[0])
        if earlier is not None:
            if earlier == digest:
                results.append(IntakeResult(turn.event_id, IntakeOutcome.DUPLICATE))
            else:
                results.append(
                    IntakeResult(
                        turn.event_id,
                        IntakeOutcome.REJECTED,
                        "event id already stored with different content",
                    )
                )
            continue
        occurred_at = (turn.at or received_at).astimezone(dt.UTC)
        previous = connection.execute(
            "SELECT rowid, text FROM events WHERE agent_id = ? AND session_id = ?"
            " ORDER BY rowid DESC LIMIT 1",
            (agent_id, turn.session_id),
        ).fetchone()
        connection.execute(
            "INSERT INTO events (agent_id, event_id, session_id, role, speaker, text,"
            " content_hash, occurred_at, received_at, context_rowid)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                agent_id,
                turn.event_id,
                turn.session_id,
                turn.role.value,
                turn.speaker,
                turn.text,
                digest,
                occurred_at.isoformat(),
                received,
                None if previous is None else previous[0],
            ),
        )
        rowid = connection.last_insert_rowid()
        body = event_fts_body(
            agent_id,
            turn.speaker,
            turn.text,
            occurred_at,
            None if previous is None else str(previous[1]),
        )
        connection.execute(
            "INSERT INTO event_fts (rowid, body) VALUES (?, ?)", (rowid, body)
        )
        seen[turn.event_id] = digest
        results.append(IntakeResult(turn.event_id, IntakeOutcome.INGESTED, rowid=rowid))
    return results


def event_fts_body(
    agent_id: str,
    speaker: str | None,
    text: str,
    occurred_at: dt.datetime,
    context: str | None,
) -> str:
    """The event's row in ``event_fts``, from its stored columns and the text of the turn
    it replies to (so a damaged contentless index can be rebuilt from the events table).

    Indexed with the turn: the speaker's name ("what does Ana like?"), the date in words
    ("when did…"), and the turn it replies to, whose words a question about the reply
    often uses (design/recall.md measures each).
    """
    return index_text(
        f"{speaker or ''} {text} {occurred_at:%d %B %Y} {context or ''}",
        namespace(agent_id),
    )


_EVENT_COLUMNS = (
    "e.rowid, e.event_id, e.session_id, e.role, e.text, e.occurred_at, e.speaker,"
    " CASE WHEN p.rowid IS NULL THEN NULL"
    " WHEN p.speaker IS NULL THEN p.text ELSE p.speaker || ': ' || p.text END"
)
_EVENT_FROM = " FROM events e LEFT JOIN events p ON p.rowid = e.context_rowid"


def _event(row: apsw.SQLiteValues) -> EvidenceEvent:
    return EvidenceEvent(
        rowid=int(row[0]),  # type: ignore[arg-type]
        event_id=EventId(str(row[1])),
        session_id=SessionId(str(row[2])),
        role=Role(str(row[3])),
        text=str(row[4]),
        occurred_at=dt.datetime.fromisoformat(str(row[5])),
        speaker=None if row[6] is None else str(row[6]),
        context=None if row[7] is None else str(row[7]),
    )


def pending_events(
    connection: apsw.Connection, agent_id: AgentId, limit: int
) -> list[EvidenceEvent]:
    """Oldest events of the agent not yet extracted."""
    rows = connection.execute(
        f"SELECT {_EVENT_COLUMNS}{_EVENT_FROM}"
        " WHERE e.agent_id = ? AND e.extracted = 0 ORDER BY e.rowid LIMIT ?",
        (agent_id, limit),
    )
    return [_event(row) for row in rows]


def load_events(
    connection: apsw.Connection, agent_id: AgentId, rowids: Iterable[int]
) -> dict[int, EvidenceEvent]:
    """Events by rowid, owner-checked in SQL."""
    wanted = json.dumps(sorted(set(rowids)))
    # Driven from the candidate list: one rowid probe each, never an index scan.
    rows = connection.execute(
        f"SELECT {_EVENT_COLUMNS} FROM json_each(?) AS wanted"  # noqa: S608 - fixed column list
        " CROSS JOIN events e ON e.rowid = wanted.value"
        " LEFT JOIN events p ON p.rowid = e.context_rowid"
        " WHERE e.agent_id = ?",
        (wanted, agent_id),
    )
    return {event.rowid: event for event in map(_event, rows)}


def mark_extracted(
    connection: apsw.Connection, agent_id: AgentId, rowids: Iterable[int]
) -> None:
    connection.execute(
        "UPDATE events SET extracted = 1 WHERE agent_id = ?"
        " AND rowid IN (SELECT value FROM json_each(?))",
        (agent_id, json.dumps(sorted(set(rowids)))),
    )
