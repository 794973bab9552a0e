"""Integrity checks of the SQLite file and repairs of what is derived from other rows.

The lexical indexes are contentless FTS5 tables, so FTS5's own ``'rebuild'`` cannot refill
them (it reads the content table, and there is none). Every FTS row is a function of its
claim or event row (:func:`~cairn.store.claims.claim_fts_body`,
:func:`~cairn.store.evidence.event_fts_row`), so a rebuild here creates the table afresh
from its stored DDL and writes every row again, in one transaction.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Final, Literal

import apsw
import attrs

from cairn.store.claims import claim_fts_body
from cairn.store.evidence import event_fts_row
from cairn.vectors.keys import EmbedTarget

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "FTS_TABLES",
    "FtsRowGaps",
    "FtsTable",
    "OrphanCounts",
    "delete_orphan_embeddings",
    "fill_event_fts",
    "fts_integrity",
    "fts_row_gaps",
    "orphan_counts",
    "rebuild_fts",
    "refill_event_fts",
    "sqlite_integrity",
]

FtsTable = Literal["claim_fts", "event_fts"]
FTS_TABLES: Final[tuple[FtsTable, ...]] = ("claim_fts", "event_fts")
_OWNER: Final[dict[FtsTable, str]] = {"claim_fts": "claims", "event_fts": "events"}
_SAMPLE = 20


def sqlite_integrity(connection: apsw.Connection) -> list[str]:
    """``PRAGMA integrity_check``: the problems it lists, or ``[]`` when it says ``ok``.

    Each FTS table is read first, in the caller's transaction: FTS5's part of the check
    uses the index structure the connection cached, and after another connection's
    ``optimize`` a stale one reads as "corruption found reading blob" (SQLite 3.54,
    measured: the scrubber purges while a doctor reads); any read of the table reloads it.
    """
    for table in FTS_TABLES:
        connection.execute(
            f"SELECT rowid FROM {table} LIMIT 1"  # noqa: S608 - fixed names
        ).fetchall()
    rows = [str(row[0]) for row in connection.execute("PRAGMA integrity_check")]
    return [] if rows == ["ok"] else rows


def fts_integrity(connection: apsw.Connection, table: FtsTable) -> str | None:
    """FTS5 ``integrity-check`` of the index structure (rank 0: a contentless table has no
    content to compare with); the error it raises, or ``None``.

    The command is an INSERT, so it runs on the writer connection.
    """
    try:
        connection.execute(
            f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 0)"  # noqa: S608 - fixed names
        )
    except apsw.Error as error:
        return f"{type(error).__name__}: {error}"
    return None


@attrs.frozen
class FtsRowGaps:
    """Where an FTS table and the rows it indexes disagree."""

    rows_without_owner: int
    """Index rows whose claim or event is gone."""
    owners_without_row: int
    """Claims or events with no index row."""
    sample_rowids: tuple[int, ...]
    """Up to 20 of those rowids, orphans first."""


@attrs.frozen
class OrphanCounts:
    """Rows that point at nothing, or extracted memories that cite no evidence."""

    extracted_claims_without_sources: int
    """An extracted claim is always committed with its spans; user and model claims may
    legitimately stand without evidence."""
    sources_without_claim_or_event: int
    embeddings_without_target: int

    def counts(self) -> dict[str, int]:
        """By field name, in field order."""
        return attrs.asdict(self)


def fts_row_gaps(connection: apsw.Connection, table: FtsTable) -> FtsRowGaps:
    """Index rows whose claim or event is gone, and claims or events with no index row."""
    owner = _OWNER[table]
    orphans = [
        int(row[0])
        for row in connection.execute(
            f"SELECT rowid FROM {table} EXCEPT SELECT rowid FROM {owner} ORDER BY 1"  # noqa: S608 - fixed names
        )
    ]
    missing = [
        int(row[0])
        for row in connection.execute(
            f"SELECT rowid FROM {owner} EXCEPT SELECT rowid FROM {table} ORDER BY 1"  # noqa: S608 - fixed names
        )
    ]
    return FtsRowGaps(
        rows_without_owner=len(orphans),
        owners_without_row=len(missing),
        sample_rowids=tuple((orphans + missing)[:_SAMPLE]),
    )


_TARGETS = (EmbedTarget.CLAIM.value, EmbedTarget.EVENT.value)
# ?1 is the claim target, ?2 the event target.
_WITHOUT_TARGET = (
    " NOT EXISTS (SELECT 1 FROM claims c WHERE m.target = ?1"
    "  AND c.rowid = m.target_rowid AND c.agent_id = m.agent_id)"
    " AND NOT EXISTS (SELECT 1 FROM events e WHERE m.target = ?2"
    "  AND e.rowid = m.target_rowid AND e.agent_id = m.agent_id)"
)


def orphan_counts(connection: apsw.Connection) -> OrphanCounts:
    """Rows that point at nothing, or extracted memories that cite no evidence."""

    def count(sql: str, bindings: tuple[str, ...] = ()) -> int:
        row = connection.execute(sql, bindings).fetchone()
        return 0 if row is None else int(row[0])

    return OrphanCounts(
        extracted_claims_without_sources=count(
            "SELECT count(*) FROM claims c WHERE c.origin = 'extracted'"
            " AND NOT EXISTS (SELECT 1 FROM claim_sources s WHERE s.claim_rowid = c.rowid)"
        ),
        sources_without_claim_or_event=count(
            "SELECT count(*) FROM claim_sources s"
            " WHERE NOT EXISTS (SELECT 1 FROM claims c WHERE c.rowid = s.claim_rowid)"
            " OR NOT EXISTS (SELECT 1 FROM events e WHERE e.rowid = s.event_rowid)"
        ),
        embeddings_without_target=count(
            "SELECT count(*) FROM embeddings m WHERE" + _WITHOUT_TARGET,  # noqa: S608 - fixed clause
            _TARGETS,
        ),
    )


def delete_orphan_embeddings(connection: apsw.Connection) -> int:
    """Drop vectors whose claim or event is gone (or belongs to another agent)."""
    connection.execute(
        "DELETE FROM embeddings AS m WHERE" + _WITHOUT_TARGET,  # noqa: S608 - fixed clause
        _TARGETS,
    )
    return connection.changes()


def _claim_rows(connection: apsw.Connection) -> Iterator[tuple[int, str]]:
    for rowid, agent_id, text, predicate, scope, scope_key in connection.execute(
        "SELECT rowid, agent_id, text, predicate, scope, scope_key FROM claims"
        " ORDER BY rowid"
    ):
        yield (
            int(rowid),
            claim_fts_body(
                str(agent_id),
                str(text),
                None if predicate is None else str(predicate),
                str(scope),
                None if scope_key is None else str(scope_key),
            ),
        )


def _event_rows(connection: apsw.Connection) -> Iterator[tuple[int, str, str]]:
    for rowid, agent_id, speaker, text, occurred_at, context in connection.execute(
        "SELECT e.rowid, e.agent_id, e.speaker, e.text, e.occurred_at, p.text"
        " FROM events e LEFT JOIN events p ON p.rowid = e.context_rowid"
        " ORDER BY e.rowid"
    ):
        row = event_fts_row(
            str(agent_id),
            None if speaker is None else str(speaker),
            str(text),
            dt.datetime.fromisoformat(str(occurred_at)),
            None if context is None else str(context),
        )
        yield int(rowid), row.body, row.context


def _fill_claim_fts(connection: apsw.Connection) -> int:
    rows = list(_claim_rows(connection))
    connection.executemany("INSERT INTO claim_fts (rowid, body) VALUES (?, ?)", rows)
    return len(rows)


def fill_event_fts(connection: apsw.Connection) -> int:
    """Write every event's row into an empty ``event_fts``; returns how many."""
    rows = list(_event_rows(connection))
    connection.executemany(
        "INSERT INTO event_fts (rowid, body, context) VALUES (?, ?, ?)", rows
    )
    return len(rows)


def refill_event_fts(connection: apsw.Connection) -> None:
    """The Python step of migration 0006: its script created ``event_fts`` with the
    context column, empty; every event's row is written again from the events table."""
    fill_event_fts(connection)


def rebuild_fts(connection: apsw.Connection, table: FtsTable) -> int:
    """Empty ``table`` and write every row again from its owner rows; returns how many.

    The caller owns the transaction: the index is never seen half rebuilt.
    """
    # Dropped and created again from its own stored DDL rather than emptied with
    # 'delete-all': that resets the index's structure cookie, and another connection's
    # cached structure can then pass as current and read pages that no longer exist. A
    # schema change makes every connection load the table afresh.
    row = connection.execute(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    assert row is not None  # noqa: S101 - created by the migrations
    connection.execute(f"DROP TABLE {table}")
    connection.execute(str(row[0]))
    fill = _fill_claim_fts if table == "claim_fts" else fill_event_fts
    return fill(connection)
