"""One writing process per data directory, for embedded runtimes too.

``cairn serve`` and every CLI command take the data directory's lock (``server.lock``, an
``flock`` the kernel releases when the process dies; cairn.ipc.directory) before they open a
runtime. :func:`hold_directory` makes ``open_memory`` itself take part: a program that
embeds cairn holds the lock while its runtime is open, and one that finds it held by
another process gets :class:`DataDirectoryInUseError` naming the holder, so a second
runtime never opens a directory another process writes (tests/runtime/test_directory_lock.py).
A directory this process cannot write is refused with ReadOnlyDataDirectoryError before
SQLite is asked to open it (cairn.runtime.writable).
A runtime opened inside a process that already holds the lock (the server, a CLI command)
goes ahead: that process is the one writer.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from typing import TYPE_CHECKING

from cairn.errors import DataDirectoryInUseError
from cairn.runtime.private_files import make_private_directory
from cairn.runtime.writable import READ_ONLY_ERRNOS, read_only_error, unwritable_reason

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = ["LOCK_NAME", "hold_directory"]

LOCK_NAME = "server.lock"


def _holder_pid(lock_path: Path) -> int | None:
    """The pid the holder wrote: a JSON object with ``pid``, or a bare pid."""
    try:
        data = json.loads(lock_path.read_text(encoding="utf-8").strip() or "null")
    except (OSError, ValueError):
        return None
    if isinstance(data, dict):
        data = data.get("pid")
    return data if isinstance(data, int) else None


@contextlib.contextmanager
def hold_directory(data_dir: Path) -> Iterator[None]:
    """Hold the data directory's lock while the block runs (unless this process holds it
    already), or raise DataDirectoryInUseError."""
    lock_path = data_dir / LOCK_NAME
    try:
        make_private_directory(data_dir)
        descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as error:
        if error.errno not in READ_ONLY_ERRNOS:
            raise
        raise read_only_error(
            f"the data directory {data_dir} is read-only here ({LOCK_NAME}:"
            f" {error.strerror})",
            "open_memory",
        ) from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # Only once the lock is ours (no runtime of this process has the database
        # open, so the probe's close drops no SQLite lock).
        reason = unwritable_reason(data_dir)
    except BlockingIOError:
        os.close(descriptor)
        holder = _holder_pid(lock_path)
        if holder == os.getpid():
            yield  # this process's server or command holds it: it is the one writer
            return
        raise DataDirectoryInUseError(
            f"another cairn process (pid {holder or 'unknown'}) holds {data_dir}:"
            " talk to its server over the socket (cairn.ipc), or stop it first"
        ) from None
    except BaseException:
        os.close(descriptor)
        raise
    try:
        if reason is not None:
            raise read_only_error(reason, "open_memory")
        holder_line = {"pid": os.getpid(), "role": "embedded", "command": "open_memory"}
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, (json.dumps(holder_line) + "\n").encode(), 0)
        yield
    finally:
        os.close(descriptor)  # closing releases the flock
