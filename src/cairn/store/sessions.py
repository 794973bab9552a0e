"""Sessions: how each is extracted, edits that rewind it, and how far it has settled.

A session is ``main`` (extracted) or ``subagent`` (recalled into, never extracted), and may
be a fork of another up to an event. An edit, retry or deletion of a message withdraws it
and re-opens the rest of its session for extraction; claims resting only on re-opened
events go (they are re-derived from what the session now says). The cursor is derived from
the events, never stored (tests/runtime/test_sessions.py).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from cairn.domain.evidence import PreparedEvent, SessionInfo, SessionKind
from cairn.errors import InvalidInputError
from cairn.store.dirty import mark_dirty
from cairn.store.entities import forget_mentions
from cairn.store.extraction_state import ExtractionState
from cairn.store.succession import chains_of, reorder_chains
from cairn.vectors.keys import EmbedTarget

if TYPE_CHECKING:
    import apsw

    from cairn.domain.ids import AgentId, SessionId

__all__ = [
    "declare_session",
    "is_fork_replay",
    "rewind",
    "session_cursor",
    "session_of",
]


def declare_session(
    connection: apsw.Connection, agent_id: AgentId, info: SessionInfo
) -> None:
    """Record how a session is extracted: main or subagent, and where a fork starts.

    Raises :class:`InvalidInputError` when the fork point is not a stored event of the
    parent session.
    """
    fork_rowid: int | None = None
    parent: str | None = None
    if info.forked_from is not None:
        parent, event_id = info.forked_from
        row = connection.execute(
            "SELECT rowid FROM events WHERE agent_id = ? AND session_id = ?"
            " AND event_id = ?",
            (agent_id, parent, event_id),
        ).fetchone()
        if row is None:
            raise InvalidInputError(
                f"fork point {event_id!r} is not an event of session {parent!r}"
            )
        fork_rowid = int(row[0])
    if info.kind is SessionKind.SUBAGENT:
        # Declared late: what the session already holds is not extracted either, also
        # not what a batch is extracting now: taken out of it, so that batch's commit
        # finds its events changed and is refused, as after an edit.
        connection.execute(
            "UPDATE events SET extracted = ?, batch_id = NULL WHERE agent_id = ?"
            " AND session_id = ? AND extracted = ?",
            (
                ExtractionState.SKIPPED.value,
                agent_id,
                info.session_id,
                ExtractionState.PENDING.value,
            ),
        )
    connection.execute(
        "INSERT INTO sessions (agent_id, session_id, kind, parent_session_id, fork_rowid)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent_id, session_id) DO UPDATE SET"
        " kind = excluded.kind, parent_session_id = excluded.parent_session_id,"
        " fork_rowid = excluded.fork_rowid",
        (agent_id, info.session_id, info.kind.value, parent, fork_rowid),
    )


def session_of(
    connection: apsw.Connection, agent_id: AgentId, session_id: SessionId
) -> tuple[SessionKind, str | None, int | None]:
    row = connection.execute(
        "SELECT kind, parent_session_id, fork_rowid FROM sessions"
        " WHERE agent_id = ? AND session_id = ?",
        (agent_id, session_id),
    ).fetchone()
    if row is None:
        connection.execute(
            "INSERT INTO sessions (agent_id, session_id, kind) VALUES (?, ?, 'main')",
            (agent_id, session_id),
        )
        return SessionKind.MAIN, None, None
    return (
        SessionKind(str(row[0])),
        None if row[1] is None else str(row[1]),
        None if row[2] is None else int(row[2]),
    )


def is_fork_replay(
    connection: apsw.Connection,
    agent_id: AgentId,
    event: PreparedEvent,
    parent: str,
    fork_rowid: int,
) -> bool:
    """Whether ``event`` repeats the parent's message at the same position of the prefix."""
    (position,) = connection.execute(
        "SELECT count(*) FROM events WHERE agent_id = ? AND session_id = ?"
        " AND segment_of IS NULL",
        (agent_id, event.session_id),
    ).fetchone()  # type: ignore[misc]
    row = connection.execute(
        "SELECT role, text FROM events WHERE agent_id = ? AND session_id = ?"
        " AND segment_of IS NULL AND rowid <= ? ORDER BY rowid LIMIT 1 OFFSET ?",
        (agent_id, parent, fork_rowid, position),
    ).fetchone()
    return row is not None and (str(row[0]), str(row[1])) == (
        event.role.value,
        event.text,
    )


def rewind(
    connection: apsw.Connection, agent_id: AgentId, event: PreparedEvent
) -> int | None:
    """Withdraw the replaced message and re-open extraction of its session from there.

    Claims citing only re-opened events are deleted (they are re-derived from what the
    session now says); claims with other sources lose just these sources; the session's
    cursor falls back with its re-opened events. Returns the replaced row, or ``None``
    when it is not a message of this session.
    """
    row = connection.execute(
        "SELECT rowid FROM events WHERE agent_id = ? AND session_id = ? AND event_id = ?"
        " AND segment_of IS NULL",
        (agent_id, event.session_id, event.replaces),
    ).fetchone()
    if row is None:
        return None
    first = int(row[0])
    connection.execute(
        "UPDATE events SET extracted = ?, batch_id = NULL"
        " WHERE agent_id = ? AND (rowid = ? OR segment_of = ?)",
        (ExtractionState.WITHDRAWN.value, agent_id, first, first),
    )
    reopened = [
        int(r[0])
        for r in connection.execute(
            "SELECT rowid FROM events WHERE agent_id = ? AND session_id = ? AND rowid >= ?"
            " AND extracted IN (?, ?)",
            (
                agent_id,
                event.session_id,
                first,
                ExtractionState.PENDING.value,
                ExtractionState.EXTRACTED.value,
            ),
        )
    ]
    touched = json.dumps([*reopened, first])
    # What the withdrawn turn said of entities goes now; re-opened turns are read again.
    forget_mentions(
        connection,
        [
            *reopened,
            *(
                int(r[0])
                for r in connection.execute(
                    "SELECT rowid FROM events WHERE rowid = ?1 OR segment_of = ?1",
                    (first,),
                )
            ),
        ],
    )
    connection.execute(
        "UPDATE events SET extracted = ?, batch_id = NULL"
        " WHERE rowid IN (SELECT value FROM json_each(?))",
        (ExtractionState.PENDING.value, json.dumps(reopened)),
    )
    citing = [
        int(r[0])
        for r in connection.execute(
            "SELECT DISTINCT claim_rowid FROM claim_sources"
            " WHERE event_rowid IN (SELECT value FROM json_each(?))",
            (touched,),
        )
    ]
    # A claim the user archived from a re-opened (not the withdrawn) turn keeps its row
    # and sources: extracting the turn again finds its provenance and adds nothing, so
    # the archive outlives an edit earlier in the session
    # (tests/runtime/test_edit_archived.py).
    kept = json.dumps(
        [
            int(r[0])
            for r in connection.execute(
                "SELECT rowid FROM claims WHERE lifecycle = 'archived'"
                " AND rowid IN (SELECT value FROM json_each(?1))"
                " AND NOT EXISTS (SELECT 1 FROM claim_sources s JOIN events e"
                "  ON e.rowid = s.event_rowid WHERE s.claim_rowid = claims.rowid"
                "  AND (e.rowid = ?2 OR e.segment_of = ?2))",
                (json.dumps(citing), first),
            )
        ]
    )
    connection.execute(
        "DELETE FROM claim_sources WHERE event_rowid IN (SELECT value FROM json_each(?))"
        " AND claim_rowid NOT IN (SELECT value FROM json_each(?))",
        (touched, kept),
    )
    chains = chains_of(connection, citing)
    connection.execute(
        "DELETE FROM claims WHERE agent_id = ? AND rowid IN (SELECT value FROM json_each(?))"
        " AND NOT EXISTS (SELECT 1 FROM claim_sources s WHERE s.claim_rowid = claims.rowid)",
        (agent_id, json.dumps(citing)),
    )
    # A deleted claim's dirty row goes with it; one that kept other sources changed.
    connection.execute(
        "DELETE FROM dirty_work WHERE agent_id = ? AND claim_rowid IN"
        " (SELECT value FROM json_each(?)) AND NOT EXISTS"
        " (SELECT 1 FROM claims c WHERE c.rowid = dirty_work.claim_rowid)",
        (agent_id, json.dumps(citing)),
    )
    mark_dirty(
        connection,
        agent_id,
        [
            int(r[0])
            for r in connection.execute(
                "SELECT rowid FROM claims WHERE agent_id = ?"
                " AND rowid IN (SELECT value FROM json_each(?))",
                (agent_id, json.dumps(citing)),
            )
        ],
    )
    # What the session says now is extracted again; until then the chains hold what
    # is left.
    reorder_chains(connection, agent_id, chains, None)
    return first


def session_cursor(
    connection: apsw.Connection, agent_id: AgentId, session_id: str
) -> str | None:
    """The ID of the session's last event before its first unsettled one, or ``None``.

    Settled means extracted *and* embedded (or never to be extracted: skipped,
    withdrawn), so the cursor moves only after all work owned for an event is done, and
    falls back when an edit re-opens the session. Derived on every call, never stored,
    so it cannot drift from the events it describes.
    """
    row = connection.execute(
        "SELECT e.event_id FROM events e WHERE e.agent_id = ?1 AND e.session_id = ?2"
        " AND e.segment_of IS NULL AND e.rowid < coalesce("
        "  (SELECT min(coalesce(u.segment_of, u.rowid)) FROM events u WHERE u.agent_id = ?1 AND u.session_id = ?2"
        "   AND (u.extracted = ?3 OR (u.extracted = ?4 AND NOT EXISTS (SELECT 1"
        "    FROM embeddings m WHERE m.target = ?5 AND m.target_rowid = u.rowid)))),"
        "  9223372036854775807)"
        " ORDER BY e.rowid DESC LIMIT 1",
        (
            agent_id,
            session_id,
            ExtractionState.PENDING.value,
            ExtractionState.EXTRACTED.value,
            EmbedTarget.EVENT.value,
        ),
    ).fetchone()
    return None if row is None else str(row[0])
