-- cairn schema: contradictions the engine could not decide, surfaced for the user.

-- One row per pair of claims of one scope that say incompatible values of one attribute
-- and that no rule (or the text provider) could order (cairn.maintenance.challenge). IDs,
-- a reason code and the decision only: the texts are the claims' own. A claim's rows go
-- with it (forget, clear and retire delete claims, the cascade deletes its conflicts in
-- the same transaction). `claim_a` is the older rowid of the pair, so a pair is one row.
-- `kept_rowid` is the claim a resolution kept (NULL: both kept, or still open);
-- `superseded_rowid` the one it superseded, which succession then leaves out of its
-- chain so a later re-ordering cannot make the user's loser current again.
CREATE TABLE conflicts (
    conflict_id       TEXT NOT NULL UNIQUE,
    agent_id          TEXT NOT NULL,
    claim_a           INTEGER NOT NULL REFERENCES claims (rowid) ON DELETE CASCADE,
    claim_b           INTEGER NOT NULL REFERENCES claims (rowid) ON DELETE CASCADE,
    scope             TEXT NOT NULL,
    scope_key         TEXT,
    reason            TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('open', 'resolved')),
    resolution        TEXT CHECK (resolution IN ('keep_one', 'keep_both')),
    kept_rowid        INTEGER,
    superseded_rowid  INTEGER,
    created_at        TEXT NOT NULL,
    resolved_at       TEXT,
    CHECK (claim_a < claim_b),
    CHECK ((status = 'open') = (resolution IS NULL)),
    CHECK ((status = 'open') = (resolved_at IS NULL)),
    CHECK ((resolution = 'keep_one') = (kept_rowid IS NOT NULL AND superseded_rowid IS NOT NULL)),
    UNIQUE (agent_id, claim_a, claim_b)
) STRICT;
-- The cascade from a claim delete, and recall's "is this claim in an open conflict".
CREATE INDEX conflicts_claim_a ON conflicts (claim_a);
CREATE INDEX conflicts_claim_b ON conflicts (claim_b);
-- Succession's "lost a resolution" probe.
CREATE INDEX conflicts_superseded ON conflicts (agent_id, superseded_rowid)
    WHERE superseded_rowid IS NOT NULL;
