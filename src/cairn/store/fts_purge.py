"""Purging deleted rows' tokens from the contentless FTS5 indexes, and the checkpoint
that then takes the old pages out of the WAL.

FTS5 ``contentless_delete`` tables delete by marking; the tokens of a deleted row stay in
its segment until that segment is merged, and FTS5's own ``secure-delete`` option does not
apply to such tables. A forget or clear therefore records a purge request in its own
transaction, and :func:`run_fts_purges` rewrites the index with ``optimize`` (about 0.13 s
per 100k rows measured here), after which ``PRAGMA secure_delete`` zeroes the freed pages.

Rows are deleted without a purge where nothing is forgotten: a merge deletes the claim it
absorbed, a rewind the claims it derives again, a re-key rewrites a claim's row. Their
tokens stay until the next purge, so a forget of a turn purges the claim index as well as
the turn's, whether or not it removes a claim itself: the claim merged away from that turn
is already gone, and its words with the turn's must leave the disk.

The WAL still holds older copies of those pages (and of the deleted rows) until a
checkpoint copies the file's pages back and truncates the log. The purge's transaction
marks that checkpoint owed (:func:`checkpoint_generation`); the runtime settles it once a
TRUNCATE checkpoint succeeded (cairn.runtime.scrubbing). Both requests are rows, so a
crash in between leaves them for the next open.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import apsw

__all__ = [
    "checkpoint_generation",
    "purges_pending",
    "request_fts_purge",
    "run_fts_purges",
    "scrub_owed",
    "settle_checkpoint",
]

_INDEXES = ("claim_fts", "event_fts")


def request_fts_purge(
    connection: apsw.Connection, index_name: str, now: dt.datetime
) -> None:
    if index_name not in _INDEXES:
        raise ValueError(f"unknown FTS index {index_name!r}")
    connection.execute(
        "INSERT INTO fts_purges (index_name, requested_at) VALUES (?, ?)"
        " ON CONFLICT DO NOTHING",
        (index_name, now.astimezone(dt.UTC).isoformat()),
    )


def run_fts_purges(connection: apsw.Connection, now: dt.datetime) -> int:
    """Rewrite every index with a pending purge request; returns how many were purged.

    A purge that rewrote anything also marks a WAL checkpoint owed, in the same
    transaction.
    """
    pending = [
        str(row[0]) for row in connection.execute("SELECT index_name FROM fts_purges")
    ]
    for name in pending:
        if name in _INDEXES:
            connection.execute(
                f"INSERT INTO {name} ({name}) VALUES ('optimize')"  # noqa: S608 - fixed names
            )
    connection.execute("DELETE FROM fts_purges")
    if pending:
        _owe_checkpoint(connection, now)
    return len(pending)


def _owe_checkpoint(connection: apsw.Connection, now: dt.datetime) -> None:
    connection.execute(
        "INSERT INTO wal_checkpoint_owed (id, generation, requested_at) VALUES (1, 1, ?)"
        " ON CONFLICT (id) DO UPDATE SET generation = generation + 1,"
        " requested_at = excluded.requested_at",
        (now.astimezone(dt.UTC).isoformat(),),
    )


def purges_pending(connection: apsw.Connection) -> bool:
    row = connection.execute("SELECT EXISTS (SELECT 1 FROM fts_purges)").fetchone()
    return row is not None and bool(row[0])


def checkpoint_generation(connection: apsw.Connection) -> int | None:
    """The owed checkpoint's generation, or ``None`` when none is owed."""
    row = connection.execute(
        "SELECT generation FROM wal_checkpoint_owed WHERE id = 1"
    ).fetchone()
    return None if row is None else int(row[0])


def scrub_owed(connection: apsw.Connection) -> bool:
    """A purge or a checkpoint is owed (one cheap probe, run after every agent write)."""
    row = connection.execute(
        "SELECT EXISTS (SELECT 1 FROM fts_purges)"
        " OR EXISTS (SELECT 1 FROM wal_checkpoint_owed)"
    ).fetchone()
    return row is not None and bool(row[0])


def settle_checkpoint(connection: apsw.Connection, generation: int) -> bool:
    """The checkpoint of ``generation`` succeeded: no longer owed, unless a later purge
    marked it again meanwhile. Returns whether it was settled."""
    connection.execute(
        "DELETE FROM wal_checkpoint_owed WHERE id = 1 AND generation = ?",
        (generation,),
    )
    return connection.changes() > 0
