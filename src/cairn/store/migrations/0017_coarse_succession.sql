-- cairn schema: a claim whose valid_from is a week, month or year ("moved to Lisbon last
-- month") is ordered in its attribute chain by the latest moment the change can have
-- been: the period's end or the statement, whichever is earlier (cairn.store.succession).
-- No table changes: the Python step re-orders the chains holding such claims.
SELECT 1;
