-- Succession by evidence time (cairn.store.succession). ``evidence_at``: when the claim's
-- evidence says its value took effect (valid_from, else its earliest source turn, else when
-- it was stored; a plan's or event's is always its statement's). ``superseded_at``: until
-- when a superseded claim held, the evidence time of the value after it. The Python step
-- fills both and re-orders every attribute chain by evidence time.
ALTER TABLE claims ADD COLUMN evidence_at TEXT;
ALTER TABLE claims ADD COLUMN superseded_at TEXT;
