"""Opening the database: pragmas and schema migrations.

Every connection gets the same pragmas. Migrations are forward-only SQL files applied in
order inside one transaction each, and recorded in ``PRAGMA user_version``.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

import apsw

from cairn.errors import SchemaVersionError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["SCHEMA_VERSION", "open_connection"]

_MIGRATIONS = ("0001_initial.sql", "0002_ingestion.sql", "0003_forgetting.sql")
SCHEMA_VERSION = len(_MIGRATIONS)


def _configure(connection: apsw.Connection, *, synchronous_full: bool) -> None:
    # A busy writer is normal (one writer connection, several readers): wait rather than fail.
    connection.set_busy_timeout(5_000)
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
        script = (package / _MIGRATIONS[index]).read_text(encoding="utf-8")
        with connection:
            connection.execute(script)
            connection.pragma("user_version", index + 1)


def open_connection(
    path: Path, *, synchronous_full: bool = False, readonly: bool = False
) -> apsw.Connection:
    """Open ``path`` with cairn's pragmas; the first writer also migrates the schema."""
    flags = (
        apsw.SQLITE_OPEN_READONLY
        if readonly
        else (apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
    )
    connection = apsw.Connection(str(path), flags=flags)
    try:
        _configure(connection, synchronous_full=synchronous_full)
        if not readonly:
            _migrate(connection)
    except BaseException:
        connection.close()
        raise
    return connection
