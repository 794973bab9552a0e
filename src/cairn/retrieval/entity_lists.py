"""Candidate lists from the query analysis: the entities and times a question names.

``entity_fts``: the question's other words, searched among the turns said by or speaking
of the entities it names ("What activities does Melanie partake in?" searches Melanie's own
turns for the rest, instead of every turn that calls her by name). ``entity_mention``:
the turns speaking of them (not merely said by them), most of them named first, then
newest: it finds "I moved to Lisbon" for "谁住在里斯本？", where no word is shared.
``entity_vector``: the vector list's turns of those entities, in its order.
``entity_graph``: the claims stating the relations of those entities and, one hop on, of
their neighbours (at most :data:`GRAPH_HOPS` hops), newest evidence first.
``current_state``: from the current-state view, the claim holding each attribute the
question asks for ("where … live" -> ``lives_in``) of the entities it names (and of the
user, for a question in the first person). ``task_state``: for a question about tasks of
a status ("what is blocked?"), the event each such task is at now (cairn.store.tasks). ``time_window``: the question's words
among the turns of the window it names ("last summer"). Each list is proposed like the
lexical ones and validated with them (owner, scope, noise, forgetting). A question naming
no known entity and no time adds nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import TYPE_CHECKING

import attrs

from cairn.domain.evidence import EventKind
from cairn.entities.vocabulary import MentionRole, fold
from cairn.retrieval.keys import CandidateKey
from cairn.store.entities import USER_SUBJECT, resolve_names
from cairn.store.metadata import event_conditions
from cairn.store.tasks import current_tasks

if TYPE_CHECKING:
    from collections.abc import Sequence

    import apsw

    from cairn.domain.metadata import RecallFilter
    from cairn.query.analysis import QueryAnalysis
    from cairn.retrieval.attributes import AskedQuestion
    from cairn.retrieval.candidates import Candidates
    from cairn.store.search import LexicalSearcher

__all__ = [
    "CURRENT_STATE",
    "ENTITY_FTS",
    "ENTITY_GRAPH",
    "ENTITY_MENTION",
    "ENTITY_VECTOR",
    "TASK_STATE",
    "TIME_WINDOW",
    "EntityFocus",
    "entity_focus",
    "focus_lists",
    "with_focus",
]

CURRENT_STATE = "current_state"
ENTITY_FTS = "entity_fts"
ENTITY_GRAPH = "entity_graph"
ENTITY_MENTION = "entity_mention"
ENTITY_VECTOR = "entity_vector"
TASK_STATE = "task_state"
TIME_WINDOW = "time_window"

# Hops of the graph neighbourhood read for a question's entities.
GRAPH_HOPS = 2
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself)\b|我")
TASK_KINDS = frozenset(
    {
        EventKind.TASK_STARTED,
        EventKind.TASK_FINISHED,
        EventKind.TASK_FAILED,
        EventKind.TASK_BLOCKED,
        EventKind.NEEDS_INPUT,
    }
)
_ROLES = json.dumps([MentionRole.SPEAKER.value, MentionRole.MENTION.value])
# Conditions on one FTS hit (cairn.store.search.search_events_within).
_OF_ENTITIES = (
    "EXISTS (SELECT 1 FROM entity_mentions m WHERE m.event_rowid = event_fts.rowid"
    " AND m.entity_rowid IN (SELECT value FROM json_each(?))"
    " AND m.role IN (SELECT value FROM json_each(?)))"
)
_IN_WINDOW = (
    "EXISTS (SELECT 1 FROM events w WHERE w.rowid = event_fts.rowid AND w.agent_id = ?"
    " AND w.occurred_at >= ? AND w.occurred_at < ?)"
)


@attrs.frozen
class EntityFocus:
    """The entities a question names (known to the agent), and the words naming them."""

    entities: tuple[int, ...] = ()
    words: frozenset[str] = frozenset()
    # The folded names that resolved (claim subjects are matched by them).
    names: tuple[str, ...] = ()
    windows: tuple[tuple[str, str], ...] = ()
    # Category members the entity's turns are searched for too (cairn.query.expansion).
    expansion: tuple[str, ...] = ()
    task_statuses: tuple[str, ...] = ()


def _stamp(moment: dt.datetime | None, default: str) -> str:
    return default if moment is None else moment.astimezone(dt.UTC).isoformat()


def entity_focus(
    connection: apsw.Connection, agent_id: str, analysis: QueryAnalysis
) -> EntityFocus:
    """Resolve the question's names and kinship references against the agent's aliases;
    a name inside a longer one that resolved ("Ed" in "Ed Sheeran") is not counted."""
    found = resolve_names(connection, agent_id, analysis.names, analysis.kin_keys)
    matched = sorted(found, key=len, reverse=True)
    kept: list[str] = []
    for name in matched:
        if name.startswith("kin:") or not any(name in longer for longer in kept):
            kept.append(name)
    entities = tuple(dict.fromkeys(entity for name in kept for entity in found[name]))
    words = frozenset(
        word for name in kept if not name.startswith("kin:") for word in name.split()
    )
    windows = tuple(
        (_stamp(anchor.start, ""), _stamp(anchor.end, "9999"))
        for anchor in analysis.anchors
        if anchor.start is not None or anchor.end is not None
    )
    names = tuple(name for name in kept if not name.startswith("kin:"))
    return EntityFocus(
        entities, words, names, windows, analysis.expansion, analysis.task_statuses
    )


def _graph(
    connection: apsw.Connection,
    entities: Sequence[int],
    question: AskedQuestion,
    limit: int,
) -> list[CandidateKey]:
    """Claims of the relations around ``entities``: an edge into one of them ("who lives
    in Lisbon?" names the object), or of a relation the question asks for; then the same
    around the entities reached, up to :data:`GRAPH_HOPS` hops."""
    claims: dict[int, None] = {}
    frontier = set(entities)
    seen = set(entities)
    for _ in range(GRAPH_HOPS):
        if not frontier:
            break
        reached: set[int] = set()
        for claim, subject, obj, relation in connection.execute(
            "SELECT r.claim_rowid, r.subject_rowid, r.object_rowid, r.relation"
            " FROM entity_relations r JOIN claims c ON c.rowid = r.claim_rowid"
            " WHERE r.subject_rowid IN (SELECT value FROM json_each(?1))"
            " OR r.object_rowid IN (SELECT value FROM json_each(?1))"
            " ORDER BY c.evidence_at DESC, r.rowid DESC LIMIT ?2",
            (json.dumps(sorted(frontier)), limit),
        ):
            into = int(obj) in frontier
            if not into and not question.asks_for(str(relation)):
                continue
            claims.setdefault(int(claim), None)
            reached.update((int(subject), int(obj)))
        frontier = reached - seen
        seen |= reached
    return [CandidateKey.claim(rowid) for rowid in list(claims)[:limit]]


def _current_state(
    connection: apsw.Connection,
    agent_id: str,
    focus: EntityFocus,
    question: AskedQuestion,
) -> list[CandidateKey]:
    # Claim subjects are stored as written: the entities' aliases as written, so the
    # lookup is a seek in claims_subject, not a scan of every claim.
    subjects: set[str] = set()
    if focus.entities:
        subjects.update(
            str(row[0])
            for row in connection.execute(
                "SELECT DISTINCT alias FROM entity_aliases"
                " WHERE entity_rowid IN (SELECT value FROM json_each(?))",
                (json.dumps(focus.entities),),
            )
        )
    if _FIRST_PERSON.search(question.text):
        subjects.add(USER_SUBJECT)
    if not subjects:
        return []
    keys: list[CandidateKey] = []
    for rowid, attribute in connection.execute(
        "SELECT claim_rowid, attribute FROM current_state WHERE agent_id = ?"
        " AND subject IN (SELECT value FROM json_each(?))"
        " ORDER BY evidence_at DESC, claim_rowid DESC",
        (agent_id, json.dumps(sorted(subjects))),
    ):
        if question.asks_for(str(attribute)):
            keys.append(CandidateKey.claim(int(rowid)))
    return keys


def focus_lists(
    lexical: LexicalSearcher,
    agent_id: str,
    terms: Sequence[str],
    focus: EntityFocus,
    question: AskedQuestion,
    limit: int,
    recall_filter: RecallFilter | None = None,
) -> dict[str, list[CandidateKey]]:
    """The lists of the module docstring (unvalidated). The turn lists apply
    ``recall_filter`` in their SQL before the limit; the claim and task lists (one row
    per named attribute, relation or task) are filtered in validation."""
    lists: dict[str, list[CandidateKey]] = {}
    state = _current_state(lexical.connection, agent_id, focus, question)
    if state:
        lists[CURRENT_STATE] = state
    if focus.task_statuses:
        tasks = current_tasks(lexical.connection, agent_id, focus.task_statuses, limit)
        if tasks:
            lists[TASK_STATE] = [CandidateKey.event(task.event_rowid) for task in tasks]
    if focus.entities:
        graph = _graph(lexical.connection, focus.entities, question, limit)
        if graph:
            lists[ENTITY_GRAPH] = graph
    rest = [term for term in terms if fold(term) not in focus.words]
    rest.extend(term for term in focus.expansion if term not in rest)
    if focus.entities and rest:
        result = lexical.search_events_within(
            agent_id,
            rest,
            limit,
            _OF_ENTITIES,
            (json.dumps(focus.entities), _ROLES),
            body_only=True,
            recall_filter=recall_filter,
        )
        lists[ENTITY_FTS] = [CandidateKey.event(hit.rowid) for hit in result.hits]
    if focus.entities:
        filtered, parameters = event_conditions(recall_filter)
        mentioned = lexical.connection.execute(
            "SELECT m.event_rowid FROM entity_mentions m"  # noqa: S608 - our clauses
            " JOIN events e ON e.rowid = m.event_rowid"
            " WHERE m.entity_rowid IN (SELECT value FROM json_each(?))"
            " AND m.role = 'mention' AND e.agent_id = ? AND e.evidence_class = 'content'"
            f"{filtered} GROUP BY m.event_rowid"
            " ORDER BY count(DISTINCT m.entity_rowid) DESC, m.event_rowid DESC LIMIT ?",
            (json.dumps(focus.entities), agent_id, *parameters, limit),
        )
        keys = [CandidateKey.event(int(row[0])) for row in mentioned]
        if keys:
            lists[ENTITY_MENTION] = keys
    for start, end in focus.windows:
        result = lexical.search_events_within(
            agent_id,
            terms,
            limit,
            _IN_WINDOW,
            (agent_id, start, end),
            recall_filter=recall_filter,
        )
        lists.setdefault(TIME_WINDOW, []).extend(
            CandidateKey.event(hit.rowid) for hit in result.hits
        )
    return lists


def with_focus(
    connection: apsw.Connection, candidates: Candidates, focus: EntityFocus
) -> Candidates:
    """``candidates`` knowing which of their turns the question is about
    (``focus_events``): the focused entities' turns, and for a question about tasks of
    a status only the task events that are their task's latest and of that status
    ("backup blocked" is not once the backup resumed; "deploy started" is not for "what
    is blocked?"). With ``entity_vector``: the validated vector list's turns of those
    entities, in its order."""
    if not (focus.entities or focus.task_statuses) or not candidates.events:
        return candidates
    rowids = json.dumps(sorted(candidates.events))
    theirs = frozenset(candidates.events)
    lists = candidates.lists
    if focus.entities:
        theirs = frozenset(
            int(row[0])
            for row in connection.execute(
                "SELECT DISTINCT event_rowid FROM entity_mentions WHERE event_rowid IN"
                " (SELECT value FROM json_each(?)) AND entity_rowid IN"
                " (SELECT value FROM json_each(?))"
                " AND role IN (SELECT value FROM json_each(?))",
                (rowids, json.dumps(focus.entities), _ROLES),
            )
        )
        chosen = [key for key in lists.get("event_vector", []) if key.rowid in theirs]
        if chosen:
            lists = {**lists, ENTITY_VECTOR: chosen}
    if focus.task_statuses:
        current = {
            int(row[0])
            for row in connection.execute(
                "SELECT event_rowid FROM tasks WHERE event_rowid IN"
                " (SELECT value FROM json_each(?))"
                " AND status IN (SELECT value FROM json_each(?))",
                (rowids, json.dumps(focus.task_statuses)),
            )
        }
        replaced = {
            rowid
            for rowid, event in candidates.events.items()
            if event.kind in TASK_KINDS and rowid not in current
        }
        theirs -= replaced
    return attrs.evolve(candidates, lists=lists, focus_events=theirs)
