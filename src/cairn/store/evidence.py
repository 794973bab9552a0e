"""Evidence rows: idempotent intake of turns and events, verbatim (redacted) text.

Intake decides, per prepared event and inside the writer's transaction: duplicate (same ID,
same content), rejected (same ID, other content; or an edit of a message that is not
there), merged (a runtime event repeating the previous one of its session unchanged: the
earlier row counts it and keeps its ID as an alias) or ingested. An ingested event is one
row per segment; its extraction state (:class:`~cairn.store.extraction_state.
ExtractionState`) says whether the ingestion pipeline will read it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import TYPE_CHECKING

import attrs

from cairn.domain.evidence import (
    EventKind,
    EvidenceClass,
    EvidenceEvent,
    PreparedEvent,
    Role,
    SessionKind,
    Turn,
    time_problem,
)
from cairn.domain.ids import (
    SEGMENT_SEPARATOR,
    AgentId,
    EventId,
    SessionId,
    is_segment_id,
    segment_id,
)
from cairn.domain.metadata import RecallFilter, metadata_from_json
from cairn.domain.outcomes import IntakeOutcome, IntakeRejection, IntakeResult
from cairn.store.extraction_state import ExtractionState
from cairn.store.fts import index_text, namespace
from cairn.store.metadata import event_conditions, write_event_metadata
from cairn.store.sessions import is_fork_replay, rewind, session_of
from cairn.store.tombstones import (
    event_content_hash,
    event_id_hash,
    evidence_tombstoned,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import apsw

__all__ = [
    "EVENT_COLUMNS",
    "EVENT_FROM",
    "NOT_CLEARING",
    "REPLY_GAP",
    "EventFtsRow",
    # Re-exported: the results intake returns (defined in cairn.domain.outcomes).
    "IntakeOutcome",
    "IntakeResult",
    "content_hash",
    "event_from_row",
    "event_fts_row",
    "insert_events",
    "load_events",
    "mark_extracted",
    "stored_turn",
    "write_event_fts",
]

# A turn answers the one before it in its session (its context: indexed and embedded with
# it, design/recall.md) only when it came within this of it: a session picked up again
# weeks later ("I moved to Berlin" after "my favourite tea is Longjing") starts afresh,
# or the new turn would be found by the old one's words.
REPLY_GAP = dt.timedelta(hours=12)


def content_hash(event: Turn | PreparedEvent) -> str:
    """Identity of an event's (stored, so redacted) content; ``at`` counts only when the
    caller gave it, ``kind`` only when it is not a plain message."""
    fields: list[object] = [
        event.session_id,
        event.role.value,
        event.text,
        event.speaker,
        None if event.at is None else event.at.astimezone(dt.UTC).isoformat(),
    ]
    if event.kind is not EventKind.MESSAGE:
        fields.append(event.kind.value)
    canonical = json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _stored(
    connection: apsw.Connection, agent_id: AgentId, event_id: str
) -> tuple[str, bool] | None:
    """The content hash stored under ``event_id``, and whether a segment row holds it."""
    row = connection.execute(
        "SELECT content_hash, segment_of IS NOT NULL FROM events"
        " WHERE agent_id = ? AND event_id = ?"
        " UNION ALL SELECT content_hash, 0 FROM event_aliases"
        " WHERE agent_id = ? AND event_id = ? LIMIT 1",
        (agent_id, event_id, agent_id, event_id),
    ).fetchone()
    return None if row is None else (str(row[0]), bool(row[1]))


def _taken_segment_id(
    connection: apsw.Connection, agent_id: AgentId, event: PreparedEvent
) -> str | None:
    """A segment ID of ``event`` some stored row already holds (a caller's turn stored
    before segment IDs were reserved, or an imported row), or None."""
    wanted = [segment_id(event.event_id, i) for i in range(1, len(event.segments))]
    if not wanted:
        return None
    row = connection.execute(
        "SELECT event_id FROM events WHERE agent_id = ?1"
        " AND event_id IN (SELECT value FROM json_each(?2))"
        " UNION ALL SELECT event_id FROM event_aliases WHERE agent_id = ?1"
        " AND event_id IN (SELECT value FROM json_each(?2)) LIMIT 1",
        (agent_id, json.dumps(wanted)),
    ).fetchone()
    return None if row is None else str(row[0])


def _segment_id_rejection(event: PreparedEvent, taken: str | None) -> IntakeResult:
    reason = (
        f"the event ID ends with {SEGMENT_SEPARATOR!r} and a number, which names a"
        " segment of a long message; use another ID (nothing was stored)"
        if taken is None
        else f"this long message's segment ID {taken!r} is already a stored turn's ID;"
        " ingest it under another ID (nothing was stored)"
    )
    return IntakeResult(
        event.event_id,
        IntakeOutcome.REJECTED,
        reason,
        rejection=IntakeRejection.INVALID_ID,
    )


def _forgotten(
    connection: apsw.Connection, agent_id: AgentId, event: PreparedEvent
) -> bool:
    """A tombstone covers the event's ID or its (normalised) text: a replay, an import of
    an older export, or the same words under a new ID."""
    hashes = [event_id_hash(agent_id, event.event_id)]
    if event.text.strip():
        hashes.append(event_content_hash(agent_id, event.text))
        if len(event.segments) > 1:
            hashes += [event_content_hash(agent_id, part) for part in event.segments]
    return evidence_tombstoned(connection, agent_id, hashes)


def _merge_repeat(
    connection: apsw.Connection,
    agent_id: AgentId,
    event: PreparedEvent,
    digest: str,
) -> int | None:
    """A runtime event repeating the session's previous one unchanged is counted there."""
    if event.kind is EventKind.MESSAGE or event.replaces is not None:
        return None
    previous = connection.execute(
        "SELECT rowid, role, kind, text, speaker FROM events WHERE agent_id = ?"
        " AND session_id = ? AND segment_of IS NULL ORDER BY rowid DESC LIMIT 1",
        (agent_id, event.session_id),
    ).fetchone()
    if previous is None or (
        str(previous[1]),
        str(previous[2]),
        str(previous[3]),
        previous[4],
    ) != (event.role.value, event.kind.value, event.text, event.speaker):
        return None
    rowid = int(previous[0])
    connection.execute(
        "UPDATE events SET repeat_count = repeat_count + 1 WHERE rowid = ?", (rowid,)
    )
    connection.execute(
        "INSERT INTO event_aliases (agent_id, event_id, event_rowid, content_hash)"
        " VALUES (?, ?, ?, ?)",
        (agent_id, event.event_id, rowid, digest),
    )
    return rowid


def _insert_row(
    connection: apsw.Connection,
    agent_id: AgentId,
    prefix: str,
    event: PreparedEvent,
    event_id: str,
    text: str,
    digest: str,
    occurred_at: dt.datetime,
    received: str,
    state: ExtractionState,
    segment_of: int | None,
    segment_index: int,
) -> int:
    previous = connection.execute(
        "SELECT rowid, text, occurred_at FROM events WHERE agent_id = ?"
        " AND session_id = ? ORDER BY rowid DESC LIMIT 1",
        (agent_id, event.session_id),
    ).fetchone()
    if previous is not None and (
        abs(occurred_at - dt.datetime.fromisoformat(str(previous[2]))) > REPLY_GAP
    ):
        previous = None
    connection.execute(
        "INSERT INTO events (rowid, agent_id, event_id, session_id, role, kind, speaker,"
        " text, content_hash, occurred_at, received_at, context_rowid, extracted,"
        " segment_of, segment_index, redactions, evidence_class)"
        # Above every rowid a forget or clear deleted (store/forget_evidence.py).
        " VALUES (max(coalesce((SELECT max(rowid) FROM events), 0),"
        " coalesce((SELECT floor FROM rowid_floors WHERE table_name = 'events'), 0)) + 1,"
        " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            agent_id,
            event_id,
            event.session_id,
            event.role.value,
            event.kind.value,
            event.speaker,
            text,
            digest,
            occurred_at.isoformat(),
            received,
            None if previous is None else previous[0],
            state.value,
            segment_of,
            segment_index,
            len(event.redactions),
            event.evidence_class.value,
        ),
    )
    rowid = connection.last_insert_rowid()
    if event.metadata is not None:
        write_event_metadata(connection, rowid, event.metadata)
    write_event_fts(
        connection,
        rowid,
        _fts_row(
            prefix,
            event.speaker,
            text,
            occurred_at,
            None if previous is None else str(previous[1]),
        ),
    )
    return rowid


def insert_events(
    connection: apsw.Connection,
    agent_id: AgentId,
    events: Sequence[PreparedEvent | IntakeResult],
    received_at: dt.datetime,
) -> list[IntakeResult]:
    """Insert prepared (already redacted) events; the caller owns the transaction.

    A stored ID with the same content hash is a duplicate; with another hash it is rejected
    and the stored row is left as it was. An :class:`IntakeResult` in ``events`` is a
    rejection intake decided already (cairn.ingestion.intake), returned in its place.

    Segments have the key space ``<event_id>#seg<N>`` to themselves: a new turn whose ID
    has that shape is rejected (``INVALID_ID``), unless it is an imported row or a turn
    stored under that ID before; a long message one of whose segment IDs is taken is
    rejected alone, never failing the call on the ``UNIQUE`` key.
    """
    results: list[IntakeResult] = []
    received = received_at.astimezone(dt.UTC).isoformat()
    prefix = namespace(agent_id)
    sessions: dict[str, tuple[SessionKind, str | None, int | None]] = {}
    # One probe per call: most agents never forgot a turn, and their intake skips the
    # per-event tombstone lookups.
    forgetting = (
        connection.execute(
            "SELECT 1 FROM evidence_tombstones WHERE agent_id = ? LIMIT 1", (agent_id,)
        ).fetchone()
        is not None
    )
    for event in events:
        if isinstance(event, IntakeResult):
            results.append(event)
            continue
        if event.at is not None and (problem := time_problem("the time", event.at)):
            # An imported row's time (intake rejected a turn's already).
            results.append(
                IntakeResult(
                    event.event_id,
                    IntakeOutcome.REJECTED,
                    problem,
                    rejection=IntakeRejection.INVALID_TIME,
                )
            )
            continue
        if forgetting and _forgotten(connection, agent_id, event):
            results.append(
                IntakeResult(
                    event.event_id,
                    IntakeOutcome.SUPPRESSED,
                    "this turn was forgotten or cleared; it is not stored again",
                )
            )
            continue
        digest = content_hash(event)
        stored = _stored(connection, agent_id, event.event_id)
        if (
            not event.exported
            and is_segment_id(event.event_id)
            and (stored is None or stored[1])
        ):
            results.append(_segment_id_rejection(event, None))
            continue
        if stored is not None:
            if stored[0] == digest:
                results.append(IntakeResult(event.event_id, IntakeOutcome.DUPLICATE))
            else:
                results.append(
                    IntakeResult(
                        event.event_id,
                        IntakeOutcome.REJECTED,
                        "event id already stored with different content",
                        rejection=IntakeRejection.CONFLICTING_CONTENT,
                    )
                )
            continue
        taken = _taken_segment_id(connection, agent_id, event)
        if taken is not None:
            results.append(_segment_id_rejection(event, taken))
            continue
        if event.session_id not in sessions:
            sessions[event.session_id] = session_of(
                connection, agent_id, event.session_id
            )
        kind, parent, fork_rowid = sessions[event.session_id]
        if event.replaces is not None and rewind(connection, agent_id, event) is None:
            results.append(
                IntakeResult(
                    event.event_id,
                    IntakeOutcome.REJECTED,
                    f"replaced message {event.replaces!r} is not in session"
                    f" {event.session_id!r}",
                    rejection=IntakeRejection.UNKNOWN_REPLACED_EVENT,
                )
            )
            continue
        merged = _merge_repeat(connection, agent_id, event, digest)
        if merged is not None:
            results.append(
                IntakeResult(event.event_id, IntakeOutcome.MERGED, rowid=merged)
            )
            continue
        state = ExtractionState.PENDING
        if (
            kind is SessionKind.SUBAGENT
            or event.kind is EventKind.MESSAGE_DELETED
            or (
                parent is not None
                and fork_rowid is not None
                and is_fork_replay(connection, agent_id, event, parent, fork_rowid)
            )
        ):
            state = ExtractionState.SKIPPED
        occurred_at = (event.at or received_at).astimezone(dt.UTC)
        first = _insert_row(
            connection,
            agent_id,
            prefix,
            event,
            event.event_id,
            event.segments[0],
            digest,
            occurred_at,
            received,
            state,
            None,
            0,
        )
        for index, segment in enumerate(event.segments[1:], start=1):
            _insert_row(
                connection,
                agent_id,
                prefix,
                event,
                segment_id(event.event_id, index),
                segment,
                content_hash(attrs.evolve(event, text=segment)),
                occurred_at,
                received,
                state,
                first,
                index,
            )
        results.append(
            IntakeResult(
                event.event_id,
                IntakeOutcome.INGESTED,
                rowid=first,
                segments=len(event.segments),
                redactions=len(event.redactions),
            )
        )
    return results


@attrs.frozen
class EventFtsRow:
    """An event's row in ``event_fts``: its own words, and those of the turn it replies to.

    Two columns so that recall can weigh them apart (store/search.py): the preceding turn
    helps find a reply whose own words miss the question, but must not rank the reply
    above the turn that said it (design/recall.md measures the weight).
    """

    body: str
    context: str


def event_fts_row(
    agent_id: str,
    speaker: str | None,
    text: str,
    occurred_at: dt.datetime,
    context: str | None,
) -> EventFtsRow:
    """The event's row in ``event_fts``, from its stored columns and the text of the turn
    it replies to (so a damaged contentless index can be rebuilt from the events table).

    The body holds the turn with the speaker's name ("what does Ana like?") and the date
    in words ("when did…"); the context column the turn it replies to, whose words a
    question about the reply often uses (design/recall.md measures each).
    """
    return _fts_row(namespace(agent_id), speaker, text, occurred_at, context)


def write_event_fts(connection: apsw.Connection, rowid: int, row: EventFtsRow) -> None:
    connection.execute(
        "INSERT INTO event_fts (rowid, body, context) VALUES (?, ?, ?)",
        (rowid, row.body, row.context),
    )


def _fts_row(
    prefix: str,
    speaker: str | None,
    text: str,
    occurred_at: dt.datetime,
    context: str | None,
) -> EventFtsRow:
    return EventFtsRow(
        index_text(f"{speaker or ''} {text} {occurred_at:%d %B %Y}", prefix),
        index_text(context or "", prefix),
    )


def stored_turn(turn: Turn) -> PreparedEvent:
    """A turn whose text is stored text already (an import of an export): one segment,
    no redaction pass (it ran when the text was first ingested)."""
    return PreparedEvent(
        event_id=turn.event_id,
        session_id=turn.session_id,
        role=turn.role,
        kind=turn.kind,
        text=turn.text,
        segments=(turn.text,),
        at=turn.at,
        speaker=turn.speaker,
        replaces=turn.replaces,
        exported=True,
        metadata=turn.metadata,
    )


def mark_extracted(
    connection: apsw.Connection, agent_id: AgentId, rowids: Iterable[int]
) -> None:
    """Settle pending events as extracted (withdrawn or skipped ones keep their state)."""
    connection.execute(
        "UPDATE events SET extracted = ? WHERE agent_id = ? AND extracted = ?"
        " AND rowid IN (SELECT value FROM json_each(?))",
        (
            ExtractionState.EXTRACTED.value,
            agent_id,
            ExtractionState.PENDING.value,
            json.dumps(sorted(set(rowids))),
        ),
    )


EVENT_COLUMNS = (
    "e.rowid, e.event_id, e.session_id, e.role, e.text, e.occurred_at, e.speaker,"
    " CASE WHEN p.rowid IS NULL THEN NULL"
    " WHEN p.speaker IS NULL THEN p.text ELSE p.speaker || ': ' || p.text END,"
    " e.kind, e.repeat_count, e.evidence_class, e.metadata"
)
EVENT_FROM = " FROM events e LEFT JOIN events p ON p.rowid = e.context_rowid"
# ``e`` is not at or below the event cutoff of a pending clear job of its agent.
NOT_CLEARING = (
    "NOT EXISTS (SELECT 1 FROM clear_jobs j WHERE j.agent_id = e.agent_id"
    " AND j.phase <> 'done' AND j.event_cutoff IS NOT NULL AND e.rowid <= j.event_cutoff)"
)


def event_from_row(row: apsw.SQLiteValues) -> EvidenceEvent:
    return EvidenceEvent(
        rowid=int(row[0]),  # type: ignore[arg-type]
        event_id=EventId(str(row[1])),
        session_id=SessionId(str(row[2])),
        role=Role(str(row[3])),
        text=str(row[4]),
        occurred_at=dt.datetime.fromisoformat(str(row[5])),
        speaker=None if row[6] is None else str(row[6]),
        context=None if row[7] is None else str(row[7]),
        kind=EventKind(str(row[8])),
        repeat_count=int(row[9]),  # type: ignore[arg-type]
        evidence_class=_evidence_class(row[10]),
        metadata=metadata_from_json(row[11]),
    )


def _evidence_class(value: object) -> EvidenceClass:
    """A stored class; a value this cairn does not know is noise of some later kind,
    never promoted to content."""
    try:
        return EvidenceClass(str(value))
    except ValueError:
        return EvidenceClass.EMPTY


def load_events(
    connection: apsw.Connection,
    agent_id: AgentId,
    rowids: Iterable[int],
    *,
    noise: bool = True,
    recall_filter: RecallFilter | None = None,
) -> dict[int, EvidenceEvent]:
    """Events by rowid, owner-checked in SQL; withdrawn messages (edited, retried,
    deleted) and deletion markers are never served, whatever index proposed them.
    Without ``noise``, turns classified as noise are left out too (recall's candidates
    unless the caller asks for noise); with ``recall_filter``, the turns it keeps."""
    wanted = json.dumps(sorted(set(rowids)))
    only_content = "" if noise else " AND e.evidence_class = 'content'"
    filtered, filter_params = event_conditions(recall_filter)
    # Driven from the candidate list: one rowid probe each, never an index scan.
    rows = connection.execute(
        f"SELECT {EVENT_COLUMNS} FROM json_each(?) AS wanted"  # noqa: S608 - fixed column list
        " CROSS JOIN events e ON e.rowid = wanted.value"
        " LEFT JOIN events p ON p.rowid = e.context_rowid"
        " WHERE e.agent_id = ? AND e.extracted <> ? AND e.kind <> 'message_deleted'"
        # A turn under a pending clear is never served (the job deletes it).
        f" AND {NOT_CLEARING}{only_content}{filtered}",
        (wanted, agent_id, ExtractionState.WITHDRAWN.value, *filter_params),
    )
    return {event.rowid: event for event in map(event_from_row, rows)}
