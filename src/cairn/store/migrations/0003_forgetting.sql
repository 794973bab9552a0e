-- cairn schema: forgetting. Lexical-index purges and the repair override of the clear fence.

-- A delete from a contentless FTS5 table only marks the row deleted; its tokens stay in the
-- index pages until the segment is merged. A forget or clear requests a purge here, in its
-- own transaction, and maintenance (or the next start) rewrites the index ('optimize'), so
-- forgotten text leaves the file even after a crash in between.
CREATE TABLE fts_purges (
    index_name    TEXT PRIMARY KEY CHECK (index_name IN ('claim_fts', 'event_fts')),
    requested_at  TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- Startup repairs run while a clear may be pending: inside their own transaction they
-- insert a row here (never committed: the same transaction deletes it), which lets the
-- fence triggers pass for that transaction only.
CREATE TABLE clear_fence_override (
    agent_id      TEXT PRIMARY KEY
) STRICT, WITHOUT ROWID;

DROP TRIGGER claims_clear_fence_insert;
DROP TRIGGER claims_clear_fence_update;
CREATE TRIGGER claims_clear_fence_insert BEFORE INSERT ON claims
WHEN EXISTS (SELECT 1 FROM clear_jobs WHERE agent_id = new.agent_id AND phase <> 'done')
    AND NOT EXISTS (SELECT 1 FROM clear_fence_override WHERE agent_id = new.agent_id)
BEGIN
    SELECT RAISE(ABORT, 'cairn: clear job pending for agent');
END;
CREATE TRIGGER claims_clear_fence_update BEFORE UPDATE ON claims
WHEN EXISTS (SELECT 1 FROM clear_jobs WHERE agent_id = new.agent_id AND phase <> 'done')
    AND NOT EXISTS (SELECT 1 FROM clear_fence_override WHERE agent_id = new.agent_id)
BEGIN
    SELECT RAISE(ABORT, 'cairn: clear job pending for agent');
END;

-- Evidence events a forgotten claim cited: still stored verbatim (evidence is the record
-- of what happened), but no longer recalled, so the forgotten statement does not come
-- back as the turn it was extracted from.
CREATE TABLE hidden_evidence (
    agent_id      TEXT NOT NULL,
    event_rowid   INTEGER NOT NULL,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (agent_id, event_rowid)
) STRICT, WITHOUT ROWID;
