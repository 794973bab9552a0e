-- Persona and working projections (cairn.store.projections): which agent-scope claims
-- each section shows, in order. Claim rowids only, never text: the text is read from the
-- claim at recall time, so deleting a claim (forget, clear, retire, repair) takes its
-- entries with it by cascade and no forgotten text can survive here. Rebuilt by the
-- persona maintenance pass (cairn.maintenance.persona) when agent-scope claims are dirty.
CREATE TABLE projection_entries (
    agent_id      TEXT NOT NULL,
    section       TEXT NOT NULL CHECK (section IN
        ('current_state', 'stable', 'recent_events', 'plans', 'reflections')),
    position      INTEGER NOT NULL CHECK (position >= 0),
    claim_rowid   INTEGER NOT NULL REFERENCES claims (rowid) ON DELETE CASCADE,
    PRIMARY KEY (agent_id, section, position)
) STRICT, WITHOUT ROWID;
-- The cascade finds a deleted claim's entries without a scan.
CREATE INDEX projection_entries_claim ON projection_entries (claim_rowid);

-- A rebuild reads each kind's newest active agent-scope claims: an index walk, not a scan
-- of the agent's claims.
CREATE INDEX claims_projection ON claims (agent_id, kind, evidence_at)
    WHERE scope = 'agent' AND lifecycle = 'active';

-- Agents that already hold claims get their first projection at the next maintenance
-- pass: one dirty claim each is enough to make the persona pass rebuild.
INSERT OR IGNORE INTO dirty_work (agent_id, claim_rowid, generation)
    SELECT agent_id, max(rowid), 1 FROM claims
    WHERE scope = 'agent' AND lifecycle = 'active' GROUP BY agent_id;
