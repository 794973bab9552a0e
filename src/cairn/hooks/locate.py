"""Finding the server that holds a data directory, and starting one when none runs.

The server's ``DATA_DIR/server.json`` (cairn.ipc.directory) names its socket; it counts
only while its ``pid`` lives. It is read here directly rather than through
cairn.ipc.directory, which brings the runtime's file helpers: the hook stays light.

With no live socket server, the hook starts a detached ``cairn serve --socket`` (its own
session, stdio to a log file under the data directory, so it outlives the hook) and waits
for its record inside the hook's budget: the call that started it then goes on against it.
A server that is not up in time keeps starting; that call spools its turn and the next
call finds the server (which ingests the spool as it starts).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = [
    "await_server",
    "default_socket",
    "live_socket",
    "serve_command",
    "start_server",
]

# A Unix socket path must fit in sun_path (108 bytes with its NUL).
_MAX_SOCKET_PATH = 100
# How often a hook looks for the record of the server it started.
_POLL_S = 0.05
# Replaces ``python -m cairn`` in the started server's command line (a JSON list);
# for a cairn installed elsewhere, and for tests that inject a test embedder.
SERVE_COMMAND_ENV = "CAIRN_HOOK_SERVE_COMMAND"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    return True


def live_socket(data_dir: Path) -> Path | None:
    """The socket of the live server holding ``data_dir``, or None."""
    try:
        record = json.loads((data_dir / "server.json").read_text(encoding="utf-8"))
        pid, transport, socket = record["pid"], record["transport"], record["socket"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if transport != "socket" or not isinstance(socket, str) or not isinstance(pid, int):
        return None
    return Path(socket) if _alive(pid) else None


def _server_starting(data_dir: Path) -> bool:
    """Whether a live server holds the directory's lock without a record yet (opening
    its runtime). Read from the holder line of ``server.lock``, never by taking the
    lock, which would refuse that server."""
    try:
        line = (data_dir / "server.lock").read_text(encoding="utf-8").splitlines()[0]
        holder = json.loads(line)
        pid, role = holder["pid"], holder["role"]
    except (OSError, ValueError, IndexError, KeyError, TypeError):
        return False
    return role == "server" and isinstance(pid, int) and _alive(pid)


def await_server(
    data_dir: Path, started: subprocess.Popen[bytes], wait_s: float
) -> Path | None:
    """The socket of the server ``started`` (or another one that won the directory's
    lock) once it is up, within ``wait_s``; None when it is not up by then, or when the
    started one exited with no other server on the way."""
    deadline = time.monotonic() + wait_s
    while True:
        if (socket := live_socket(data_dir)) is not None:
            return socket
        if started.poll() is not None and not _server_starting(data_dir):
            return None
        if time.monotonic() >= deadline:
            return None
        # Wakes early when the started process exits (refused, or failed at once).
        with contextlib.suppress(subprocess.TimeoutExpired):
            started.wait(min(_POLL_S, max(deadline - time.monotonic(), 0.0)))


def default_socket(data_dir: Path) -> Path:
    """Where a hook-started server listens: in the data directory when the path fits,
    else a per-directory name in the temporary directory."""
    inside = data_dir / "cairn.sock"
    if len(str(inside)) <= _MAX_SOCKET_PATH:
        return inside
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"cairn-{os.getuid()}-{digest}.sock"


def serve_command(data_dir: Path, socket: Path) -> list[str]:
    prefix = [sys.executable, "-m", "cairn"]
    if override := os.environ.get(SERVE_COMMAND_ENV):
        parsed = json.loads(override)
        if isinstance(parsed, list) and all(isinstance(part, str) for part in parsed):
            prefix = parsed
    return [*prefix, "--data", str(data_dir), "serve", "--socket", str(socket)]


def start_server(data_dir: Path) -> subprocess.Popen[bytes]:
    """Start a detached socket server on ``data_dir``; never waits for it."""
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    hooks_dir = data_dir / "hooks"
    hooks_dir.mkdir(exist_ok=True, mode=0o700)
    with (hooks_dir / "server.log").open("ab") as log:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and command
            serve_command(data_dir, default_socket(data_dir)),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    return process
