-- cairn schema: caller metadata (cairn.domain.metadata) on turns and claims.
-- `metadata` holds the whole value as compact JSON (tags, importance, extra), NULL when
-- the caller gave none and for every row stored before. The tags are also rows of
-- `event_tags` / `claim_tags`, so a recall's tag filter is an index probe inside the
-- candidate query, before its LIMIT; they go with their row by cascade (forget, clear,
-- retire, repair).
-- The two columns are added by the Python step (cairn.store.metadata.add_metadata_columns),
-- which skips a column already there.
CREATE TABLE IF NOT EXISTS event_tags (
    event_rowid INTEGER NOT NULL REFERENCES events (rowid) ON DELETE CASCADE,
    tag         TEXT NOT NULL,
    PRIMARY KEY (event_rowid, tag)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS event_tags_tag ON event_tags (tag, event_rowid);
CREATE TABLE IF NOT EXISTS claim_tags (
    claim_rowid INTEGER NOT NULL REFERENCES claims (rowid) ON DELETE CASCADE,
    tag         TEXT NOT NULL,
    PRIMARY KEY (claim_rowid, tag)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS claim_tags_tag ON claim_tags (tag, claim_rowid);
