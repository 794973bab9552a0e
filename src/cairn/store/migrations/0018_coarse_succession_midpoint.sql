-- cairn schema: a claim whose valid_from is a week, month or year is placed in its
-- attribute chain at the middle of what is left of its period once the chain is taken
-- in (not after its statement, after every other value said within the period before
-- it), where schema 17 placed it at the latest moment (cairn.store.succession).
-- No table changes: the Python step re-orders the chains holding such claims.
SELECT 1;
