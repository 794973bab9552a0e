"""A data directory readable by its owner only.

Memories sit in plain text in the database, its WAL and the vector files, so nobody but
the user who runs cairn may read any of it: the data directory is created 0700 and every
file cairn creates in it 0600 (the database file is created before SQLite opens it,
because SQLite gives its ``-wal`` and ``-shm`` files the database file's mode).

A directory made by an older cairn may still have loose modes (0755/0644): claiming the
directory tightens what cairn owns in it (the directory itself, the database and its
companions, the lock and record files, the vector tree) and logs each path it changed;
``cairn doctor`` reports the loose modes it finds (:func:`loose_paths`).
(tests/runtime/test_private_files.py.)
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "DIRECTORY_MODE",
    "FILE_MODE",
    "LoosePath",
    "create_private_file",
    "loose_paths",
    "make_private_directory",
    "tighten_private_modes",
]

logger = logging.getLogger("cairn.runtime.private_files")

DIRECTORY_MODE = 0o700
FILE_MODE = 0o600
# Bits that let anyone but the owner in.
_SHARED_BITS = stat.S_IRWXG | stat.S_IRWXO

# Top-level names cairn creates in a data directory (the vector tree is walked whole).
_OWNED_NAMES = (
    "cairn.db",
    "cairn.db-wal",
    "cairn.db-shm",
    "cairn.db-journal",
    "server.lock",
    "server.json",
)
_VECTOR_TREE = "vectors"


@attrs.frozen
class LoosePath:
    """A path cairn owns whose mode lets group or others in."""

    path: Path
    mode: int

    def describe(self) -> str:
        return f"{self.path} has mode {self.mode:04o} (group or others may read it)"


def _owned_paths(data_dir: Path) -> Iterator[Path]:
    yield data_dir
    for name in _OWNED_NAMES:
        yield data_dir / name
    vectors = data_dir / _VECTOR_TREE
    yield vectors
    if vectors.is_dir() and not vectors.is_symlink():
        for root, directories, files in os.walk(vectors):
            for name in (*directories, *files):
                yield Path(root) / name
    yield from _hidden_partials(data_dir)


def _hidden_partials(data_dir: Path) -> Iterator[Path]:
    """``server.json``'s staging files (``.server.json.PID.partial``)."""
    try:
        names = os.listdir(data_dir)
    except OSError:
        return
    for name in names:
        if name.startswith(".server.json.") and name.endswith(".partial"):
            yield data_dir / name


def loose_paths(data_dir: Path) -> list[LoosePath]:
    """The paths cairn owns in ``data_dir`` that group or others may read or enter."""
    found = []
    for path in _owned_paths(data_dir):
        try:
            status = path.lstat()
        except OSError:
            continue
        if stat.S_ISLNK(status.st_mode):
            continue  # never follow a link out of the directory
        mode = stat.S_IMODE(status.st_mode)
        if mode & _SHARED_BITS:
            found.append(LoosePath(path, mode))
    return found


def tighten_private_modes(data_dir: Path) -> list[LoosePath]:
    """Take group and other bits off every loose path cairn owns; the ones it changed.

    A path this process may not change (another user's file) is left as it is, logged,
    and still reported by :func:`loose_paths`.
    """
    changed = []
    for loose in loose_paths(data_dir):
        try:
            os.chmod(loose.path, loose.mode & ~_SHARED_BITS, follow_symlinks=False)
        except (OSError, NotImplementedError) as error:
            logger.warning("cannot make %s private: %s", loose.path, error)
            continue
        logger.warning(
            "%s had mode %04o: made private (%04o)",
            loose.path,
            loose.mode,
            loose.mode & ~_SHARED_BITS,
        )
        changed.append(loose)
    return changed


def make_private_directory(data_dir: Path) -> None:
    """Create ``data_dir`` 0700 if need be (its missing parents too, with the default
    mode: they are not cairn's) and tighten what an older cairn left loose in it."""
    if not data_dir.is_dir():
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            data_dir.mkdir(mode=DIRECTORY_MODE)
    tighten_private_modes(data_dir)


def create_private_file(path: Path) -> None:
    """Create ``path`` empty and 0600 unless it exists (then it is left as it is)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    os.close(descriptor)
