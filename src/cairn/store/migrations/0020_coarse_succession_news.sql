-- cairn schema: a claim whose valid_from is a week, month or year is also placed after
-- every other value of its chain said after its period but before its statement, no more
-- than one period after the period ("I live in Porto", then minutes later "I moved to
-- Lisbon last month": the move is news to Porto), where schema 18 left it at the middle
-- of its period (cairn.store.succession).
-- No table changes: the Python step re-orders the chains holding such claims.
SELECT 1;
