-- cairn schema v2: durable ingestion. Forward-only.

-- Extraction batches: a lease with a token, attempts with backoff, a receipt once committed.
-- Lease deadlines and retry times are on the trio clock of the runtime that wrote them, so
-- a starting runtime releases every lease and retry time it finds (store/batches.py).
CREATE TABLE event_batches (
    batch_id        INTEGER PRIMARY KEY,
    agent_id        TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('open', 'committed', 'dead')),
    trigger         TEXT NOT NULL,
    lease_token     TEXT,
    lease_deadline  REAL,
    committed_token TEXT,
    receipt         TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    retry_at        REAL NOT NULL DEFAULT 0,
    last_error      TEXT,
    created_at      TEXT NOT NULL,
    settled_at      TEXT,
    CHECK ((status = 'committed') = (receipt IS NOT NULL))
) STRICT;
CREATE INDEX event_batches_agent ON event_batches (agent_id, status, batch_id);
CREATE INDEX events_batch ON events (batch_id) WHERE batch_id IS NOT NULL;

-- IDs of unchanged repeats merged into an earlier event (idempotency still holds for them).
CREATE TABLE event_aliases (
    agent_id      TEXT NOT NULL,
    event_id      TEXT NOT NULL,
    event_rowid   INTEGER NOT NULL REFERENCES events (rowid) ON DELETE CASCADE,
    content_hash  TEXT NOT NULL,
    PRIMARY KEY (agent_id, event_id)
) STRICT, WITHOUT ROWID;

-- Sessions: how they are extracted. (How far a session has settled is derived, never
-- stored: store/sessions.py::session_cursor.)
CREATE TABLE sessions (
    agent_id          TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('main', 'subagent')),
    parent_session_id TEXT,
    fork_rowid        INTEGER,
    PRIMARY KEY (agent_id, session_id)
) STRICT, WITHOUT ROWID;

-- "Does this event have a vector yet?" for the session cursor is served by
-- embeddings_target (0001_initial.sql), which the delete triggers also use.
