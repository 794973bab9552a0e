"""Who holds a data directory: the lock every writer takes, and the record a server leaves.

One process at a time opens a data directory's runtime: ``cairn serve`` or a CLI command.
Each takes an exclusive ``flock`` on ``DATA_DIR/server.lock`` first and holds it until it
has closed the runtime; the kernel drops the lock when the process dies, so a crash never
leaves a stale lock. The holder writes one JSON line into the lock file (``pid``, ``role``:
``server`` or ``command``, ``command``: what it runs) so that a refused process can say who
holds the directory.

A server also publishes ``DATA_DIR/server.json`` once it accepts connections::

    {"pid": 4242, "transport": "socket", "socket": "/run/cairn.sock",
     "started_at": "2026-05-09T07:35:25+00:00"}

written atomically (a sibling file renamed over it) and removed when it stops accepting.
CLI commands find the server through it and send their work over the socket
(cairn/cli/app.py). The record counts only while its ``pid`` holds the lock: a file left
by a killed server is stale, ignored, and removed by the next holder.
(tests/ipc/test_lifecycle.py and tests/cli/test_beside_server.py.)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

import attrs

from cairn.clock import SystemDomainClock
from cairn.errors import DataDirectoryInUseError
from cairn.runtime.private_files import make_private_directory
from cairn.runtime.writable import READ_ONLY_ERRNOS, read_only_error, unwritable_reason

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "LOCK_NAME",
    "RECORD_NAME",
    "DirectoryLock",
    "Occupant",
    "ServerRecord",
    "claim_data_directory",
    "hold_data_directory",
    "started_now",
]

LOCK_NAME = "server.lock"
RECORD_NAME = "server.json"

Role = Literal["server", "command"]


@attrs.frozen
class ServerRecord:
    """What a serving process publishes in ``server.json``."""

    pid: int
    transport: Literal["socket", "stdio"]
    socket: Path | None
    started_at: str

    def as_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "transport": self.transport,
            "socket": None if self.socket is None else str(self.socket),
            "started_at": self.started_at,
        }

    @classmethod
    def parse(cls, text: str) -> ServerRecord | None:
        """The record in ``text``, or None if it is not one (torn, foreign, damaged)."""
        try:
            data = json.loads(text)
            pid, transport, socket = data["pid"], data["transport"], data["socket"]
            started_at = str(data["started_at"])
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(pid, int) or transport not in {"socket", "stdio"}:
            return None
        if (transport == "socket") != isinstance(socket, str):
            return None
        return cls(pid, transport, None if socket is None else Path(socket), started_at)


@attrs.frozen
class Occupant:
    """The process holding a data directory, as far as its lock file and record say."""

    data_dir: Path
    pid: int | None
    role: Role | None
    command: str | None
    # The published record of the holder, when it is a server accepting connections.
    server: ServerRecord | None

    @property
    def socket(self) -> Path | None:
        """Where the holder takes requests, if it is a server on a socket."""
        return None if self.server is None else self.server.socket

    def describe(self) -> str:
        pid = "unknown" if self.pid is None else str(self.pid)
        if self.server is not None and self.server.socket is not None:
            return (
                f"a cairn server (pid {pid}, socket {self.server.socket})"
                f" holds {self.data_dir}"
            )
        if self.server is not None:
            return (
                f"a cairn server (pid {pid}, on stdio: it takes requests only from the"
                f" process that started it) holds {self.data_dir}"
            )
        if self.role == "server":
            return (
                f"a cairn server (pid {pid}) holds {self.data_dir} and is starting or"
                " stopping; try again once it listens"
            )
        doing = f", {self.command}" if self.command else ""
        return (
            f"another cairn process (pid {pid}{doing}) holds {self.data_dir};"
            " try again when it has finished"
        )

    def refusal(self, command: str | None = None) -> DataDirectoryInUseError:
        """The error that refuses ``command`` (or a second server) beside the holder."""
        reason = self.describe()
        if command and self.server is not None:
            reason += f"; {command} cannot run beside a server: stop the server first"
        return DataDirectoryInUseError(reason)


@attrs.define(eq=False)
class DirectoryLock:
    """The held lock of one data directory (release with :meth:`release` or ``with``)."""

    data_dir: Path
    _descriptor: int
    # Held on a directory this process cannot write: nothing may be written there.
    read_only: bool = False
    _published: bool = False

    @property
    def record_path(self) -> Path:
        return self.data_dir / RECORD_NAME

    def publish(self, record: ServerRecord) -> None:
        """Write ``server.json`` atomically: a reader sees the old file or the new one."""
        partial = self.data_dir / f".{RECORD_NAME}.{os.getpid()}.partial"
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(json.dumps(record.as_json()) + "\n")
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(partial, self.record_path)
        self._published = True

    def withdraw(self) -> None:
        """Remove ``server.json`` (no new connection will be accepted)."""
        self.record_path.unlink(missing_ok=True)
        self._published = False

    def release(self) -> None:
        if self._descriptor < 0:
            return
        if self._published:
            self.withdraw()
        descriptor, self._descriptor = self._descriptor, -1
        os.close(descriptor)  # closing releases the flock

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


def _holder(lock_path: Path) -> tuple[int | None, Role | None, str | None]:
    try:
        text = lock_path.read_text(encoding="utf-8").strip()
    except OSError:
        return None, None, None
    try:
        data = json.loads(text)
    except ValueError:
        data = text  # a lone pid, as cairn wrote it before the JSON line
    if isinstance(data, int):
        return data, None, None
    if not isinstance(data, dict):
        return None, None, None
    pid, role, command = data.get("pid"), data.get("role"), data.get("command")
    return (
        pid if isinstance(pid, int) else None,
        role if role in {"server", "command"} else None,
        command if isinstance(command, str) else None,
    )


def _occupant(data_dir: Path) -> Occupant:
    pid, role, command = _holder(data_dir / LOCK_NAME)
    server = None
    with contextlib.suppress(OSError):
        server = ServerRecord.parse(
            (data_dir / RECORD_NAME).read_text(encoding="utf-8")
        )
    if server is not None and (pid is None or server.pid != pid):
        server = None  # a dead server's record: its pid no longer holds the lock
    return Occupant(data_dir, pid, role, command, server)


def claim_data_directory(
    data_dir: Path, *, role: Role, command: str, read_only: bool = False
) -> DirectoryLock | Occupant:
    """Take the data directory's lock without waiting, or say who holds it.

    Creates the directory if needed (0700, and what an older cairn left readable by
    others in it is made private: cairn.runtime.private_files). A ``server.json`` left
    behind by a dead holder is removed once the lock is ours.

    A directory this process cannot write (cairn.runtime.writable) is still locked (a
    lock file it cannot open for writing is locked through a read-only descriptor) so
    that no writer starts while it is read; then ``read_only`` says what to do: without
    it the claim is refused with ReadOnlyDataDirectoryError naming ``command``, with it
    the lock comes back with ``read_only`` set (the holder line and the record stay
    the previous holder's: nothing is written). A holder that is already there is
    reported as usual either way: a server may serve a directory the caller cannot
    write.
    """
    try:
        make_private_directory(data_dir)
    except OSError as error:
        if error.errno not in READ_ONLY_ERRNOS:
            raise
        raise read_only_error(
            f"cannot create the data directory {data_dir} ({error.strerror})", command
        ) from None
    lock_path = data_dir / LOCK_NAME
    try:
        descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as error:
        if error.errno not in READ_ONLY_ERRNOS:
            raise
        return _claim_read_only(data_dir, command, read_only=read_only)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # Asked only once the lock is ours: no runtime of this process has the
        # database open, so the probe's close drops no SQLite lock.
        reason = unwritable_reason(data_dir)
        if reason is None:
            holder = {"pid": os.getpid(), "role": role, "command": command}
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, (json.dumps(holder) + "\n").encode(), 0)
            (data_dir / RECORD_NAME).unlink(missing_ok=True)
    except BlockingIOError:
        os.close(descriptor)
        return _occupant(data_dir)
    except BaseException:
        os.close(descriptor)
        raise
    if reason is None:
        return DirectoryLock(data_dir, descriptor)
    if read_only:
        return DirectoryLock(data_dir, descriptor, read_only=True)
    os.close(descriptor)
    raise read_only_error(reason, command)


def _claim_read_only(
    data_dir: Path, command: str, *, read_only: bool
) -> DirectoryLock | Occupant:
    """The claim of a directory whose lock file this process cannot write."""
    lock_path = data_dir / LOCK_NAME
    reason = (
        f"the data directory {data_dir} is read-only here ({LOCK_NAME} is not writable)"
    )
    try:
        descriptor = os.open(lock_path, os.O_RDONLY)
    except FileNotFoundError:
        # No cairn ever held it, and none can start there while it stays read-only.
        descriptor = -1
        reason = f"the data directory {data_dir} is read-only here"
    except OSError as error:
        if error.errno not in READ_ONLY_ERRNOS:
            raise
        raise read_only_error(
            f"{lock_path} cannot be read or written ({error.strerror})", command
        ) from None
    if descriptor >= 0:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            return _occupant(data_dir)
        except BaseException:
            os.close(descriptor)
            raise
    if not read_only:
        if descriptor >= 0:
            os.close(descriptor)
        raise read_only_error(reason, command)
    return DirectoryLock(data_dir, descriptor, read_only=True)


@contextlib.contextmanager
def hold_data_directory(
    data_dir: Path, *, role: Role = "server", command: str = "cairn serve"
) -> Iterator[DirectoryLock]:
    """Hold the data directory's lock while the block runs, or raise
    DataDirectoryInUseError naming the holder."""
    claimed = claim_data_directory(data_dir, role=role, command=command)
    if isinstance(claimed, Occupant):
        raise claimed.refusal()
    with claimed:
        yield claimed


def started_now() -> str:
    """A ``started_at`` stamp: the wall clock, ISO-8601 in UTC."""
    return SystemDomainClock().now().isoformat(timespec="seconds")
