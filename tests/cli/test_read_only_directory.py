"""A data directory the user cannot write: every command that must write is refused with a
sentence (exit 2, nothing changed, no traceback), and ``status``, ``doctor`` and
``export`` read it read-only.

The read-only condition is real: the commands run as a user who owns the directory but
whose modes forbid writing (0500 directories, 0400 files). Root ignores modes, so when
the tests run as root the commands run as ``nobody`` (the directory is given to it,
``setpriv`` switches user before the command starts); otherwise they run as the user
running the tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli.conftest import TURNS, write_jsonl
from tests.ipc.harness import (
    SERVER_ENV,
    SERVER_TIMEOUT_S,
    short_directory,
    start_socket_server,
)
from tests.support.serve_hashing import hashing_cairn

pytestmark = pytest.mark.subprocess

RUN_AS_ROOT = os.geteuid() == 0
READER = pwd.getpwnam("nobody") if RUN_AS_ROOT else pwd.getpwuid(os.geteuid())


def _as_reader(command: list[str]) -> list[str]:
    """``command``, run as the reader (as it is when not root)."""
    if not RUN_AS_ROOT:
        return command
    switch = [
        "setpriv",
        f"--reuid={READER.pw_uid}",
        f"--regid={READER.pw_gid}",
        "--clear-groups",
    ]
    return [*switch, *command]


@pytest.fixture
def base() -> Iterator[Path]:
    """A directory the reader can enter (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="cairn-ro-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        _writable(path)
        shutil.rmtree(path, ignore_errors=True)


def _cairn(
    data: Path, *args: str, reader: bool = False
) -> subprocess.CompletedProcess[str]:
    command = hashing_cairn("--data", str(data), *args)
    return subprocess.run(
        _as_reader(command) if reader else command,
        capture_output=True,
        text=True,
        env={**SERVER_ENV, "HOME": str(data.parent)},
        stdin=subprocess.DEVNULL,
        timeout=SERVER_TIMEOUT_S,
        check=False,
    )


def _read_only(root: Path) -> None:
    """Give ``root`` to the reader, then forbid writing it: 0500 directories, 0400 files."""
    for path in [root, *root.rglob("*")]:
        if RUN_AS_ROOT:
            os.chown(path, READER.pw_uid, READER.pw_gid)
        path.chmod(0o500 if path.is_dir() else 0o400)


def _writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)


def _digest(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _stored(base: Path) -> tuple[Path, Path]:
    """A data directory with turns and a claim; its export (written while writable)."""
    data = base / "data"
    turns = write_jsonl(base / "turns.jsonl", TURNS)
    assert _cairn(data, "ingest", "--agent", "a", str(turns)).returncode == 0
    remembered = _cairn(data, "remember", "--agent", "a", "Ana keeps bees.")
    assert remembered.returncode == 0, remembered.stderr
    exported = base / "writable.jsonl"
    assert _cairn(data, "export", str(exported)).returncode == 0
    return data, exported


def _json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)


def test_commands_that_must_write_are_refused_with_a_sentence_and_change_nothing(
    base: Path,
) -> None:
    data, _ = _stored(base)
    turns = write_jsonl(base / "more.jsonl", [{**TURNS[0], "id": "t9"}])
    _read_only(data)
    before = _digest(data)
    with short_directory() as sockets:
        os.chmod(
            sockets, 0o777
        )  # the reader may bind there: only the data is read-only
        refused = {
            "ingest": _cairn(data, "ingest", "--agent", "a", str(turns), reader=True),
            "remember": _cairn(data, "remember", "--agent", "a", "x", reader=True),
            "forget": _cairn(data, "forget", "--agent", "a", "t1", reader=True),
            "clear": _cairn(data, "clear", "--agent", "a", "--yes", reader=True),
            "recall": _cairn(data, "recall", "--agent", "a", "tea", reader=True),
            "doctor --repair": _cairn(data, "doctor", "--repair", reader=True),
            "serve": _cairn(
                data, "serve", "--socket", str(sockets / "s.sock"), reader=True
            ),
        }
    for command, result in refused.items():
        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr.startswith("cairn: the data directory"), (command, result)
        assert "read-only" in result.stderr, command
        assert f"cairn {command.split()[0]}" in result.stderr, command
        assert "Traceback" not in result.stderr, command
    assert _digest(data) == before


def test_status_doctor_and_export_read_a_read_only_directory(base: Path) -> None:
    data, exported = _stored(base)
    _read_only(data)
    before = _digest(data)

    status = _json(_cairn(data, "status", "--json", reader=True))
    doctor = _json(_cairn(data, "doctor", "--json", reader=True))
    export = _cairn(data, "export", "-", reader=True)

    assert status["read_only"] is True
    assert status["embedder"] is None
    assert status["agents"]["a"]["events"] == len(TURNS)
    assert status["agents"]["a"]["claims"] >= 1
    assert status["agents"]["a"]["live"] is False
    assert doctor["read_only"] is True
    assert doctor["ok"] is True, doctor["problems"]
    assert doctor["sqlite_integrity"] == "ok"
    assert "FTS5 integrity-check (a write statement)" in doctor["skipped"]
    # The same lines an export over the runtime wrote while the directory was writable.
    assert export.returncode == 0, export.stderr
    assert export.stdout == exported.read_text(encoding="utf-8")
    assert "Ana keeps bees." in export.stdout
    assert _digest(data) == before


def test_a_killed_servers_wal_is_read_or_refused_but_never_read_without(
    base: Path,
) -> None:
    data = base / "data"
    with short_directory() as sockets:
        server = start_socket_server(data, sockets / "c.sock", base / "server.log")
        remembered = _cairn(data, "remember", "--agent", "a", "Rui keeps the ledger.")
        assert remembered.returncode == 0, remembered.stderr
        server.process.send_signal(signal.SIGKILL)
        server.stop()
    wal = data / "cairn.db-wal"
    assert wal.stat().st_size > 0  # the claim is committed in the WAL only
    _read_only(data)

    # With its shared-memory file beside it, the WAL is read: the claim is there.
    export = _cairn(data, "export", "-", reader=True)
    assert export.returncode == 0, export.stderr
    assert "Rui keeps the ledger." in export.stdout

    # Without it only a writer can recover the WAL: refused, not read without it.
    _writable(data)
    (data / "cairn.db-shm").unlink()
    _read_only(data)
    status = _cairn(data, "status", "--json", reader=True)
    assert status.returncode == 2, status.stderr
    assert "only a writer can fold into the database" in status.stderr
    assert "Traceback" not in status.stderr


def test_an_embedded_runtime_refuses_a_read_only_directory(base: Path) -> None:
    data, _ = _stored(base)
    _read_only(data)
    script = (
        "import sys, trio\n"
        "from cairn import open_memory\n"
        "from cairn.errors import ReadOnlyDataDirectoryError\n"
        "from cairn.testing import HashingEmbedder\n"
        "async def main():\n"
        "    try:\n"
        "        async with open_memory(sys.argv[1], embedder=HashingEmbedder()):\n"
        "            print('opened')\n"
        "    except ReadOnlyDataDirectoryError as error:\n"
        "        print('refused:', error)\n"
        "trio.run(main)\n"
    )
    result = subprocess.run(
        _as_reader([sys.executable, "-c", script, str(data)]),
        capture_output=True,
        text=True,
        env=SERVER_ENV,
        timeout=SERVER_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("refused: the data directory"), result.stdout
    assert "open_memory needs to write there" in result.stdout
