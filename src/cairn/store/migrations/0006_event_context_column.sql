-- v6: an event's preceding turn gets its own column in event_fts, so recall can weigh it
-- below the turn's own words (store/search.py). FTS is a projection of the events table:
-- the table is created in its new shape here and refilled from the events by this
-- migration's Python step (store/integrity.py::refill_event_fts).
DROP TABLE event_fts;
CREATE VIRTUAL TABLE event_fts USING fts5 (
    body,
    context,
    content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Replies by the turn they answer: search (store/search.py) and forgetting
-- (store/forget_evidence.py) look them up; covering, so the events rows are not read.
CREATE INDEX events_context ON events (context_rowid);
