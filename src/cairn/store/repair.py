"""Startup integrity repair of claim rows written by older or damaged code.

* Temporal metadata that does not parse (bad timestamps, naive times, unknown precision or
  zone, bounds without a precision, an inverted interval) is normalised and the claim is
  archived: it must never turn into a permanent, atemporal fact. Persona and working rows
  are atemporal by definition; their temporal fields are cleared.
* Scope pairs are repaired without ever widening applicability: a narrow-scope key with
  stray whitespace is trimmed (and the row re-indexed under its namespace); a narrow-scope
  row whose key is unrecoverable is deleted, never promoted to agent scope. If a pending
  clear covers it, its provenance tombstone (no content tombstone: its scope is unknown)
  is written and the job's count increased first, with the job's timestamp.

Both repairs may touch an agent whose clear job is pending: they lift the clear fence for
their own transaction only (``clear_fence_override``), so the fence still holds for every
other write (tests/store/test_repair.py).
"""

from __future__ import annotations

import datetime as dt
import logging
import zoneinfo
from typing import TYPE_CHECKING

import attrs

from cairn.domain.ids import AgentId
from cairn.domain.temporal import TimePrecision
from cairn.store.claims import lexical_body
from cairn.store.dirty import mark_dirty
from cairn.store.forget import PROTECTED_KINDS
from cairn.store.fts import index_text, namespace
from cairn.store.fts_purge import request_fts_purge
from cairn.store.rekey import rekey_claim
from cairn.store.tombstones import write_tombstone

if TYPE_CHECKING:
    import apsw

__all__ = ["RepairReport", "repair_claims"]

logger = logging.getLogger(__name__)

_PRECISIONS = frozenset(p.value for p in TimePrecision)


@attrs.define
class RepairReport:
    temporal_archived: int = 0
    temporal_cleared: int = 0
    scope_recovered: int = 0
    scope_deleted: int = 0
    counted_by_clear: int = 0

    def total(self) -> int:
        return (
            self.temporal_archived
            + self.temporal_cleared
            + self.scope_recovered
            + self.scope_deleted
        )


def _parse(value: object) -> dt.datetime | None:
    """A stored bound as an aware UTC datetime, or None if it cannot be read."""
    if value is None:
        return None
    try:
        parsed = dt.datetime.fromisoformat(str(value))
    except ValueError:
        return None
    if parsed.utcoffset() is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)


def _valid_zone(value: object) -> bool:
    try:
        zoneinfo.ZoneInfo(str(value))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


def _temporal_fix(
    row: tuple[object, ...],
) -> tuple[str | None, str | None, str, str | None, float] | None:
    """Normalised ``(from, until, precision, zone, confidence)`` if the row needs a fix."""
    _rowid, _kind, valid_from, valid_until, precision, zone, confidence = row[:7]
    start, end = _parse(valid_from), _parse(valid_until)
    if start is not None and end is not None and end <= start:
        end = None
    good_precision = precision in _PRECISIONS
    good_zone = zone is None or _valid_zone(zone)
    normal = (
        None if start is None else start.isoformat(),
        None if end is None else end.isoformat(),
        str(precision) if good_precision else TimePrecision.DAY.value,
        None if zone is None else (str(zone) if good_zone else "UTC"),
        float(confidence) if isinstance(confidence, float | int) else 0.5,
    )
    unchanged = (
        good_precision
        and good_zone
        and (valid_from is None or normal[0] == valid_from)
        and (valid_until is None or normal[1] == valid_until)
    )
    return None if unchanged else normal


def _repair_temporal(
    connection: apsw.Connection, stamp: str, report: RepairReport
) -> None:
    rows = connection.execute(
        "SELECT rowid, kind, valid_from, valid_until, time_precision, timezone,"
        " temporal_confidence, lifecycle, agent_id FROM claims"
        " WHERE time_precision IS NOT NULL"
        " OR valid_from IS NOT NULL OR valid_until IS NOT NULL OR timezone IS NOT NULL"
        " OR temporal_confidence IS NOT NULL"
    ).fetchall()
    for row in rows:
        rowid, kind = int(str(row[0])), str(row[1])
        if kind in PROTECTED_KINDS:
            # Persona and working rows are atemporal; any time data on them is stray.
            connection.execute(
                "UPDATE claims SET valid_from = NULL, valid_until = NULL,"
                " time_precision = NULL, timezone = NULL, temporal_confidence = NULL,"
                " updated_at = ? WHERE rowid = ?",
                (stamp, rowid),
            )
            report.temporal_cleared += 1
            continue
        fix = _temporal_fix(tuple(row))
        if fix is None:
            continue
        lifecycle = str(row[7])
        archived = "archived" if lifecycle in {"active", "candidate"} else lifecycle
        connection.execute(
            "UPDATE claims SET valid_from = ?, valid_until = ?, time_precision = ?,"
            " timezone = ?, temporal_confidence = ?, lifecycle = ?,"
            " revision = revision + 1, updated_at = ? WHERE rowid = ?",
            (*fix, archived, stamp, rowid),
        )
        mark_dirty(connection, AgentId(str(row[8])), [rowid])
        report.temporal_archived += 1


def _delete_unrecoverable(
    connection: apsw.Connection,
    row: tuple[object, ...],
    now: dt.datetime,
    report: RepairReport,
) -> None:
    rowid, agent_id, provenance = int(str(row[0])), str(row[1]), str(row[5])
    job = connection.execute(
        "SELECT job_id, created_at FROM clear_jobs WHERE agent_id = ? AND phase <> 'done'"
        " AND rowid_cutoff >= ? ORDER BY job_id LIMIT 1",
        (agent_id, rowid),
    ).fetchone()
    if job is not None:
        # The clear would have tombstoned it: keep that promise, but only for its
        # provenance (an unknown scope cannot suppress content anywhere).
        write_tombstone(connection, agent_id, provenance, "", str(job[1]))
        connection.execute(
            "UPDATE clear_jobs SET deleted_claims = deleted_claims + 1 WHERE job_id = ?",
            (job[0],),
        )
        report.counted_by_clear += 1
    connection.execute("DELETE FROM claims WHERE rowid = ?", (rowid,))
    connection.execute(
        "DELETE FROM dirty_work WHERE agent_id = ? AND claim_rowid = ?",
        (agent_id, rowid),
    )
    request_fts_purge(connection, "claim_fts", now)
    report.scope_deleted += 1
    logger.warning(
        "startup repair deleted claim row %d of agent %s: unrecoverable scope key",
        rowid,
        agent_id,
    )


def _repair_scopes(
    connection: apsw.Connection, now: dt.datetime, report: RepairReport
) -> None:
    rows = connection.execute(
        "SELECT rowid, agent_id, scope, scope_key, text, provenance_key, predicate"
        " FROM claims WHERE scope <> 'agent' AND (scope_key IS NULL"
        " OR scope_key <> trim(scope_key, ' ' || char(9, 10, 13))"
        " OR scope_key = '')"
    ).fetchall()
    for row in rows:
        key = None if row[3] is None else str(row[3]).strip()
        if not key:
            _delete_unrecoverable(connection, tuple(row), now, report)
            continue
        rowid, agent_id, scope = int(str(row[0])), str(row[1]), str(row[2])
        connection.execute(
            "UPDATE claims SET scope_key = ?, revision = revision + 1, updated_at = ?"
            " WHERE rowid = ?",
            (key, now.astimezone(dt.UTC).isoformat(), rowid),
        )
        body = lexical_body(str(row[4]), None if row[6] is None else str(row[6]))
        connection.execute("DELETE FROM claim_fts WHERE rowid = ?", (rowid,))
        connection.execute(
            "INSERT INTO claim_fts (rowid, body) VALUES (?, ?)",
            (rowid, index_text(body, namespace(agent_id, scope, key))),
        )
        # The scope key is part of the claim's identity hashes.
        rekey_claim(connection, rowid)
        mark_dirty(connection, AgentId(agent_id), [rowid])
        report.scope_recovered += 1


def repair_claims(connection: apsw.Connection, now: dt.datetime) -> RepairReport:
    """Run both repairs in the caller's transaction; returns what was changed."""
    report = RepairReport()
    fenced = [
        str(row[0])
        for row in connection.execute(
            "SELECT DISTINCT agent_id FROM clear_jobs WHERE phase <> 'done'"
        )
    ]
    connection.executemany(
        "INSERT OR IGNORE INTO clear_fence_override (agent_id) VALUES (?)",
        [(agent,) for agent in fenced],
    )
    try:
        _repair_temporal(connection, now.astimezone(dt.UTC).isoformat(), report)
        _repair_scopes(connection, now, report)
    finally:
        connection.execute("DELETE FROM clear_fence_override")
    if report.total():
        logger.warning("startup repair: %s", attrs.asdict(report))
    return report
