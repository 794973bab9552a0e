"""A data directory is readable by its owner only: the directory 0700 and every file cairn
writes in it (database, WAL, shared memory, vector files, lock and record files) 0600,
whether written by an embedded runtime or a served one; an export file too. A directory an
older cairn left loose is made private at open, and ``cairn doctor`` says what it changed.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
import trio
from tests.conftest import open_test_memory
from tests.helpers import turn
from tests.ipc.harness import (
    SERVER_ENV,
    SERVER_TIMEOUT_S,
    short_directory,
    start_socket_server,
)
from tests.support.serve_hashing import hashing_cairn

from cairn.ipc import open_unix_client
from cairn.testing import FixedDomainClock

SHARED_BITS = stat.S_IRWXG | stat.S_IRWXO


def _shared(root: Path) -> dict[str, str]:
    """Every path under ``root`` (and ``root``) that group or others may use."""
    found = {}
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & SHARED_BITS:
            found[str(path.relative_to(root.parent))] = f"{mode:04o}"
    return found


def _names(root: Path) -> set[str]:
    return {path.name for path in root.rglob("*") if path.is_file()}


async def test_every_file_of_an_embedded_runtime_is_private_to_its_owner(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.ingest(
            "a",
            [
                turn("t1", "The spare key is under the green frog statue."),
                turn("t2", "I moved to Lisbon last spring."),
            ],
        )
        await memory.remember("a", "Ana keeps bees on the roof.", by="user")
        await memory.wait_idle("a")
        recall = await memory.recall("a", "where is the spare key?", k=5)
        assert recall.items
        await memory.forget("a", "t2")
        # While open: the WAL and the shared-memory file exist, with the file's mode.
        assert {"cairn.db", "cairn.db-wal", "cairn.db-shm"} <= _names(data_dir)
        assert _shared(data_dir) == {}
    # After the close the vector projection has been written too.
    assert any(name.endswith(".vec") for name in _names(data_dir / "vectors")), _names(
        data_dir
    )
    assert _shared(data_dir) == {}


async def test_a_served_directory_and_its_export_are_private_to_their_owner(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with short_directory() as sockets:
        server = start_socket_server(
            data, sockets / "cairn.sock", tmp_path / "server.log"
        )
        try:
            with trio.fail_after(SERVER_TIMEOUT_S):
                async with open_unix_client(server.socket_path) as client:
                    await client.ingest(
                        "a", [turn("t1", "My locker code is kept in the blue box.")]
                    )
                    await client.wait_idle("a")
                    await client.recall("a", "locker code", k=5)
            # server.json, server.lock and the socket's directory entry, while serving.
            assert {"server.json", "server.lock"} <= _names(data)
            assert _shared(data) == {}, server.log()
            assert stat.S_IMODE(server.socket_path.stat().st_mode) == 0o600
        finally:
            assert server.stop() == 0, server.log()
    exported = tmp_path / "memories.jsonl"
    with trio.fail_after(SERVER_TIMEOUT_S):
        result = await trio.run_process(
            hashing_cairn("--data", str(data), "export", str(exported)),
            capture_stdout=True,
            capture_stderr=True,
            env=SERVER_ENV,
            check=False,
        )
    assert result.returncode == 0, result.stderr.decode()
    assert "blue box" in exported.read_text(encoding="utf-8")
    assert stat.S_IMODE(exported.stat().st_mode) == 0o600
    assert _shared(data) == {}


def _loosen_as_an_older_cairn_did(data_dir: Path) -> None:
    """0755 directories and 0644 files, and a file of the user's own beside them."""
    for path in [data_dir, *data_dir.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    user_file = data_dir / "notes.txt"  # not cairn's: left as its owner set it
    user_file.write_text("mine", encoding="utf-8")
    os.chmod(user_file, 0o644)


async def test_an_older_directorys_loose_modes_are_made_private_at_open(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.remember("a", "Ana keeps bees on the roof.", by="user")
        await memory.wait_idle("a")
    _loosen_as_an_older_cairn_did(data_dir)
    assert _shared(data_dir)

    async with open_test_memory(data_dir, clock=clock) as memory:
        assert (await memory.recall("a", "bees", k=5)).items

    assert _shared(data_dir) == {"data/notes.txt": "0644"}


@pytest.mark.subprocess
def test_doctor_reports_the_loose_modes_it_made_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ingest = subprocess.run(
        hashing_cairn(
            "--data", str(data), "remember", "--agent", "a", "Ana keeps bees."
        ),
        capture_output=True,
        env=SERVER_ENV,
        timeout=SERVER_TIMEOUT_S,
        check=False,
    )
    assert ingest.returncode == 0, ingest.stderr.decode()
    os.chmod(data, 0o755)
    os.chmod(data / "cairn.db", 0o644)

    doctor = subprocess.run(
        hashing_cairn("--data", str(data), "doctor", "--json"),
        capture_output=True,
        env=SERVER_ENV,
        timeout=SERVER_TIMEOUT_S,
        check=False,
    )

    assert doctor.returncode == 0, doctor.stderr.decode()
    report = json.loads(doctor.stdout)
    assert report["file_modes"] == {
        "made_private": [
            {"path": str(data), "mode": "0755"},
            {"path": str(data / "cairn.db"), "mode": "0644"},
        ],
        "loose": [],
    }
    assert report["ok"] is True
    assert _shared(data) == {}
