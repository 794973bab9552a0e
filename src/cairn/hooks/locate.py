"""Finding the server that holds a data directory, and starting one when none runs.

The server's ``DATA_DIR/server.json`` (cairn.ipc.directory) names its socket; it counts
only while its ``pid`` lives. It is read here directly rather than through
cairn.ipc.directory, which brings the runtime's file helpers: the hook stays light.

With no live socket server, the hook starts a detached ``cairn serve --socket`` (its own
session, stdio to a log file under the data directory) and does not wait for it beyond
its budget: the call that started it spools its turn, and the next call finds it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["default_socket", "live_socket", "serve_command", "start_server"]

# A Unix socket path must fit in sun_path (108 bytes with its NUL).
_MAX_SOCKET_PATH = 100
# Replaces ``python -m cairn`` in the started server's command line (a JSON list);
# for a cairn installed elsewhere, and for tests that inject a test embedder.
SERVE_COMMAND_ENV = "CAIRN_HOOK_SERVE_COMMAND"


def live_socket(data_dir: Path) -> Path | None:
    """The socket of the live server holding ``data_dir``, or None."""
    try:
        record = json.loads((data_dir / "server.json").read_text(encoding="utf-8"))
        pid, transport, socket = record["pid"], record["transport"], record["socket"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if transport != "socket" or not isinstance(socket, str) or not isinstance(pid, int):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    return Path(socket)


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


def start_server(data_dir: Path) -> int:
    """Start a detached socket server on ``data_dir``; its pid. Never waits for it."""
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
    return process.pid
