-- cairn schema: the learning layer. A ledger of signals per claim and one belief per claim
-- (cairn.maintenance.learning derives both from the durable record; design/architecture.md,
-- "Learning"). Numbers and IDs only: no text of a claim, a turn or a query is stored here.

-- One row per observed signal. ``source_key`` names what produced it (an event rowid, a
-- recall request ID, a derivation rowid, a support period), so deriving it again changes
-- nothing. ``weight`` is the signal's strength in the belief's posterior; ``at`` is the
-- domain time of what produced it.
CREATE TABLE signals (
    rowid         INTEGER PRIMARY KEY,
    agent_id      TEXT NOT NULL,
    claim_rowid   INTEGER NOT NULL REFERENCES claims (rowid) ON DELETE CASCADE,
    kind          TEXT NOT NULL CHECK (kind IN (
        'repeated_evidence', 'retrieval_support', 'feedback_used', 'feedback_wrong',
        'contradiction', 'correction', 'stale_decay', 'promotion', 'demotion')),
    source_key    TEXT NOT NULL,
    weight        REAL NOT NULL,
    at            TEXT NOT NULL,
    UNIQUE (claim_rowid, kind, source_key)
) STRICT;
CREATE INDEX signals_agent ON signals (agent_id, claim_rowid);

-- What the signals add up to. ``confidence`` is the posterior that the claim is true (the
-- claim's own ``confidence`` is its prior and never changes; ``temporal_confidence`` is
-- about its time, not its truth, and is not touched). ``stage`` is the learning stage;
-- ``reviewed_at`` is when the pass last looked (stale review goes oldest first).
CREATE TABLE beliefs (
    claim_rowid        INTEGER PRIMARY KEY REFERENCES claims (rowid) ON DELETE CASCADE,
    agent_id           TEXT NOT NULL,
    confidence         REAL NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    usefulness         REAL NOT NULL CHECK (usefulness BETWEEN 0 AND 1),
    stability          REAL NOT NULL CHECK (stability BETWEEN 0 AND 1),
    contradiction_risk REAL NOT NULL CHECK (contradiction_risk BETWEEN 0 AND 1),
    use_count          INTEGER NOT NULL,
    stage              TEXT NOT NULL CHECK (stage IN (
        'candidate', 'probationary', 'active', 'decaying', 'superseded', 'quarantined')),
    updated_at         TEXT NOT NULL,
    reviewed_at        TEXT NOT NULL
) STRICT;
CREATE INDEX beliefs_review ON beliefs (agent_id, reviewed_at);

-- How far the learning pass has read an agent's recall records (``recall_records.seq``),
-- and how far its walk giving every claim a belief has come (claims stored before this
-- schema, or never dirty since).
CREATE TABLE learning_cursors (
    agent_id      TEXT PRIMARY KEY,
    recall_seq    INTEGER NOT NULL,
    claim_rowid   INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- The pass asks which supersede or edit edges a claim is the parent of.
CREATE INDEX derivations_parent ON derivations (agent_id, parent_rowid);
