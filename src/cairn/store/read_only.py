"""Reading a database in a directory this process cannot write.

A WAL database normally needs its ``-shm`` file, which a reader creates if it is missing;
in a read-only directory it cannot. Two cases can still be read honestly:

- no WAL file, or an empty one: every committed transaction is in the database file, so
  it is opened ``immutable`` (SQLite then takes no locks and makes no files; the caller
  holds the data directory's lock, so no cairn writer runs meanwhile);
- a WAL with its ``-shm`` beside it: SQLite reads both without writing either.

A WAL without its ``-shm`` (left by a crash) holds committed transactions only a writer
can fold in: that is refused with ReadOnlyDataDirectoryError rather than read without
them. A database whose schema is older than this cairn's needs migrating, which is a
write, and is refused the same way. Nothing here writes: no pragma that changes the file,
no migration, ``query_only`` set.
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING

import apsw

from cairn.errors import (
    InvalidInputError,
    ReadOnlyDataDirectoryError,
    SchemaVersionError,
)
from cairn.store.connection import BUSY_TIMEOUT_MS, SCHEMA_VERSION
from cairn.store.errors import translated

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["open_read_only"]


def _uri(path: Path, *, immutable: bool) -> str:
    query = "?mode=ro&immutable=1" if immutable else "?mode=ro"
    return "file:" + urllib.parse.quote(str(path.absolute())) + query


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def open_read_only(path: Path) -> apsw.Connection:
    """A connection that only reads the database at ``path`` (see the module)."""
    if _size(path) is None:
        raise InvalidInputError(f"{path.parent} holds no cairn database ({path.name})")
    wal = path.with_name(path.name + "-wal")
    shm = path.with_name(path.name + "-shm")
    wal_size = _size(wal)
    immutable = not wal_size
    if not immutable and _size(shm) is None:
        raise ReadOnlyDataDirectoryError(
            f"{wal} holds committed changes that only a writer can fold into the"
            f" database, and {path.parent} is read-only: run any cairn command once as"
            " a user who can write it, then it can be read here"
        )
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    with translated():
        connection = apsw.Connection(_uri(path, immutable=immutable), flags=flags)
        try:
            connection.set_busy_timeout(BUSY_TIMEOUT_MS)
            connection.pragma("query_only", True)
            connection.pragma("temp_store", "memory")
            version = int(connection.pragma("user_version"))
        except BaseException:
            connection.close()
            raise
    if version != SCHEMA_VERSION:
        connection.close()
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"database schema version {version} is newer than this cairn"
                f" ({SCHEMA_VERSION})"
            )
        raise ReadOnlyDataDirectoryError(
            f"{path} has schema version {version} and this cairn reads {SCHEMA_VERSION}:"
            " migrating it is a write, and its directory is read-only"
        )
    return connection
