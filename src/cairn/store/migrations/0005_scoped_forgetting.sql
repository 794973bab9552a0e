-- cairn schema: scoped claim identity and forgettable evidence. Forward-only.
-- The claims' provenance keys and content hashes are recomputed with their scope by the
-- Python step that follows this script in the same transaction (store/rekey.py).

-- Hash-only identity of forgotten and cleared turns: the hash of an event ID, or of a
-- forgotten turn's normalised text (store/tombstones.py). No plaintext.
CREATE TABLE evidence_tombstones (
    agent_id      TEXT NOT NULL,
    identity_hash TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (agent_id, identity_hash)
) STRICT, WITHOUT ROWID;

-- A clear deletes the turns it learned from too: those at or below this rowid. NULL for a
-- job written before this schema (it keeps the turns, as it promised when it started).
ALTER TABLE clear_jobs ADD COLUMN event_cutoff INTEGER;
ALTER TABLE clear_jobs ADD COLUMN deleted_events INTEGER NOT NULL DEFAULT 0;

-- Event rowids are never reused (the events table predates AUTOINCREMENT): a forget or
-- clear records the highest rowid it deleted here and intake numbers new rows above it, so
-- a vector or index write in flight for a forgotten turn can never attach to a later one.
CREATE TABLE rowid_floors (
    table_name    TEXT PRIMARY KEY CHECK (table_name IN ('events')),
    floor         INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Bumped by every forget, clear and topic suppression (with the late results they drop): a
-- late recall computed on an older snapshot is never stored after one of them.
ALTER TABLE agents ADD COLUMN forget_epoch INTEGER NOT NULL DEFAULT 0;
