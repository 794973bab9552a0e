-- cairn schema: the evidence class of each stored turn (cairn.ingestion.classify).
-- `content` is recalled; any other value names a kind of noise (heartbeat,
-- acknowledgement, log_line, traceback, progress, empty): the row stays stored, exported,
-- forgettable and in lineage, but recall skips it unless asked for noise. Every row
-- stored before this schema is content: nothing recalled before disappears.
ALTER TABLE events ADD COLUMN evidence_class TEXT NOT NULL DEFAULT 'content';
-- Only noise rows are indexed, so the count in status reads a few entries, not the table.
CREATE INDEX events_noise ON events (agent_id) WHERE evidence_class <> 'content';
