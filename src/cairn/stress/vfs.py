"""An apsw VFS shim that injects I/O faults and simulates power loss.

:class:`FaultVFS` inherits the default VFS and wraps every file it opens, so SQLite runs
exactly as it does in production except where a :class:`FaultPlan` says a call fails: the
Nth matching call (counted from arming) of a kind (``xWrite``, ``xSync``, ``xTruncate``,
``xOpen`` of a file SQLite creates, ``xDelete``, ``xFileSize``, ``xRead``) on a kind of
file (the main database, its WAL, a journal), once (transient) or until the plan is
cleared (persistent), with the SQLite error a real disk gives (an ``SQLITE_IOERR_*``
variant, ``SQLITE_FULL``, ``SQLITE_READONLY``). SQLite calls a VFS from whatever thread
runs the statement (the runtime's worker threads), so every decision is under one lock.

The shared-memory index (``-shm``) is mapped by the inherited VFS itself and never passes
through here; it is rebuilt from the WAL after a crash anyway.

Power loss: with :meth:`FaultVFS.record` on, every write and truncation since a file's
last ``xSync`` is kept with the bytes it replaced. :meth:`FaultVFS.power_loss_image`
copies a data directory as a disk would hold it after the power went: per file, only the
first ``keep`` of those unsynced operations reached the platter, and optionally the next
write only in part (a torn write: a prefix of its page). Opening the copy is the reboot.
"""

from __future__ import annotations

import enum
import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import apsw
import attrs

if TYPE_CHECKING:
    from collections.abc import Callable

    from typing_extensions import Buffer

__all__ = [
    "Call",
    "FaultPlan",
    "FaultVFS",
    "FileKind",
    "read_only_plan",
]


class Call(enum.StrEnum):
    OPEN = "xOpen"
    """An open of a file SQLite creates (a WAL, a journal, a new database)."""
    WRITE = "xWrite"
    SYNC = "xSync"
    TRUNCATE = "xTruncate"
    DELETE = "xDelete"
    FILE_SIZE = "xFileSize"
    READ = "xRead"


class FileKind(enum.StrEnum):
    MAIN = "main"
    WAL = "wal"
    JOURNAL = "journal"
    """A rollback or super journal (absent in WAL mode, but a fault may target one)."""
    OTHER = "other"


def _kind_of_flags(flags: int) -> FileKind:
    if flags & apsw.SQLITE_OPEN_MAIN_DB:
        return FileKind.MAIN
    if flags & apsw.SQLITE_OPEN_WAL:
        return FileKind.WAL
    if flags & (apsw.SQLITE_OPEN_MAIN_JOURNAL | apsw.SQLITE_OPEN_SUPER_JOURNAL):
        return FileKind.JOURNAL
    return FileKind.OTHER


def _kind_of_name(name: str) -> FileKind:
    if name.endswith("-wal"):
        return FileKind.WAL
    if name.endswith("-journal"):
        return FileKind.JOURNAL
    if name.endswith(".db"):
        return FileKind.MAIN
    return FileKind.OTHER


@attrs.frozen
class FaultPlan:
    """Which calls fail, from which occurrence on, and with what."""

    calls: frozenset[Call]
    file: FileKind | None = None
    """The kind of file the call is on (None: any file)."""
    nth: int = 1
    """The first failing occurrence, counted over matching calls from arming (1-based)."""
    persistent: bool = False
    """Every matching call from the ``nth`` on fails, until cleared (else only that one)."""
    error: int = apsw.SQLITE_IOERR_WRITE
    """The SQLite result code the call answers (an extended code names the failure)."""

    def __attrs_post_init__(self) -> None:
        if self.nth < 1:
            raise ValueError("nth counts from 1")

    @classmethod
    def on(
        cls,
        call: Call,
        file: FileKind | None,
        *,
        nth: int = 1,
        persistent: bool = False,
        error: int = apsw.SQLITE_IOERR_WRITE,
    ) -> FaultPlan:
        return cls(frozenset({call}), file, nth, persistent, error)

    def matches(self, call: Call, file: FileKind) -> bool:
        return call in self.calls and (self.file is None or self.file is file)

    def describe(self) -> str:
        calls = "/".join(sorted(call.value for call in self.calls))
        where = "any file" if self.file is None else f"{self.file.value} file"
        how = "persistent" if self.persistent else "transient"
        return f"{calls} on {where} #{self.nth} {how} {_code_name(self.error)}"


def read_only_plan() -> FaultPlan:
    """Every write, truncation and deletion refused, as on a file system remounted
    read-only under a running process."""
    return FaultPlan(
        frozenset({Call.WRITE, Call.TRUNCATE, Call.DELETE}),
        None,
        1,
        persistent=True,
        error=apsw.SQLITE_READONLY,
    )


# SQLite's own words for the primary codes a fault answers (sqlite3_errstr).
_SAYS = {
    apsw.SQLITE_IOERR: "disk I/O error",
    apsw.SQLITE_FULL: "database or disk is full",
    apsw.SQLITE_READONLY: "attempt to write a readonly database",
    apsw.SQLITE_CANTOPEN: "unable to open database file",
}


def _code_name(code: int) -> str:
    prefixes = ("SQLITE_IOERR", "SQLITE_FULL", "SQLITE_READONLY", "SQLITE_CANTOPEN")
    for name in dir(apsw):
        if name.startswith(prefixes) and getattr(apsw, name) == code:
            return name
    return str(code)


@attrs.define
class _Unsynced:
    """One write or truncation since its file's last sync, with what it replaced."""

    offset: int
    """Where a write starts; for a truncation, the new size."""
    old: bytes
    """The bytes a write overwrote (shorter than ``new`` past the old end), or the
    tail a truncation cut off."""
    old_size: int
    new: bytes | None
    """What a write wrote; None for a truncation."""

    def undo(self, content: bytearray) -> None:
        if self.new is None:
            if self.offset < self.old_size:
                del content[self.offset :]
                content.extend(self.old)
            else:
                del content[self.old_size :]
            return
        content[self.offset : self.offset + len(self.old)] = self.old
        del content[self.old_size :]

    def redo_prefix(self, content: bytearray, length: int) -> None:
        """Apply only the first ``length`` bytes of this write (a torn write)."""
        if self.new is None:
            return
        part = self.new[:length]
        if len(content) < self.offset:
            content.extend(bytes(self.offset - len(content)))
        content[self.offset : self.offset + len(part)] = part


@attrs.define(eq=False)
class _State:
    """Everything the VFS decides on, behind one lock."""

    lock: threading.RLock = attrs.field(factory=threading.RLock)
    plan: FaultPlan | None = None
    seen: int = 0
    """Calls matching the plan since it was armed."""
    fired: int = 0
    counts: dict[tuple[Call, FileKind], int] = attrs.field(factory=dict)
    recording: bool = False
    unsynced: dict[str, list[_Unsynced]] = attrs.field(factory=dict)

    def check(self, call: Call, file: FileKind) -> None:
        """Count the call; raise the plan's error if this one fails."""
        with self.lock:
            key = (call, file)
            self.counts[key] = self.counts.get(key, 0) + 1
            plan = self.plan
            if plan is None or not plan.matches(call, file):
                return
            self.seen += 1
            if self.seen == plan.nth or (plan.persistent and self.seen > plan.nth):
                self.fired += 1
                error = apsw.exception_for(plan.error)
                # What SQLite itself would say, and that it was injected, and where.
                said = _SAYS.get(plan.error & 0xFF, "I/O error")
                where = f"{call.value} of the {file.value} file"
                error.args = (f"{said} ({_code_name(plan.error)} injected at {where})",)
                raise error


class _FaultFile(apsw.VFSFile):
    def __init__(
        self,
        state: _State,
        name: str | apsw.URIFilename | None,
        flags: list[int],
        kind: FileKind,
        path: str | None,
    ) -> None:
        super().__init__("", name, flags)
        self._state = state
        self._kind = kind
        self._path = path

    def xWrite(self, data: Buffer, offset: int) -> None:  # noqa: N802 - apsw's name
        state = self._state
        state.check(Call.WRITE, self._kind)
        if not state.recording or self._path is None:
            super().xWrite(data, offset)
            return
        with state.lock:
            new = bytes(data)
            size = super().xFileSize()
            old = (
                super().xRead(min(len(new), size - offset), offset)
                if offset < size
                else b""
            )
            state.unsynced.setdefault(self._path, []).append(
                _Unsynced(offset, bytes(old), size, new)
            )
            super().xWrite(data, offset)

    def xTruncate(self, newsize: int) -> None:  # noqa: N802 - apsw's name
        state = self._state
        state.check(Call.TRUNCATE, self._kind)
        if not state.recording or self._path is None:
            super().xTruncate(newsize)
            return
        with state.lock:
            size = super().xFileSize()
            tail = super().xRead(size - newsize, newsize) if newsize < size else b""
            state.unsynced.setdefault(self._path, []).append(
                _Unsynced(newsize, bytes(tail), size, None)
            )
            super().xTruncate(newsize)

    def xSync(self, flags: int) -> None:  # noqa: N802 - apsw's name
        state = self._state
        state.check(Call.SYNC, self._kind)
        with state.lock:
            super().xSync(flags)
            if self._path is not None:
                state.unsynced.pop(self._path, None)

    def xFileSize(self) -> int:  # noqa: N802 - apsw's name
        self._state.check(Call.FILE_SIZE, self._kind)
        return super().xFileSize()

    def xRead(self, amount: int, offset: int) -> bytes:  # noqa: N802 - apsw's name
        self._state.check(Call.READ, self._kind)
        return super().xRead(amount, offset)


def _path_of(name: str | apsw.URIFilename | None) -> str | None:
    if name is None:
        return None
    if isinstance(name, apsw.URIFilename):
        return name.filename()
    return name


class FaultVFS(apsw.VFS):
    """The default VFS with faults where a :class:`FaultPlan` says, registered under
    ``name`` (open a connection with ``vfs=name``; ``MemoryConfig.vfs`` for a runtime).
    Keep the object alive while connections use it; :meth:`close` unregisters it."""

    def __init__(self, name: str = "cairn-faults") -> None:
        self.name = name
        self._state = _State()
        super().__init__(name, "")

    # -- faults ------------------------------------------------------------------------
    def arm(self, plan: FaultPlan) -> None:
        """Fail calls as ``plan`` says, counting from now."""
        with self._state.lock:
            self._state.plan = plan
            self._state.seen = 0
            self._state.fired = 0

    def clear(self) -> None:
        """No call fails from now on."""
        with self._state.lock:
            self._state.plan = None

    @property
    def fired(self) -> int:
        """Calls the armed plan failed."""
        return self._state.fired

    @property
    def seen(self) -> int:
        """Calls matching the armed plan since it was armed (failed or not)."""
        return self._state.seen

    def count(self, call: Call, file: FileKind) -> int:
        """Calls of ``call`` on ``file`` kinds since this VFS was created."""
        with self._state.lock:
            return self._state.counts.get((call, file), 0)

    # -- power loss --------------------------------------------------------------------
    def record(self, *, on: bool = True) -> None:
        """Keep what each file has not synced yet (for :meth:`power_loss_image`)."""
        with self._state.lock:
            self._state.recording = on
            if not on:
                self._state.unsynced.clear()

    def unsynced(self) -> dict[str, int]:
        """Per file path: operations written since its last sync."""
        with self._state.lock:
            return {path: len(ops) for path, ops in self._state.unsynced.items() if ops}

    def power_loss_image(
        self,
        source: Path,
        target: Path,
        *,
        keep: Callable[[str, int], int] = lambda _path, _pending: 0,
        tear_bytes: int | None = None,
    ) -> dict[str, int]:
        """Copy data directory ``source`` to ``target`` as it would be after a power loss
        now: of each file's unsynced operations only the first ``keep(path, pending)``
        survive, and with ``tear_bytes`` the next write survives as its first that many
        bytes. The shared-memory index is left out (SQLite rebuilds it from the WAL).
        Answers, per file, how many unsynced operations were lost (a torn one counted)."""
        with self._state.lock:
            shutil.copytree(
                source,
                target,
                ignore=shutil.ignore_patterns("*-shm", "*.lock"),
                dirs_exist_ok=False,
            )
            lost: dict[str, int] = {}
            for path, ops in self._state.unsynced.items():
                source_path = Path(path)
                try:
                    relative = source_path.relative_to(source)
                except ValueError:
                    continue
                destination = target / relative
                if not destination.exists() or not ops:
                    continue
                kept = max(0, min(len(ops), keep(path, len(ops))))
                content = bytearray(destination.read_bytes())
                for op in reversed(ops[kept:]):
                    op.undo(content)
                if tear_bytes is not None and kept < len(ops):
                    ops[kept].redo_prefix(content, tear_bytes)
                destination.write_bytes(bytes(content))
                lost[str(relative)] = len(ops) - kept
            return lost

    # -- the VFS -----------------------------------------------------------------------
    def xOpen(  # noqa: N802 - apsw's name
        self, name: str | apsw.URIFilename | None, flags: list[int]
    ) -> apsw.VFSFile:
        kind = _kind_of_flags(flags[0])
        if flags[0] & apsw.SQLITE_OPEN_CREATE:
            self._state.check(Call.OPEN, kind)
        return _FaultFile(self._state, name, flags, kind, _path_of(name))

    def xDelete(self, filename: str, syncdir: bool) -> None:  # noqa: N802 - apsw's name
        state = self._state
        state.check(Call.DELETE, _kind_of_name(filename))
        with state.lock:
            super().xDelete(filename, syncdir)
            state.unsynced.pop(filename, None)

    def close(self) -> None:
        self.unregister()
