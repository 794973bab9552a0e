-- cairn schema: near-duplicate merges (the maintenance merge pass, cairn.store.merge).
-- Forward-only.

-- A merged-away claim's row is deleted (its FTS row and vector with it); what stays is
-- its identity, hashes and IDs only, pointing at the claim that now holds its sources:
-- a replay of its turn or an import of an older export finds it here and adds to the
-- survivor instead of storing it again, and forgetting the survivor (or the turns the
-- absorbed claim alone came from) tombstones these hashes too, so its words cannot come
-- back. `absorbed_rowid` is the deleted claim's rowid (never reused: claims is
-- AUTOINCREMENT), the parent of the `merge` row in `derivations`; `sources` the JSON
-- array of the event rowids the absorbed claim cited that are still stored.
CREATE TABLE claim_merges (
    agent_id        TEXT NOT NULL,
    survivor_rowid  INTEGER NOT NULL REFERENCES claims (rowid) ON DELETE CASCADE,
    absorbed_rowid  INTEGER NOT NULL,
    absorbed_id     TEXT NOT NULL,
    provenance_key  TEXT NOT NULL,
    content_hash    TEXT NOT NULL,
    sources         TEXT NOT NULL CHECK (json_valid(sources)),
    created_at      TEXT NOT NULL,
    PRIMARY KEY (agent_id, provenance_key)
) STRICT, WITHOUT ROWID;
CREATE INDEX claim_merges_survivor ON claim_merges (survivor_rowid);
CREATE INDEX claim_merges_content ON claim_merges (agent_id, content_hash);
CREATE UNIQUE INDEX claim_merges_absorbed ON claim_merges (agent_id, absorbed_id);
