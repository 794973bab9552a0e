"""Whether this process can write a data directory, asked of the kernel itself.

A runtime writes the directory (SQLite creates its ``-wal`` and ``-shm`` files there) and
the database file; a directory made read-only (``chmod``, another user's files, a read-only
mount) must be refused with a sentence before any of that starts, not with a traceback
from deep inside SQLite. Modes are not read and compared: root ignores them, so the
question goes to the kernel (``access(2)`` for the directory, which answers ``EROFS`` on
a read-only mount for root too, and an ``open(2)`` for writing of each database file,
which changes nothing).
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING

from cairn.errors import ReadOnlyDataDirectoryError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "DATABASE_FILES",
    "READ_ONLY_COMMANDS",
    "READ_ONLY_ERRNOS",
    "read_only_error",
    "unwritable_reason",
]

# The database and the companions SQLite writes beside it.
DATABASE_FILES = ("cairn.db", "cairn.db-wal", "cairn.db-shm")
# errno values meaning "you may not write here" (not: something is broken).
READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
# What still works on a directory this process cannot write.
READ_ONLY_COMMANDS = "status, doctor (without --repair) and export"


def unwritable_reason(data_dir: Path) -> str | None:
    """Why this process cannot write ``data_dir`` and its database, or None if it can."""
    effective = os.access in os.supports_effective_ids
    if not os.access(data_dir, os.W_OK | os.X_OK, effective_ids=effective):
        problem = errno.EROFS if _read_only_mount(data_dir) else errno.EACCES
        return (
            f"the data directory {data_dir} is read-only here ({os.strerror(problem)})"
        )
    for name in DATABASE_FILES:
        path = data_dir / name
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            continue
        except OSError as error:
            if error.errno not in READ_ONLY_ERRNOS:
                raise
            return (
                f"the data directory {data_dir} is read-only here ({path.name}:"
                f" {error.strerror})"
            )
        os.close(descriptor)
    return None


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def read_only_error(reason: str, command: str) -> ReadOnlyDataDirectoryError:
    """The refusal of ``command``, which must write, on a directory it cannot write."""
    return ReadOnlyDataDirectoryError(
        f"{reason}: {command} needs to write there and was not run (nothing changed);"
        f" {READ_ONLY_COMMANDS} work on a read-only data directory"
    )
