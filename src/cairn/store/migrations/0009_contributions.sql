-- cairn schema: a durable record of each recall's contribution, and the attention inbox.

-- One row per recall that returned (on time, partial, pending, or completed late): what
-- was selected, dropped and allocated, by ID only (`manifest`, msgspec JSON of the
-- Manifest), written by the agent's coordinator before the answer is handed back. The
-- text of the answer is not here: it is the row of `recall_requests` with the same
-- request ID (a cache a forget, clear or suppression drops). `turn_id` is the host's key
-- for the turn the recall contributes to; `forget_epoch` the agent's epoch of the snapshot
-- it was computed on (NULL until computed). `status` is the answer's status as a string,
-- so a new status needs no schema change.
CREATE TABLE recall_records (
    seq           INTEGER PRIMARY KEY,
    agent_id      TEXT NOT NULL,
    request_id    TEXT NOT NULL,
    session_id    TEXT,
    turn_id       TEXT,
    created_at    TEXT NOT NULL,
    status        TEXT NOT NULL,
    manifest      TEXT,
    forget_epoch  INTEGER,
    UNIQUE (agent_id, request_id)
) STRICT;
-- Retention walks an agent's rows by age; listing walks them newest first.
CREATE INDEX recall_records_age ON recall_records (agent_id, created_at);
CREATE INDEX recall_records_session ON recall_records (agent_id, session_id, seq);
CREATE INDEX recall_records_turn ON recall_records (agent_id, session_id, turn_id)
    WHERE turn_id IS NOT NULL;

-- Notices for the host, unconsumed until it says so: a late recall result that became
-- ready (`request_id`), or a critical runtime event ingested (`event_rowid`: the latest
-- event of a merged notice). IDs and kinds only; `task_key` is a hash naming the task a
-- blocked or needs-input notice merges on. A notice goes with its event (forget, clear,
-- retire delete the event) and with its recall record (retention).
CREATE TABLE attention_items (
    item_id       INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id      TEXT NOT NULL,
    kind          TEXT NOT NULL
        CHECK (kind IN ('recall_ready', 'task_failed', 'task_blocked', 'needs_input')),
    session_id    TEXT,
    request_id    TEXT,
    event_rowid   INTEGER REFERENCES events (rowid) ON DELETE CASCADE,
    task_key      TEXT,
    count         INTEGER NOT NULL DEFAULT 1,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    consumed_at   TEXT,
    FOREIGN KEY (agent_id, request_id) REFERENCES recall_records (agent_id, request_id)
        ON DELETE CASCADE,
    CHECK ((kind = 'recall_ready') = (request_id IS NOT NULL)),
    CHECK ((kind = 'recall_ready') = (event_rowid IS NULL))
) STRICT;
CREATE INDEX attention_open ON attention_items (agent_id, consumed_at, updated_at);
CREATE INDEX attention_event ON attention_items (event_rowid);
CREATE INDEX attention_request ON attention_items (agent_id, request_id);
