-- cairn schema: entities, their aliases and the turns that mention them, relations between
-- them, and the current-state view (cairn.store.entities, design/schema.md).
--
-- Nothing here holds text of its own that outlives its evidence: an alias lives while a
-- mention (a turn) attests it, an entity while one of its aliases lives, a relation while
-- the claim stating it does. Forgetting, clearing or retiring the turns and claims takes
-- these rows with them (cascades and the triggers below).

CREATE TABLE entities (
    rowid       INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id    TEXT NOT NULL,
    kind        TEXT NOT NULL
                CHECK (kind IN ('person', 'place', 'organisation', 'project', 'artefact')),
    -- Identifies an entity its names cannot (someone's relative: kin:<owner>:<relation>).
    entity_key  TEXT,
    created_at  TEXT NOT NULL
) STRICT;
CREATE UNIQUE INDEX entities_key ON entities (agent_id, entity_key)
    WHERE entity_key IS NOT NULL;

CREATE TABLE entity_aliases (
    rowid        INTEGER PRIMARY KEY,
    entity_rowid INTEGER NOT NULL REFERENCES entities (rowid) ON DELETE CASCADE,
    agent_id     TEXT NOT NULL,
    alias        TEXT NOT NULL,
    folded       TEXT NOT NULL,
    alias_kind   TEXT NOT NULL
                 CHECK (alias_kind IN ('speaker', 'name', 'translation', 'nickname', 'kinship')),
    UNIQUE (entity_rowid, folded)
) STRICT;
CREATE INDEX entity_aliases_folded ON entity_aliases (agent_id, folded);

CREATE TABLE entity_mentions (
    entity_rowid INTEGER NOT NULL REFERENCES entities (rowid) ON DELETE CASCADE,
    event_rowid  INTEGER NOT NULL REFERENCES events (rowid) ON DELETE CASCADE,
    alias_rowid  INTEGER NOT NULL REFERENCES entity_aliases (rowid) ON DELETE CASCADE,
    role         TEXT NOT NULL CHECK (role IN ('speaker', 'mention', 'addressee')),
    PRIMARY KEY (entity_rowid, event_rowid, alias_rowid, role)
) STRICT, WITHOUT ROWID;
CREATE INDEX entity_mentions_event ON entity_mentions (event_rowid);
CREATE INDEX entity_mentions_alias ON entity_mentions (alias_rowid);

-- An alias no turn attests any more goes; an entity with no alias left goes.
CREATE TRIGGER entity_mention_gone AFTER DELETE ON entity_mentions BEGIN
    DELETE FROM entity_aliases WHERE rowid = old.alias_rowid
        AND NOT EXISTS (SELECT 1 FROM entity_mentions WHERE alias_rowid = old.alias_rowid);
END;
CREATE TRIGGER entity_alias_gone AFTER DELETE ON entity_aliases BEGIN
    DELETE FROM entities WHERE rowid = old.entity_rowid
        AND NOT EXISTS (SELECT 1 FROM entity_aliases WHERE entity_rowid = old.entity_rowid);
END;

-- Typed edges: subject entity -relation-> object entity, stated by one claim; its
-- validity is the claim's (when it took effect, when it was superseded or ended).
CREATE TABLE entity_relations (
    rowid          INTEGER PRIMARY KEY,
    agent_id       TEXT NOT NULL,
    subject_rowid  INTEGER NOT NULL REFERENCES entities (rowid) ON DELETE CASCADE,
    relation       TEXT NOT NULL,
    object_rowid   INTEGER NOT NULL REFERENCES entities (rowid) ON DELETE CASCADE,
    claim_rowid    INTEGER NOT NULL REFERENCES claims (rowid) ON DELETE CASCADE,
    UNIQUE (claim_rowid, subject_rowid, relation, object_rowid)
) STRICT;
CREATE INDEX entity_relations_subject ON entity_relations (subject_rowid, relation);
CREATE INDEX entity_relations_object ON entity_relations (object_rowid);

-- (subject, attribute) -> the claim holding it now: the newest active value by evidence
-- time that nothing superseded. The knowledge-update path reads this.
CREATE VIEW current_state AS
SELECT c.agent_id, c.subject, c.predicate AS attribute, c.scope, c.scope_key,
       c.rowid AS claim_rowid, c.evidence_at
FROM claims c
WHERE c.subject IS NOT NULL AND c.predicate IS NOT NULL AND c.lifecycle = 'active'
  AND c.superseded_at IS NULL
  AND NOT EXISTS (
      SELECT 1 FROM claims n
      WHERE n.agent_id = c.agent_id AND n.subject = c.subject AND n.predicate = c.predicate
        AND n.scope = c.scope AND n.scope_key IS c.scope_key AND n.lifecycle = 'active'
        AND n.superseded_at IS NULL
        AND (n.evidence_at > c.evidence_at
             OR (n.evidence_at IS c.evidence_at AND n.rowid > c.rowid)));

-- Time-anchored recall reads the turns of a window ("last summer").
CREATE INDEX events_time ON events (agent_id, occurred_at);

-- Tasks projected from runtime events: each task (a session's events of one speaker, else
-- of one text, as attention keys them) at its latest task_* or needs_input event. A view:
-- it holds nothing a forgotten or cleared event could leave behind.
CREATE VIEW tasks AS
SELECT e.agent_id, e.session_id, coalesce(e.speaker, e.text) AS task,
       CASE e.kind
           WHEN 'task_started' THEN 'running'
           WHEN 'task_finished' THEN 'done'
           WHEN 'task_failed' THEN 'failed'
           WHEN 'task_blocked' THEN 'blocked'
           ELSE 'waiting_for_input'
       END AS status,
       e.rowid AS event_rowid, e.occurred_at AS changed_at
FROM events e
WHERE e.kind IN ('task_started', 'task_finished', 'task_failed', 'task_blocked', 'needs_input')
  AND e.segment_of IS NULL AND e.extracted <> 3
  AND NOT EXISTS (
      SELECT 1 FROM events n
      WHERE n.agent_id = e.agent_id AND n.session_id = e.session_id
        AND coalesce(n.speaker, n.text) = coalesce(e.speaker, e.text)
        AND n.kind IN ('task_started', 'task_finished', 'task_failed', 'task_blocked',
                       'needs_input')
        AND n.segment_of IS NULL AND n.extracted <> 3
        AND (n.occurred_at > e.occurred_at
             OR (n.occurred_at = e.occurred_at AND n.rowid > e.rowid)));

-- The turns speaking of an entity (not merely said by it), without walking all of its
-- mentions: a speaker of every turn has as many as there are turns.
CREATE INDEX entity_mentions_role ON entity_mentions (entity_rowid, role, event_rowid);
