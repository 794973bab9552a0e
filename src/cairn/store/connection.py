"""Opening the database: pragmas and schema migrations.

Every connection gets the same pragmas. Migrations are forward-only SQL files applied in
order inside one transaction each, and recorded in ``PRAGMA user_version``.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

import apsw

from cairn import crashpoints
from cairn.errors import SchemaVersionError
from cairn.store.integrity import refill_event_fts
from cairn.store.metadata import add_metadata_columns
from cairn.store.rekey import rekey_claims
from cairn.store.succession import backfill_succession, reorder_coarse_chains

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

__all__ = ["BUSY_TIMEOUT_MS", "SCHEMA_VERSION", "open_connection"]

# Each script, then its Python step (work SQL cannot do, such as hashing), in one
# transaction.
_MIGRATIONS: tuple[tuple[str, Callable[[apsw.Connection], None] | None], ...] = (
    ("0001_initial.sql", None),
    ("0002_ingestion.sql", None),
    ("0003_forgetting.sql", None),
    ("0004_retention.sql", None),
    ("0005_scoped_forgetting.sql", rekey_claims),
    ("0006_event_context_column.sql", refill_event_fts),
    ("0007_recurrence.sql", None),
    ("0008_succession.sql", backfill_succession),
    ("0009_contributions.sql", None),
    ("0010_dirty_queue.sql", None),
    ("0011_merges.sql", None),
    ("0012_conflicts.sql", None),
    ("0013_projections.sql", None),
    ("0014_learning.sql", None),
    ("0015_evidence_class.sql", None),
    ("0016_entities.sql", None),
    ("0017_coarse_succession.sql", reorder_coarse_chains),
    ("0018_coarse_succession_midpoint.sql", reorder_coarse_chains),
    ("0019_metadata.sql", add_metadata_columns),
    ("0020_coarse_succession_news.sql", reorder_coarse_chains),
)
SCHEMA_VERSION = len(_MIGRATIONS)
# A busy writer is normal (one writer connection, several readers): wait rather than fail.
BUSY_TIMEOUT_MS = 5_000


def _configure(connection: apsw.Connection, *, synchronous_full: bool) -> None:
    connection.set_busy_timeout(BUSY_TIMEOUT_MS)
    connection.pragma("journal_mode", "wal")
    connection.pragma("synchronous", "full" if synchronous_full else "normal")
    connection.pragma("foreign_keys", True)
    # Forgotten text must not linger in free pages (tests check the file after a checkpoint).
    connection.pragma("secure_delete", True)
    connection.pragma("temp_store", "memory")


def _migrate(connection: apsw.Connection) -> None:
    version = int(connection.pragma("user_version"))
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"database schema version {version} is newer than this cairn ({SCHEMA_VERSION})"
        )
    package = resources.files("cairn.store") / "migrations"
    for index in range(version, SCHEMA_VERSION):
        name, step = _MIGRATIONS[index]
        script = (package / name).read_text(encoding="utf-8")
        with connection:
            connection.execute(script)
            if step is not None:
                step(connection)
            connection.pragma("user_version", index + 1)
            crashpoints.reach("migration.step")
        crashpoints.reach("migration.committed")


def open_connection(
    path: Path,
    *,
    synchronous_full: bool = False,
    readonly: bool = False,
    vfs: str | None = None,
) -> apsw.Connection:
    """Open ``path`` with cairn's pragmas; the first writer also migrates the schema.

    ``vfs`` names a registered SQLite VFS to open through (None: the default).
    """
    flags = (
        apsw.SQLITE_OPEN_READONLY
        if readonly
        else (apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
    )
    connection = apsw.Connection(str(path), flags=flags, vfs=vfs)
    try:
        _configure(connection, synchronous_full=synchronous_full)
        if not readonly:
            _migrate(connection)
    except BaseException:
        connection.close()
        raise
    return connection
