-- cairn schema: what a recurring claim repeats on. Forward-only.
-- One compact JSON object (domain/temporal.py::Recurrence.to_json): kind, tz, weekdays,
-- day, month, time, starts, until. NULL for every claim that is not recurring, and for
-- every claim written before this schema.
ALTER TABLE claims ADD COLUMN recurrence TEXT CHECK (recurrence IS NULL OR json_valid(recurrence));
