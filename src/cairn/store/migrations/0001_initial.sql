-- cairn schema v1. Forward-only: later versions add files, never edit this one.

CREATE TABLE agents (
    agent_id      TEXT PRIMARY KEY,
    config_epoch  INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL
) STRICT;

-- Evidence: every turn and runtime event, verbatim (after redaction).
CREATE TABLE events (
    rowid         INTEGER PRIMARY KEY,
    agent_id      TEXT NOT NULL,
    event_id      TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'event')),
    kind          TEXT NOT NULL DEFAULT 'message',
    speaker       TEXT,
    text          TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    occurred_at   TEXT NOT NULL,
    received_at   TEXT NOT NULL,
    -- 0 pending, 1 extracted, 2 skipped (never extracted), 3 withdrawn (edited/deleted).
    extracted     INTEGER NOT NULL DEFAULT 0 CHECK (extracted IN (0, 1, 2, 3)),
    -- Unchanged repeats of a runtime event are counted here (their IDs in event_aliases).
    repeat_count  INTEGER NOT NULL DEFAULT 1,
    -- A long message is one row per segment: later ones point at the first.
    segment_of    INTEGER,
    segment_index INTEGER NOT NULL DEFAULT 0,
    -- How many secrets intake replaced by markers (the kinds are not kept).
    redactions    INTEGER NOT NULL DEFAULT 0,
    -- The extraction batch currently holding this event (event_batches, schema v2).
    batch_id      INTEGER,
    -- The turn before this one in its session at intake: a reply is indexed and embedded
    -- together with what it replies to (design/recall.md).
    context_rowid INTEGER,
    UNIQUE (agent_id, event_id)
) STRICT;
CREATE INDEX events_pending ON events (agent_id, extracted, rowid);
CREATE INDEX events_session ON events (agent_id, session_id, rowid);

-- AUTOINCREMENT: a forgotten or cleared claim's rowid is never reused, so a vector or FTS
-- write still in flight for it can never attach to a later claim.
CREATE TABLE claims (
    rowid               INTEGER PRIMARY KEY AUTOINCREMENT,
    claim_id            TEXT NOT NULL UNIQUE,
    agent_id            TEXT NOT NULL,
    kind                TEXT NOT NULL,
    lifecycle           TEXT NOT NULL,
    origin              TEXT NOT NULL,
    text                TEXT NOT NULL,
    subject             TEXT,
    predicate           TEXT,
    confidence          REAL NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    temporal_confidence REAL CHECK (temporal_confidence BETWEEN 0 AND 1),
    valid_from          TEXT,
    valid_until         TEXT,
    time_precision      TEXT,
    timezone            TEXT,
    scope               TEXT NOT NULL CHECK (scope IN ('agent', 'session', 'user', 'project')),
    scope_key           TEXT,
    revision            INTEGER NOT NULL DEFAULT 1,
    provenance_key      TEXT NOT NULL,
    content_hash        TEXT NOT NULL,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    CHECK ((scope = 'agent') = (scope_key IS NULL)),
    UNIQUE (agent_id, provenance_key)
) STRICT;
CREATE INDEX claims_subject ON claims (agent_id, subject, predicate) WHERE subject IS NOT NULL;
CREATE INDEX claims_content ON claims (agent_id, content_hash);

CREATE TABLE claim_sources (
    claim_rowid   INTEGER NOT NULL REFERENCES claims (rowid) ON DELETE CASCADE,
    event_rowid   INTEGER NOT NULL REFERENCES events (rowid) ON DELETE CASCADE,
    span_start    INTEGER NOT NULL,
    span_end      INTEGER NOT NULL,
    PRIMARY KEY (claim_rowid, event_rowid, span_start)
) STRICT, WITHOUT ROWID;
CREATE INDEX claim_sources_event ON claim_sources (event_rowid);

-- Lexical projections. Contentless (the text lives in claims/events); the indexed text is
-- the CJK-bigram normal form of cairn.store.fts with every token namespaced by agent (and,
-- for claims, scope), so owner and scope predicates hold inside the FTS query, before LIMIT.
CREATE VIRTUAL TABLE claim_fts USING fts5 (
    body,
    content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE claim_fts_vocab USING fts5vocab (claim_fts, 'row');

CREATE VIRTUAL TABLE event_fts USING fts5 (
    body,
    content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE event_fts_vocab USING fts5vocab (event_fts, 'row');

CREATE TRIGGER claims_fts_delete AFTER DELETE ON claims BEGIN
    DELETE FROM claim_fts WHERE rowid = old.rowid;
    DELETE FROM embeddings WHERE target = 'claim' AND target_rowid = old.rowid;
END;
CREATE TRIGGER events_fts_delete AFTER DELETE ON events BEGIN
    DELETE FROM event_fts WHERE rowid = old.rowid;
    DELETE FROM embeddings WHERE target = 'event' AND target_rowid = old.rowid;
END;

-- Vectors as blobs with their identity, so the vector projection can be rebuilt without
-- calling a provider.
CREATE TABLE vector_identity (
    identity_key  TEXT PRIMARY KEY,
    provider      TEXT NOT NULL,
    model         TEXT NOT NULL,
    dimension     INTEGER NOT NULL,
    metric        TEXT NOT NULL
) STRICT;
CREATE TABLE embeddings (
    identity_key  TEXT NOT NULL REFERENCES vector_identity (identity_key),
    target        TEXT NOT NULL CHECK (target IN ('claim', 'event')),
    target_rowid  INTEGER NOT NULL,
    agent_id      TEXT NOT NULL,
    vector        BLOB NOT NULL,
    PRIMARY KEY (identity_key, target, target_rowid)
) STRICT;
CREATE INDEX embeddings_agent ON embeddings (agent_id, identity_key);
-- The delete triggers find a row's vectors by target alone (any identity).
CREATE INDEX embeddings_target ON embeddings (target, target_rowid);

CREATE TABLE directives (
    rowid         INTEGER PRIMARY KEY,
    directive_id  TEXT NOT NULL UNIQUE,
    agent_id      TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('instruction', 'suppress_topic')),
    text          TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('draft', 'active', 'revoked')),
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
) STRICT;
CREATE INDEX directives_active ON directives (agent_id, status, updated_at);

CREATE TABLE derivations (
    rowid         INTEGER PRIMARY KEY,
    agent_id      TEXT NOT NULL,
    parent_rowid  INTEGER NOT NULL,
    child_rowid   INTEGER NOT NULL,
    relation      TEXT NOT NULL CHECK (relation IN ('supersede', 'merge', 'reflection', 'edit')),
    created_at    TEXT NOT NULL
) STRICT;
CREATE INDEX derivations_agent ON derivations (agent_id, child_rowid);

-- Hash-only identity of forgotten claims: no plaintext.
CREATE TABLE tombstones (
    agent_id        TEXT NOT NULL,
    provenance_hash TEXT NOT NULL,
    content_hash    TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (agent_id, provenance_hash, content_hash)
) STRICT, WITHOUT ROWID;
CREATE INDEX tombstones_content ON tombstones (agent_id, content_hash);

CREATE TABLE dirty_work (
    agent_id      TEXT NOT NULL,
    claim_rowid   INTEGER NOT NULL,
    generation    INTEGER NOT NULL,
    PRIMARY KEY (agent_id, claim_rowid)
) STRICT, WITHOUT ROWID;

CREATE TABLE clear_jobs (
    job_id          INTEGER PRIMARY KEY,
    agent_id        TEXT NOT NULL,
    rowid_cutoff    INTEGER NOT NULL,
    created_at      TEXT NOT NULL,
    phase           TEXT NOT NULL CHECK (phase IN ('claims', 'lineage', 'vectors', 'done')),
    deleted_claims  INTEGER NOT NULL DEFAULT 0,
    -- 'retire' runs the same phases, then deletes the whole namespace (this row included).
    purpose         TEXT NOT NULL DEFAULT 'clear' CHECK (purpose IN ('clear', 'retire'))
) STRICT;
CREATE INDEX clear_jobs_agent ON clear_jobs (agent_id, phase);

-- While a clear job is pending, no code path may add or change the agent's claims.
CREATE TRIGGER claims_clear_fence_insert BEFORE INSERT ON claims
WHEN EXISTS (SELECT 1 FROM clear_jobs WHERE agent_id = new.agent_id AND phase <> 'done')
BEGIN
    SELECT RAISE(ABORT, 'cairn: clear job pending for agent');
END;
CREATE TRIGGER claims_clear_fence_update BEFORE UPDATE ON claims
WHEN EXISTS (SELECT 1 FROM clear_jobs WHERE agent_id = new.agent_id AND phase <> 'done')
BEGIN
    SELECT RAISE(ABORT, 'cairn: clear job pending for agent');
END;

CREATE TABLE recall_requests (
    agent_id      TEXT NOT NULL,
    request_id    TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('pending', 'ok', 'failed')),
    result        BLOB,
    PRIMARY KEY (agent_id, request_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE audit (
    rowid         INTEGER PRIMARY KEY,
    agent_id      TEXT NOT NULL,
    at            TEXT NOT NULL,
    action        TEXT NOT NULL,
    detail        TEXT NOT NULL
) STRICT;
CREATE INDEX audit_agent ON audit (agent_id, at);
