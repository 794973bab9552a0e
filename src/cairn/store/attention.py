"""The attention inbox (``attention_items``, schema 0009): notices the host polls.

A notice is written in the transaction that makes it true: a late recall result stored
(``recall_ready``), or a critical runtime event ingested (``task_failed``,
``task_blocked``, ``needs_input``). Rows hold IDs and kinds, never text: reading loads the
event through the owner-checked loader recall uses (cairn.store.evidence.load_events), and
drops a notice whose event is withdrawn, hidden or under a pending clear. A forgotten,
cleared or retired event takes its notice with it (``ON DELETE CASCADE``); a forget, clear
or suppression drops ``recall_ready`` notices with the late results they point at.

Repeated blocked and needs-input notices of one task in one session are one unconsumed
item with a count and the latest event. The task is the event's ``speaker`` (hosts name
the task there) or, without one, its text; only a hash of it is stored.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import TYPE_CHECKING

import attrs

from cairn.domain.evidence import EventKind
from cairn.domain.outcomes import IntakeOutcome, IntakeResult

if TYPE_CHECKING:
    from collections.abc import Sequence

    import apsw

    from cairn.domain.evidence import PreparedEvent
    from cairn.domain.ids import AgentId

__all__ = [
    "NOTICE_KINDS",
    "RECALL_READY",
    "StoredNotice",
    "add_event_notices",
    "add_recall_notice",
    "consume_notices",
    "drop_recall_notices",
    "open_notices",
    "prune_notices",
]

# The event kinds that make a notice (the notice's kind is the event's).
NOTICE_KINDS = frozenset(
    {EventKind.TASK_FAILED, EventKind.TASK_BLOCKED, EventKind.NEEDS_INPUT}
)
RECALL_READY = "recall_ready"
# Kinds whose repeats for the same task and session merge into one item.
_MERGED_KINDS = frozenset({EventKind.TASK_BLOCKED, EventKind.NEEDS_INPUT})


@attrs.frozen
class StoredNotice:
    """An unconsumed row of the inbox, IDs only."""

    item_id: int
    kind: str
    session_id: str | None
    request_id: str | None
    event_rowid: int | None
    count: int
    created_at: str
    updated_at: str


def add_event_notices(
    connection: apsw.Connection,
    agent_id: AgentId,
    events: Sequence[PreparedEvent | IntakeResult],
    results: Sequence[IntakeResult],
    now: dt.datetime,
) -> int:
    """Notices for the critical events one intake stored (or merged as an unchanged
    repeat); the caller owns the transaction. Returns how many items were touched."""
    touched = 0
    for event, result in zip(events, results, strict=True):
        if isinstance(event, IntakeResult):
            continue  # rejected before the store saw it
        kind = event.kind
        if kind not in NOTICE_KINDS or result.rowid is None:
            continue
        if result.outcome not in (IntakeOutcome.INGESTED, IntakeOutcome.MERGED):
            continue
        _add_event_notice(connection, agent_id, kind, event, result.rowid, now)
        touched += 1
    return touched


def _add_event_notice(
    connection: apsw.Connection,
    agent_id: AgentId,
    kind: EventKind,
    event: PreparedEvent,
    event_rowid: int,
    now: dt.datetime,
) -> None:
    stamp = _stamp(now)
    task = _task_key(agent_id, kind, event)
    if kind in _MERGED_KINDS:
        row = connection.execute(
            "SELECT item_id FROM attention_items WHERE agent_id = ?"
            " AND consumed_at IS NULL AND kind = ? AND session_id = ? AND task_key = ?"
            " ORDER BY item_id DESC LIMIT 1",
            (agent_id, kind.value, event.session_id, task),
        ).fetchone()
    else:
        # A failure is its own notice; only its unchanged repeat (the same event row)
        # counts on it.
        row = connection.execute(
            "SELECT item_id FROM attention_items WHERE agent_id = ?"
            " AND consumed_at IS NULL AND kind = ? AND event_rowid = ?"
            " ORDER BY item_id DESC LIMIT 1",
            (agent_id, kind.value, event_rowid),
        ).fetchone()
    if row is not None:
        connection.execute(
            "UPDATE attention_items SET count = count + 1, event_rowid = ?,"
            " updated_at = ? WHERE item_id = ?",
            (event_rowid, stamp, row[0]),
        )
        return
    connection.execute(
        "INSERT INTO attention_items (agent_id, kind, session_id, event_rowid, task_key,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (agent_id, kind.value, event.session_id, event_rowid, task, stamp, stamp),
    )


def add_recall_notice(
    connection: apsw.Connection,
    agent_id: AgentId,
    request_id: str,
    session_id: str | None,
    now: dt.datetime,
) -> None:
    """A late recall result was stored and can be fetched (its record exists)."""
    stamp = _stamp(now)
    connection.execute(
        "INSERT INTO attention_items (agent_id, kind, session_id, request_id,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
        (
            agent_id,
            RECALL_READY,
            session_id,
            request_id,
            stamp,
            stamp,
        ),
    )


def drop_recall_notices(connection: apsw.Connection, agent_id: AgentId) -> None:
    """With the late results a forget, clear or suppression drops."""
    connection.execute(
        "DELETE FROM attention_items WHERE agent_id = ? AND kind = ?",
        (agent_id, RECALL_READY),
    )


def open_notices(
    connection: apsw.Connection,
    agent_id: AgentId,
    *,
    session_id: str | None,
    limit: int,
) -> list[StoredNotice]:
    """Unconsumed notices, newest first (the caller loads their events, owner-checked)."""
    rows = connection.execute(
        "SELECT a.item_id, a.kind, a.session_id, a.request_id, a.event_rowid, a.count,"
        " a.created_at, a.updated_at FROM attention_items a"
        " WHERE a.agent_id = ? AND a.consumed_at IS NULL"
        " AND (? IS NULL OR a.session_id = ?)"
        # A late result pruned by retention can no longer be fetched: not shown.
        " AND (a.request_id IS NULL OR EXISTS (SELECT 1 FROM recall_requests r"
        " WHERE r.agent_id = a.agent_id AND r.request_id = a.request_id"
        " AND r.status = 'ok'))"
        " ORDER BY a.updated_at DESC, a.item_id DESC LIMIT ?",
        (agent_id, session_id, session_id, limit),
    )
    return [
        StoredNotice(
            item_id=int(item_id),
            kind=str(kind),
            session_id=None if session is None else str(session),
            request_id=None if request_id is None else str(request_id),
            event_rowid=None if rowid is None else int(rowid),
            count=int(count),
            created_at=str(first),
            updated_at=str(latest),
        )
        for item_id, kind, session, request_id, rowid, count, first, latest in rows
    ]


def consume_notices(
    connection: apsw.Connection,
    agent_id: AgentId,
    item_ids: Sequence[int],
    now: dt.datetime,
) -> int:
    """Mark the agent's items consumed; another agent's IDs are not touched."""
    connection.execute(
        "UPDATE attention_items SET consumed_at = ? WHERE agent_id = ?"
        " AND consumed_at IS NULL AND item_id IN (SELECT value FROM json_each(?))",
        (_stamp(now), agent_id, json.dumps(sorted(set(item_ids)))),
    )
    return connection.changes()


def prune_notices(
    connection: apsw.Connection, agent_id: AgentId, cutoff: dt.datetime, limit: int
) -> int:
    """Delete up to ``limit`` of the agent's notices last touched before ``cutoff``."""
    connection.execute(
        "DELETE FROM attention_items WHERE item_id IN (SELECT item_id FROM"
        " attention_items WHERE agent_id = ? AND updated_at < ? ORDER BY item_id LIMIT ?)",
        (agent_id, _stamp(cutoff), limit),
    )
    return connection.changes()


def _task_key(agent_id: AgentId, kind: EventKind, event: PreparedEvent) -> str:
    task = event.speaker or " ".join(event.text.split())
    canonical = json.dumps(
        [agent_id, kind.value, event.session_id, task], ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat()
