"""Import of export records (cairn.store.export; format in design/cli.md).

Every record is validated as a normal write would be: the same domain constructors, the
same intake of turns (``insert_events``), and for claims the same draft validation a
committed extraction passes (handed in by the caller, which may import ingestion).
Import is idempotent: a record already stored with the same content is a duplicate, with
other content it is rejected and the stored row is left as it was.

A file is data, not the user's voice: directives it records as active arrive as drafts
(``ImportedDirectives.DRAFT``, the default) unless the operator says the file is their own
(``ImportedDirectives.ACTIVE``), and a directive time later than now is clamped to now, so
no imported directive sorts before the user's own by a date it made up.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import re
from typing import TYPE_CHECKING, Any, Final

import attrs

from cairn.domain.claim import (
    ClaimDraft,
    ClaimKind,
    Lifecycle,
    Origin,
    SourceSpan,
)
from cairn.domain.evidence import EvidenceClass, EvidenceEvent, Role, Turn
from cairn.domain.ids import AgentId, EventId, SessionId, validate_agent_id
from cairn.domain.metadata import Metadata
from cairn.domain.scope import Scope, ScopeKind
from cairn.domain.temporal import Recurrence, TemporalSpan, TimePrecision
from cairn.entities.extract import mentions_in
from cairn.errors import InvalidInputError
from cairn.store.agents import ensure_agent
from cairn.store.claims import claim_fts_body
from cairn.store.clear_jobs import pending_clear
from cairn.store.directives import suppression_started, validate_directive
from cairn.store.dirty import mark_dirty
from cairn.store.entities import record_mentions, record_relations
from cairn.store.evidence import (
    IntakeOutcome,
    insert_events,
    load_events,
    mark_extracted,
    stored_turn,
)
from cairn.store.export import RECORD_TYPES, claim_records
from cairn.store.extraction_state import ExtractionState
from cairn.store.merge import merged_identity, restore_merge
from cairn.store.metadata import write_claim_metadata
from cairn.store.succession import order_succession, refresh_evidence_time
from cairn.store.tombstones import (
    claim_hashes,
    claim_is_tombstoned,
    evidence_tombstoned,
    write_evidence_tombstones,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import apsw

__all__ = ["ImportOutcome", "ImportedDirectives", "import_record"]

_HASH = re.compile(r"^[0-9a-f]{64}$")
_CONFLICT_REASON = re.compile(r"^[a-z_]{1,40}$")
_CONFLICT_ID = re.compile(r"^[0-9A-Za-z_-]{1,64}$")


class ImportedDirectives(enum.StrEnum):
    """How the directives of an import file arrive."""

    DRAFT = "draft"
    """Active ones arrive as drafts: nothing steers the model until the user approves it."""
    ACTIVE = "active"
    """As the file records them: for the operator's own export, restored on purpose."""


@attrs.frozen
class ImportOutcome:
    outcome: IntakeOutcome
    agent: AgentId | None = None
    reason: str | None = None
    drafted: bool = False
    """A directive the file records as active was stored as a draft."""
    clamped: bool = False
    """A directive time later than now was stored as now."""


def _ok(agent: AgentId) -> ImportOutcome:
    return ImportOutcome(IntakeOutcome.INGESTED, agent)


def _duplicate(agent: AgentId) -> ImportOutcome:
    return ImportOutcome(IntakeOutcome.DUPLICATE, agent)


def _rejected(agent: AgentId, reason: str) -> ImportOutcome:
    return ImportOutcome(IntakeOutcome.REJECTED, agent, reason)


class _Fields:
    """Typed access to one record's fields: a wrong type is an InvalidInputError."""

    def __init__(self, record: dict[str, Any], allowed: set[str]) -> None:
        unknown = set(record) - allowed - {"type", "agent"}
        if unknown:
            raise InvalidInputError(f"unknown fields: {', '.join(sorted(unknown))}")
        self.record = record

    def text(self, name: str, *, optional: bool = False) -> str:
        value = self.record.get(name)
        if value is None and optional:
            return ""
        if not isinstance(value, str):
            raise InvalidInputError(f"field {name!r} must be a string")
        return value

    def maybe_text(self, name: str) -> str | None:
        value = self.record.get(name)
        if value is not None and not isinstance(value, str):
            raise InvalidInputError(f"field {name!r} must be a string or null")
        return value

    def time(self, name: str) -> str:
        return _iso(_parse_time(self.text(name), name))

    def maybe_time(self, name: str) -> str | None:
        value = self.maybe_text(name)
        return None if value is None else _iso(_parse_time(value, name))

    def integer(self, name: str) -> int:
        value = self.record.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidInputError(f"field {name!r} must be an integer")
        return value

    def number(self, name: str, source: dict[str, Any] | None = None) -> float:
        value = (self.record if source is None else source).get(name)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise InvalidInputError(f"field {name!r} must be a number")
        return float(value)


def _parse_time(value: str, name: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInputError(f"{name!r} is not ISO-8601: {value!r}") from None
    if moment.utcoffset() is None:
        raise InvalidInputError(f"{name!r} must carry a UTC offset: {value!r}")
    return moment


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat()


def import_record(
    connection: apsw.Connection,
    record: object,
    now: dt.datetime,
    validate_claim: Callable[[ClaimDraft, Sequence[EvidenceEvent]], bool],
    directives: ImportedDirectives = ImportedDirectives.DRAFT,
) -> ImportOutcome:
    """Validate and store one record; the caller owns the transaction.

    Raises InvalidInputError for a malformed record (the caller reports the line);
    returns the outcome otherwise. ``directives`` says how directive records arrive.
    """
    if not isinstance(record, dict):
        raise InvalidInputError("each line must be a JSON object")
    kind = record.get("type")
    if kind not in RECORD_TYPES:
        raise InvalidInputError(f"unknown record type {kind!r}")
    agent_value = record.get("agent")
    if not isinstance(agent_value, str):
        raise InvalidInputError("field 'agent' must be a string")
    try:
        agent = validate_agent_id(agent_value)
    except ValueError as error:
        raise InvalidInputError(str(error)) from None
    ensure_agent(connection, agent, now)
    if kind == "directive":
        try:
            return _import_directive(connection, agent, record, now, directives)
        except ValueError as error:
            raise InvalidInputError(str(error)) from None
    importer = {
        "event": _import_event,
        "claim": _import_claim,
        "derivation": _import_derivation,
        "merge": _import_merge,
        "conflict": _import_conflict,
        "tombstone": _import_tombstone,
        "evidence_tombstone": _import_evidence_tombstone,
    }[kind]
    try:
        return importer(connection, agent, record, validate_claim)
    except ValueError as error:  # a domain constructor refused a value
        raise InvalidInputError(str(error)) from None


def _noise_class(value: str | None) -> EvidenceClass:
    """An exported turn's evidence class: content unless the record names its noise."""
    if value is None:
        return EvidenceClass.CONTENT
    try:
        noise = EvidenceClass(value)
    except ValueError:
        noise = EvidenceClass.CONTENT
    if not noise.is_noise:
        known = ", ".join(kind.value for kind in EvidenceClass if kind.is_noise)
        raise InvalidInputError(f"field 'noise' must be one of {known}; got {value!r}")
    return noise


def _import_event(
    connection: apsw.Connection,
    agent: AgentId,
    record: dict[str, Any],
    _validate: object,
) -> ImportOutcome:
    fields = _Fields(
        record,
        {
            "id",
            "session",
            "role",
            "speaker",
            "text",
            "at",
            "received_at",
            "extracted",
            "kind",
            "hidden",
            "withdrawn",
            "noise",
            "metadata",
        },
    )
    hidden = record.get("hidden", False)
    if not isinstance(hidden, bool):
        raise InvalidInputError("field 'hidden' must be true or false")
    withdrawn = record.get("withdrawn", False)
    if not isinstance(withdrawn, bool):
        raise InvalidInputError("field 'withdrawn' must be true or false")
    extracted = record.get("extracted")
    if not isinstance(extracted, bool):
        raise InvalidInputError("field 'extracted' must be true or false")
    at = fields.maybe_text("at")
    turn = Turn(
        EventId(fields.text("id")),
        SessionId(fields.text("session")),
        Role(fields.text("role")),
        fields.text("text"),
        None if at is None else _parse_time(at, "at"),
        fields.maybe_text("speaker"),
        fields.maybe_text("kind") or "message",
        metadata=_metadata(record),
    )
    received = _parse_time(fields.text("received_at"), "received_at")
    evidence_class = _noise_class(fields.maybe_text("noise"))
    # Exported text is stored text: redacted and cut when it was first ingested.
    stored = attrs.evolve(stored_turn(turn), evidence_class=evidence_class)
    (result,) = insert_events(connection, agent, [stored], received)
    if result.outcome is IntakeOutcome.INGESTED and extracted:
        assert result.rowid is not None  # noqa: S101 - set for every inserted turn
        mark_extracted(connection, agent, [result.rowid])
        if not withdrawn and not evidence_class.is_noise:
            # It will not be extracted again: the entity rules read it now, as its
            # extraction did where it was exported from.
            _record_entities(connection, agent, result.rowid, received)
    if result.outcome is IntakeOutcome.INGESTED and withdrawn:
        connection.execute(
            "UPDATE events SET extracted = ? WHERE agent_id = ?"
            " AND (rowid = ? OR segment_of = ?)",
            (ExtractionState.WITHDRAWN.value, agent, result.rowid, result.rowid),
        )
    if result.outcome is IntakeOutcome.INGESTED and hidden:
        connection.execute(
            "INSERT OR IGNORE INTO hidden_evidence (agent_id, event_rowid, created_at)"
            " VALUES (?, ?, ?)",
            (agent, result.rowid, _iso(received)),
        )
    return ImportOutcome(result.outcome, agent, result.reason)


def _record_entities(
    connection: apsw.Connection, agent: AgentId, first: int, now: dt.datetime
) -> None:
    rows = connection.execute(
        "SELECT rowid, text, speaker, role FROM events"
        " WHERE rowid = ?1 OR segment_of = ?1 ORDER BY rowid",
        (first,),
    )
    drafts = [
        (int(rowid), tuple(mentions_in(str(text), speaker, Role(role))))
        for rowid, text, speaker, role in rows
    ]
    record_mentions(connection, agent, drafts, now)


def _event_rowids(
    connection: apsw.Connection, agent: AgentId, event_ids: Sequence[str]
) -> dict[str, int]:
    return {
        str(event_id): int(rowid)
        for event_id, rowid in connection.execute(
            "SELECT event_id, rowid FROM events WHERE agent_id = ?"
            " AND event_id IN (SELECT value FROM json_each(?))",
            (agent, json.dumps(list(event_ids))),
        )
    }


def _metadata(record: dict[str, Any]) -> Metadata | None:
    """An exported row's caller metadata, checked as a caller's is (a claim's may hold
    its sources' union of tags)."""
    value = record.get("metadata")
    if value is None:
        return None
    metadata = Metadata.from_data(value, "field 'metadata'", inherited=True)
    return None if metadata.empty else metadata


def _claim_draft(fields: _Fields) -> tuple[ClaimDraft, list[tuple[str, int, int]]]:
    record = fields.record
    sources = record.get("sources")
    if not isinstance(sources, list):
        raise InvalidInputError("field 'sources' must be a list")
    spans: list[tuple[str, int, int]] = []
    for source in sources:
        if not isinstance(source, dict) or set(source) != {"event", "start", "end"}:
            raise InvalidInputError("each source is {event, start, end}")
        event, start, end = source["event"], source["start"], source["end"]
        if not isinstance(event, str) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in (start, end)
        ):
            raise InvalidInputError("a source names an event ID and integer offsets")
        spans.append((event, start, end))
    temporal = None
    raw = record.get("temporal")
    if raw is not None:
        if not isinstance(raw, dict) or set(raw) != {
            "valid_from",
            "valid_until",
            "precision",
            "timezone",
            "confidence",
        }:
            raise InvalidInputError(
                "'temporal' is null or {valid_from, valid_until, precision, timezone,"
                " confidence}"
            )
        bounds = []
        for name in ("valid_from", "valid_until"):
            value = raw[name]
            if value is not None and not isinstance(value, str):
                raise InvalidInputError(f"temporal {name!r} must be a string or null")
            bounds.append(None if value is None else _parse_time(value, name))
        if not isinstance(raw["precision"], str) or not isinstance(
            raw["timezone"], str
        ):
            raise InvalidInputError("temporal precision and timezone are strings")
        temporal = TemporalSpan(
            valid_from=bounds[0],
            valid_until=bounds[1],
            precision=TimePrecision(raw["precision"]),
            timezone=raw["timezone"],
            confidence=fields.number("confidence", raw),
        )
    confidence = fields.number("confidence")
    if not 0 <= confidence <= 1:
        raise InvalidInputError("claim confidence must be within [0, 1]")
    recurrence = None
    if record.get("recurrence") is not None:
        try:
            recurrence = Recurrence.from_record(record["recurrence"])
        except ValueError as error:
            raise InvalidInputError(f"malformed recurrence: {error}") from None
    draft = ClaimDraft(
        kind=ClaimKind(fields.text("kind")),
        text=fields.text("text"),
        spans=tuple(SourceSpan(EventId(e), s, n) for e, s, n in spans),
        confidence=confidence,
        temporal=temporal,
        subject=fields.maybe_text("subject"),
        predicate=fields.maybe_text("predicate"),
        scope=Scope(ScopeKind(fields.text("scope")), fields.maybe_text("scope_key")),
        recurrence=recurrence,
        metadata=_metadata(record),
    )
    return draft, spans


_CLAIM_FIELDS: Final = {
    "id",
    "kind",
    "lifecycle",
    "origin",
    "text",
    "subject",
    "predicate",
    "confidence",
    "temporal",
    "scope",
    "scope_key",
    "revision",
    "provenance_key",
    "created_at",
    "updated_at",
    "sources",
    "recurrence",
    "metadata",
}


def _import_claim(
    connection: apsw.Connection,
    agent: AgentId,
    record: dict[str, Any],
    validate_claim: Callable[[ClaimDraft, Sequence[EvidenceEvent]], bool],
) -> ImportOutcome:
    fields = _Fields(record, _CLAIM_FIELDS)
    draft, spans = _claim_draft(fields)
    claim_id = fields.text("id")
    lifecycle = Lifecycle(fields.text("lifecycle"))
    origin = Origin(fields.text("origin"))
    provenance = fields.text("provenance_key")
    if not _HASH.match(provenance):
        raise InvalidInputError("'provenance_key' must be 64 lowercase hex digits")
    revision = fields.integer("revision")
    if revision < 1:
        raise InvalidInputError("'revision' must be at least 1")
    created_at, updated_at = fields.time("created_at"), fields.time("updated_at")

    existing = connection.execute(
        "SELECT agent_id FROM claims WHERE claim_id = ?", (claim_id,)
    ).fetchone()
    if existing is not None:
        if str(existing[0]) != agent:
            return _rejected(agent, "claim id already stored for another agent")
        stored = next(claim_records(connection, agent, claim_id), None)
        same = stored is not None and stored == {
            **record,
            "created_at": created_at,
            "updated_at": updated_at,
        }
        return (
            _duplicate(agent)
            if same
            else _rejected(agent, "claim id already stored with different content")
        )
    if pending_clear(connection, agent) is not None:
        return _rejected(agent, "a clear job is pending for the agent")
    # The stored key is recomputed (an export from before schema 5 carries an unscoped
    # one); the record's own key is checked against tombstones too.
    given_provenance = provenance
    provenance, digest = claim_hashes(agent, draft)
    if claim_is_tombstoned(connection, agent, draft, (given_provenance,)):
        return ImportOutcome(
            IntakeOutcome.SUPPRESSED, agent, "forgotten: a tombstone covers this claim"
        )
    if connection.execute(
        "SELECT 1 FROM claims WHERE agent_id = ? AND provenance_key = ?",
        (agent, provenance),
    ).fetchone():
        return _rejected(agent, "another claim has the same provenance")
    into = merged_identity(connection, agent, provenance, digest)
    if into is not None and (into.by_provenance or into.survivor_lifecycle == "active"):
        # Merged into another claim here (an export from before the merge): stored.
        return _duplicate(agent)
    rowids = _event_rowids(connection, agent, [event for event, _, _ in spans])
    if missing := sorted({event for event, _, _ in spans} - set(rowids)):
        return _rejected(agent, f"cites events not stored: {', '.join(missing)}")
    if spans:
        events = list(load_events(connection, agent, rowids.values()).values())
        if not validate_claim(draft, events):
            return _rejected(agent, "the claim does not validate against its evidence")
    elif origin is Origin.EXTRACTED:
        return _rejected(agent, "an extracted claim needs sources")
    temporal = draft.temporal
    connection.execute(
        "INSERT INTO claims (claim_id, agent_id, kind, lifecycle, origin, text, subject,"
        " predicate, confidence, temporal_confidence, valid_from, valid_until,"
        " time_precision, timezone, scope, scope_key, revision, provenance_key,"
        " content_hash, created_at, updated_at, recurrence)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            claim_id,
            agent,
            draft.kind.value,
            lifecycle.value,
            origin.value,
            draft.text,
            draft.subject,
            draft.predicate,
            draft.confidence,
            None if temporal is None else temporal.confidence,
            None
            if temporal is None or temporal.valid_from is None
            else _iso(temporal.valid_from),
            None
            if temporal is None or temporal.valid_until is None
            else _iso(temporal.valid_until),
            None if temporal is None else temporal.precision.value,
            None if temporal is None else temporal.timezone,
            draft.scope.kind.value,
            draft.scope.key,
            revision,
            provenance,
            digest,
            created_at,
            updated_at,
            None if draft.recurrence is None else draft.recurrence.to_json(),
        ),
    )
    rowid = connection.last_insert_rowid()
    # As exported: already the union of its own and its sources' at the source.
    if draft.metadata is not None:
        write_claim_metadata(connection, rowid, draft.metadata)
    connection.executemany(
        "INSERT OR IGNORE INTO claim_sources (claim_rowid, event_rowid, span_start,"
        " span_end) VALUES (?, ?, ?, ?)",
        [(rowid, rowids[event], start, end) for event, start, end in spans],
    )
    refresh_evidence_time(connection, rowid)
    order_succession(connection, agent, rowid, None, reorder=False)
    connection.execute(
        "INSERT INTO claim_fts (rowid, body) VALUES (?, ?)",
        (
            rowid,
            claim_fts_body(
                agent,
                draft.text,
                draft.predicate,
                draft.scope.kind.value,
                draft.scope.key,
            ),
        ),
    )
    # The edges a claim states are derived, not exported: stated again here from the
    # claim and the mentions its (already imported) turns re-derived.
    record_relations(connection, agent, [rowid], _parse_time(created_at, "created_at"))
    mark_dirty(connection, agent, [rowid])
    return _ok(agent)


def _claim_rowid(connection: apsw.Connection, agent: AgentId, claim_id: str) -> int:
    row = connection.execute(
        "SELECT rowid FROM claims WHERE agent_id = ? AND claim_id = ?",
        (agent, claim_id),
    ).fetchone()
    if row is None:
        raise InvalidInputError(f"claim {claim_id!r} is not stored for {agent!r}")
    return int(row[0])


def _import_derivation(
    connection: apsw.Connection,
    agent: AgentId,
    record: dict[str, Any],
    _validate: object,
) -> ImportOutcome:
    fields = _Fields(record, {"parent", "child", "relation", "created_at"})
    relation = fields.text("relation")
    if relation not in {"supersede", "merge", "reflection", "edit"}:
        raise InvalidInputError(f"unknown relation {relation!r}")
    parent = _claim_rowid(connection, agent, fields.text("parent"))
    child = _claim_rowid(connection, agent, fields.text("child"))
    created_at = fields.time("created_at")
    if connection.execute(
        "SELECT 1 FROM derivations WHERE agent_id = ? AND parent_rowid = ?"
        " AND child_rowid = ? AND relation = ?",
        (agent, parent, child, relation),
    ).fetchone():
        return _duplicate(agent)
    connection.execute(
        "INSERT INTO derivations (agent_id, parent_rowid, child_rowid, relation,"
        " created_at) VALUES (?, ?, ?, ?, ?)",
        (agent, parent, child, relation, created_at),
    )
    return _ok(agent)


def _import_merge(
    connection: apsw.Connection,
    agent: AgentId,
    record: dict[str, Any],
    _validate: object,
) -> ImportOutcome:
    fields = _Fields(
        record,
        {
            "survivor",
            "absorbed",
            "provenance_hash",
            "content_hash",
            "sources",
            "created_at",
        },
    )
    provenance, content = fields.text("provenance_hash"), fields.text("content_hash")
    if not (_HASH.match(provenance) and _HASH.match(content)):
        raise InvalidInputError("merge hashes are 64 lowercase hex digits")
    sources = record.get("sources")
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise InvalidInputError("field 'sources' must be a list of event IDs")
    absorbed = fields.text("absorbed")
    survivor = _claim_rowid(connection, agent, fields.text("survivor"))
    created_at = fields.time("created_at")
    if pending_clear(connection, agent) is not None:
        return _rejected(agent, "a clear job is pending for the agent")
    rowids = _event_rowids(connection, agent, sources)
    if missing := sorted(set(sources) - set(rowids)):
        return _rejected(agent, f"cites events not stored: {', '.join(missing)}")
    if connection.execute(
        "SELECT 1 FROM claims WHERE claim_id = ?", (absorbed,)
    ).fetchone():
        return _rejected(agent, "the merged-away claim is stored as a claim")
    stored = restore_merge(
        connection,
        agent,
        survivor,
        absorbed,
        provenance,
        content,
        list(rowids.values()),
        created_at,
    )
    return _ok(agent) if stored else _duplicate(agent)


def _import_conflict(
    connection: apsw.Connection,
    agent: AgentId,
    record: dict[str, Any],
    _validate: object,
) -> ImportOutcome:
    """A conflict between two claims, and the user's resolution if there is one: the
    claims must be stored (their lifecycles, as exported, already say the outcome).
    With the resolution stored, a later re-ordering of the attribute still leaves the
    user's loser out, and maintenance does not raise the pair again."""
    fields = _Fields(
        record,
        {
            "id",
            "claims",
            "scope",
            "scope_key",
            "reason",
            "status",
            "resolution",
            "kept",
            "superseded",
            "created_at",
            "resolved_at",
        },
    )
    conflict_id, reason = fields.text("id"), fields.text("reason")
    if not _CONFLICT_ID.match(conflict_id):
        raise InvalidInputError(f"malformed conflict ID {conflict_id!r}")
    if not _CONFLICT_REASON.match(reason):
        raise InvalidInputError(f"malformed conflict reason {reason!r}")
    claims = record.get("claims")
    if (
        not isinstance(claims, list)
        or len(claims) != 2
        or not all(isinstance(claim, str) for claim in claims)
        or claims[0] == claims[1]
    ):
        raise InvalidInputError("field 'claims' must be two different claim IDs")
    scope, scope_key = fields.text("scope"), fields.maybe_text("scope_key")
    ScopeKind(scope)  # a ValueError names the value
    status, resolution = fields.text("status"), fields.maybe_text("resolution")
    kept, superseded = fields.maybe_text("kept"), fields.maybe_text("superseded")
    created_at, resolved_at = (
        fields.time("created_at"),
        fields.maybe_time("resolved_at"),
    )
    if status == "open":
        if resolution is not None or resolved_at is not None or kept or superseded:
            raise InvalidInputError("an open conflict carries no resolution")
    elif status != "resolved" or resolved_at is None:
        raise InvalidInputError("a conflict is 'open', or 'resolved' with resolved_at")
    elif resolution == "keep_both":
        if kept is not None or superseded is not None:
            raise InvalidInputError("a conflict resolved keep_both keeps no one claim")
    elif resolution != "keep_one" or {kept, superseded} != set(claims):
        raise InvalidInputError(
            "a conflict resolved keep_one names one of its claims kept and the other"
            " superseded"
        )
    rowids = {claim: _claim_rowid(connection, agent, claim) for claim in claims}
    first, second = sorted(rowids.values())
    if connection.execute(
        "SELECT 1 FROM conflicts WHERE conflict_id = ?"
        " OR (agent_id = ? AND claim_a = ? AND claim_b = ?)",
        (conflict_id, agent, first, second),
    ).fetchone():
        return _duplicate(agent)
    connection.execute(
        "INSERT INTO conflicts (conflict_id, agent_id, claim_a, claim_b, scope,"
        " scope_key, reason, status, resolution, kept_rowid, superseded_rowid,"
        " created_at, resolved_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            conflict_id,
            agent,
            first,
            second,
            scope,
            scope_key,
            reason,
            status,
            resolution,
            None if kept is None else rowids[kept],
            None if superseded is None else rowids[superseded],
            created_at,
            resolved_at,
        ),
    )
    return _ok(agent)


def _import_directive(
    connection: apsw.Connection,
    agent: AgentId,
    record: dict[str, Any],
    now: dt.datetime,
    directives: ImportedDirectives,
) -> ImportOutcome:
    fields = _Fields(
        record, {"id", "kind", "text", "status", "created_at", "updated_at"}
    )
    directive_id, kind, text = (
        fields.text("id"),
        fields.text("kind"),
        fields.text("text"),
    )
    recorded_status = fields.text("status")
    if kind not in {"instruction", "suppress_topic"}:
        raise InvalidInputError(f"unknown directive kind {kind!r}")
    if recorded_status not in {"draft", "active", "revoked"}:
        raise InvalidInputError(f"unknown directive status {recorded_status!r}")
    if not text.strip():
        raise InvalidInputError("a directive needs text")
    recorded = (fields.time("created_at"), fields.time("updated_at"))
    # Directives are listed and rendered newest first: a time after now would put a
    # file's directive ahead of every one the user makes until then.
    latest = _iso(now)
    created_at, updated_at = (min(moment, latest, key=_instant) for moment in recorded)
    drafted = directives is ImportedDirectives.DRAFT and recorded_status == "active"
    status = "draft" if drafted else recorded_status
    if status == "active":
        # What steers the model passes today's checks (length, a topic not too broad),
        # as a created directive does; a draft is checked again when it is approved.
        validate_directive(kind, text)
    row = (agent, kind, text, status, created_at, updated_at)
    existing = connection.execute(
        "SELECT agent_id, kind, text, status, created_at, updated_at FROM directives"
        " WHERE directive_id = ?",
        (directive_id,),
    ).fetchone()
    if existing is not None:
        # Re-importing a directory's own export finds its rows as they are: a duplicate.
        if tuple(existing) in {row, (agent, kind, text, recorded_status, *recorded)}:
            return _duplicate(agent)
        if tuple(existing) == (agent, kind, text, "draft", created_at, updated_at):
            return _rejected(
                agent,
                f"directive {directive_id} was imported as a draft before;"
                " approve it instead (cairn directives approve)",
            )
        return _rejected(agent, "directive id already stored with different content")
    connection.execute(
        "INSERT INTO directives (directive_id, agent_id, kind, text, status, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (directive_id, *row),
    )
    if status == "active":
        suppression_started(connection, agent, kind)
    return ImportOutcome(
        IntakeOutcome.INGESTED,
        agent,
        drafted=drafted,
        clamped=(created_at, updated_at) != recorded,
    )


def _instant(stamp: str) -> dt.datetime:
    return dt.datetime.fromisoformat(stamp)


def _import_tombstone(
    connection: apsw.Connection,
    agent: AgentId,
    record: dict[str, Any],
    _validate: object,
) -> ImportOutcome:
    fields = _Fields(record, {"provenance_hash", "content_hash", "created_at"})
    provenance, content = fields.text("provenance_hash"), fields.text("content_hash")
    if not (_HASH.match(provenance) and _HASH.match(content)):
        raise InvalidInputError("tombstone hashes are 64 lowercase hex digits")
    connection.execute(
        "INSERT OR IGNORE INTO tombstones (agent_id, provenance_hash, content_hash,"
        " created_at) VALUES (?, ?, ?, ?)",
        (agent, provenance, content, fields.time("created_at")),
    )
    return _ok(agent) if connection.changes() else _duplicate(agent)


def _import_evidence_tombstone(
    connection: apsw.Connection,
    agent: AgentId,
    record: dict[str, Any],
    _validate: object,
) -> ImportOutcome:
    fields = _Fields(record, {"identity_hash", "created_at"})
    identity = fields.text("identity_hash")
    if not _HASH.match(identity):
        raise InvalidInputError("tombstone hashes are 64 lowercase hex digits")
    if evidence_tombstoned(connection, agent, [identity]):
        return _duplicate(agent)
    write_evidence_tombstones(connection, agent, [identity], fields.time("created_at"))
    return _ok(agent)
