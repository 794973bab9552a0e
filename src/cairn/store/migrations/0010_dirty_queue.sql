-- cairn schema: the dirty-work queue's order and retry state (cairn.store.dirty).
--
-- `queued` is the seed's place in its agent's queue: a new seed goes behind every seed
-- already there (one more than the agent's largest), and a seed that answered "retry"
-- goes to the back again, so a seed that keeps failing never holds up unprocessed work.
-- `attempts` counts those retries of the current generation (a new generation starts at
-- 0); after `maintenance_max_attempts` the seed is settled as terminal and logged.
-- `not_before` (domain time, ISO 8601 UTC) keeps a retried seed out of batches until its
-- backoff has passed; `last_error` is the class name of the error that made it retry,
-- never its message (messages can quote stored text).
ALTER TABLE dirty_work ADD COLUMN queued INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dirty_work ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dirty_work ADD COLUMN not_before TEXT;
ALTER TABLE dirty_work ADD COLUMN last_error TEXT;
CREATE INDEX dirty_work_queue ON dirty_work (agent_id, queued, claim_rowid);
