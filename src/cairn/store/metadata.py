"""Caller metadata in the store: the ``metadata`` columns, the tag tables, inheritance by
claims, and the SQL of a recall's filter (design/schema.md, 0019).

The column holds the value whole; ``event_tags``/``claim_tags`` repeat its tags as rows
so a filter is an index probe. Both are written here only, in the caller's transaction.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Literal

from cairn.domain.metadata import (
    EVIDENCE_KIND,
    Metadata,
    RecallFilter,
    merged,
    metadata_from_json,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import apsw

__all__ = [
    "absorb_claim_metadata",
    "add_metadata_columns",
    "claim_conditions",
    "claim_probe",
    "event_conditions",
    "event_probe",
    "inherit_metadata",
    "tags_condition",
    "write_claim_metadata",
    "write_event_metadata",
]


def add_metadata_columns(connection: apsw.Connection) -> None:
    """Schema 19's step: ``events.metadata`` and ``claims.metadata``, each added unless
    present (SQLite has no ``ADD COLUMN IF NOT EXISTS``; a file whose version was set
    back, as the migration tests do, runs the step again)."""
    for table in ("events", "claims"):
        columns = {
            str(row[1]) for row in connection.execute(f"PRAGMA table_info({table})")
        }
        if "metadata" not in columns:
            connection.execute(
                f"ALTER TABLE {table} ADD COLUMN metadata TEXT"
                " CHECK (metadata IS NULL OR json_valid(metadata))"
            )


def write_event_metadata(
    connection: apsw.Connection, rowid: int, metadata: Metadata | None
) -> None:
    """Set a stored turn's (or segment's) metadata; None or empty clears it."""
    _write(connection, "events", "event_tags", "event_rowid", rowid, metadata)


def write_claim_metadata(
    connection: apsw.Connection, rowid: int, metadata: Metadata | None
) -> None:
    _write(connection, "claims", "claim_tags", "claim_rowid", rowid, metadata)


def _write(
    connection: apsw.Connection,
    table: str,
    tags: str,
    key: str,
    rowid: int,
    metadata: Metadata | None,
) -> None:
    value = None if metadata is None else metadata.to_json()
    connection.execute(
        f"UPDATE {table} SET metadata = ? WHERE rowid = ?",  # noqa: S608 - names are ours
        (value, rowid),
    )
    connection.execute(f"DELETE FROM {tags} WHERE {key} = ?", (rowid,))  # noqa: S608
    if metadata is not None and metadata.tags:
        connection.execute(
            f"INSERT INTO {tags} ({key}, tag) SELECT ?, value FROM json_each(?)",  # noqa: S608
            (rowid, json.dumps(list(metadata.tags))),
        )


def inherit_metadata(
    connection: apsw.Connection, claim_rowid: int, event_rowids: Iterable[int]
) -> None:
    """Merge the metadata of source turns ``event_rowids`` into claim ``claim_rowid``'s
    (cairn.domain.metadata.merged: union of tags, largest importance, extra keys the
    claim lacks). Called wherever a claim gains sources: its insert, a source merge, a
    maintenance merge's survivor."""
    wanted = sorted(set(event_rowids))
    if not wanted:
        return
    rows = connection.execute(
        "SELECT metadata FROM events WHERE rowid IN (SELECT value FROM json_each(?))"
        " AND metadata IS NOT NULL ORDER BY rowid",
        (json.dumps(wanted),),
    ).fetchall()
    if not rows:
        return
    row = connection.execute(
        "SELECT metadata FROM claims WHERE rowid = ?", (claim_rowid,)
    ).fetchone()
    if row is None:
        return
    current = metadata_from_json(row[0])
    combined = current
    for (value,) in rows:
        combined = merged(combined, metadata_from_json(value))
    if combined != current:
        write_claim_metadata(connection, claim_rowid, combined)


def absorb_claim_metadata(
    connection: apsw.Connection, survivor_rowid: int, absorbed: Metadata | None
) -> None:
    """A maintenance merge's survivor keeps the absorbed claim's metadata too."""
    if absorbed is None:
        return
    row = connection.execute(
        "SELECT metadata FROM claims WHERE rowid = ?", (survivor_rowid,)
    ).fetchone()
    if row is None:
        return
    current = metadata_from_json(row[0])
    combined = merged(current, absorbed)
    if combined != current:
        write_claim_metadata(connection, survivor_rowid, combined)


def _since_until(column: str, recall_filter: RecallFilter) -> tuple[str, list[object]]:
    sql = ""
    params: list[object] = []
    # Stored times are UTC ISO-8601, which compare as text in time order.
    if recall_filter.since is not None:
        sql += f" AND {column} >= ?"
        params.append(recall_filter.since.astimezone(dt.UTC).isoformat())
    if recall_filter.until is not None:
        sql += f" AND {column} < ?"
        params.append(recall_filter.until.astimezone(dt.UTC).isoformat())
    return sql, params


def event_conditions(
    recall_filter: RecallFilter | None, alias: str = "e"
) -> tuple[str, list[object]]:
    """``" AND ..."`` conditions on the ``events`` row ``alias``, and their parameters
    (bound in order where the clause stands); empty without a filter."""
    if recall_filter is None or not recall_filter.active:
        return "", []
    if recall_filter.kinds and EVIDENCE_KIND not in recall_filter.kinds:
        return " AND 0", []
    sql, params = _since_until(f"{alias}.occurred_at", recall_filter)
    tagged, tag_params = tags_condition(recall_filter.tags, "event", alias)
    return sql + tagged, params + tag_params


def claim_conditions(
    recall_filter: RecallFilter | None, alias: str = "c"
) -> tuple[str, list[object]]:
    """As :func:`event_conditions`, on the ``claims`` row ``alias``; a claim's time is
    its evidence time (when its value took effect, cairn.store.succession)."""
    if recall_filter is None or not recall_filter.active:
        return "", []
    sql = ""
    params: list[object] = []
    kinds = [kind for kind in recall_filter.kinds if kind != EVIDENCE_KIND]
    if recall_filter.kinds and not kinds:
        return " AND 0", []
    if kinds:
        sql += f" AND {alias}.kind IN (SELECT value FROM json_each(?))"  # noqa: S608
        params.append(json.dumps(kinds))
    timed, timed_params = _since_until(
        f"coalesce({alias}.evidence_at, {alias}.created_at)", recall_filter
    )
    sql += timed
    params += timed_params
    tagged, tag_params = tags_condition(recall_filter.tags, "claim", alias)
    return sql + tagged, params + tag_params


def tags_condition(
    tags: Sequence[str], target: Literal["event", "claim"], alias: str
) -> tuple[str, list[object]]:
    """``" AND ..."``: the ``events`` or ``claims`` row ``alias`` carries any of
    ``tags`` (one indexed probe of its tag rows); empty without tags."""
    if not tags:
        return "", []
    condition = (
        f" AND EXISTS (SELECT 1 FROM {target}_tags t"  # noqa: S608 - our names
        f" WHERE t.{target}_rowid = {alias}.rowid"
        " AND t.tag IN (SELECT value FROM json_each(?)))"
    )
    return condition, [json.dumps(list(tags))]


def event_probe(
    recall_filter: RecallFilter | None, rowid: str
) -> tuple[str, list[object]]:
    """The filter as one ``" AND EXISTS (...)"`` on the event whose rowid is the SQL
    expression ``rowid`` (an FTS hit): one primary-key probe per hit, before LIMIT."""
    conditions, params = event_conditions(recall_filter, "f")
    if not conditions:
        return "", []
    return (
        f" AND EXISTS (SELECT 1 FROM events f WHERE f.rowid = {rowid}{conditions})",  # noqa: S608
        params,
    )


def claim_probe(
    recall_filter: RecallFilter | None, rowid: str
) -> tuple[str, list[object]]:
    conditions, params = claim_conditions(recall_filter, "f")
    if not conditions:
        return "", []
    return (
        f" AND EXISTS (SELECT 1 FROM claims f WHERE f.rowid = {rowid}{conditions})",  # noqa: S608
        params,
    )
