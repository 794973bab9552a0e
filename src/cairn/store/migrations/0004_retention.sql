-- cairn schema: the owed WAL checkpoint, and bounded late recall results.

-- A purge rewrites the lexical index, but the WAL still holds older frames of the pages
-- it rewrote (and of the forgotten rows): they leave the disk only with a TRUNCATE
-- checkpoint, which cannot run inside a transaction. The purge's own transaction marks
-- the checkpoint owed here (one row; `generation` counts requests), and the row is
-- deleted after the checkpoint succeeded, only if no later purge marked it again.
CREATE TABLE wal_checkpoint_owed (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    generation    INTEGER NOT NULL,
    requested_at  TEXT NOT NULL
) STRICT;

-- Late recall results get an insertion order (`seq`), so "keep the newest N of an agent"
-- is exact even when many results share a timestamp. The old table held caches only; its
-- rows are carried over oldest first.
CREATE TABLE recall_requests_v4 (
    seq           INTEGER PRIMARY KEY,
    agent_id      TEXT NOT NULL,
    request_id    TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('pending', 'ok', 'failed')),
    result        BLOB,
    UNIQUE (agent_id, request_id)
) STRICT;
INSERT INTO recall_requests_v4 (agent_id, request_id, created_at, status, result)
    SELECT agent_id, request_id, created_at, status, result FROM recall_requests
    ORDER BY created_at, agent_id, request_id;
DROP TABLE recall_requests;
ALTER TABLE recall_requests_v4 RENAME TO recall_requests;
-- Retention walks an agent's rows by age (ties by `seq`, the implicit last column).
CREATE INDEX recall_requests_age ON recall_requests (agent_id, created_at);
