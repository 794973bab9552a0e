"""``cairn ingest`` on a disk that fills up after every line is stored: exit 5 in bounded
time (never a hang), every line stored and queued, and a later run once the disk has room
finishes them.

The command runs as a real process (tests/cli/full_disk_cairn.py: the real command line,
SQLite through the fault VFS, the disk full from its wait for idle on). The same over a
server: a real socket server in this process on the fault VFS, and the command's own
``ingest_file`` as its client.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import apsw
import attrs
import pytest
import trio
from tests.cli.conftest import write_jsonl
from tests.cli.full_disk_cairn import full_disk_cairn
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.ipc.harness import SERVER_ENV, short_directory
from tests.support.serve_hashing import hashing_cairn

from cairn.cli.app import EXIT_OK, EXIT_STOPPED
from cairn.cli.commands_memory import ingest_file
from cairn.domain.ids import AgentId
from cairn.errors import IngestStoppedError, PipelineStalledError
from cairn.ipc import open_unix_client
from cairn.ipc.client import Client
from cairn.ipc.server import serve_unix_socket
from cairn.store.batches import count_pending
from cairn.store.connection import open_connection
from cairn.stress.vfs import Call, FaultPlan, FaultVFS

if TYPE_CHECKING:
    from cairn.api.protocol import MemoryApi
    from cairn.api.reports import IngestReport
    from cairn.domain.evidence import Turn

pytestmark = pytest.mark.subprocess

LINES = 25  # more than a batch (20): one may commit before the disk fills, not all
# A hang would be cut here; a stall is found within a few backoffs (about 2 s) and the
# runtime then closes without draining what it cannot.
COMMAND_BOUND_S = 60.0


def _rows() -> list[dict[str, Any]]:
    return [
        {
            "id": f"g-{i}",
            "session": "s1",
            "role": "user",
            "text": f"My locker word number {i} is zq{i:02d}vkdrtm.",
        }
        for i in range(LINES)
    ]


def _run(command: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**SERVER_ENV, "HOME": str(home)},
        stdin=subprocess.DEVNULL,
        timeout=COMMAND_BOUND_S,
        check=False,
    )


def _stored_and_pending(data: Path) -> tuple[int, int]:
    connection = open_connection(data / "cairn.db", readonly=True)
    try:
        stored = connection.execute("SELECT count(*) FROM events").fetchone()[0]
        return int(stored), count_pending(connection, AgentId("a"))
    finally:
        connection.close()


def _ingest_on_a_full_disk(
    tmp_path: Path, *options: str
) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """``cairn ingest`` of the rows on a disk that fills at its wait for idle: the data
    directory, the input file and the finished run."""
    data = tmp_path / "data"
    path = write_jsonl(tmp_path / "turns.jsonl", _rows())
    command = ("--data", str(data), "ingest", "--agent", "a", str(path), *options)
    return data, path, _run(full_disk_cairn(*command), tmp_path)


def test_ingest_stops_with_exit_5_when_extraction_cannot_commit(
    tmp_path: Path,
) -> None:
    data, path, result = _ingest_on_a_full_disk(tmp_path)
    assert result.returncode == EXIT_STOPPED, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert "background extraction cannot commit" in result.stderr
    assert f"stopped after its last line ({LINES})" in result.stderr
    stored, pending = _stored_and_pending(data)
    assert stored == LINES  # nothing stored is lost
    assert pending > 0  # and what could not be extracted stays queued

    # The disk has room again: the same command finishes the queued lines.
    again = _run(
        hashing_cairn(
            "--data", str(data), "ingest", "--agent", "a", str(path), "--json"
        ),
        tmp_path,
    )
    assert again.returncode == EXIT_OK, again.stderr
    assert json.loads(again.stdout)["duplicate"] == LINES
    assert _stored_and_pending(data) == (LINES, 0)
    for i in (0, LINES // 2, LINES - 1):
        recalled = _run(
            hashing_cairn(
                "--data", str(data), "recall", "--agent", "a", f"zq{i:02d}vkdrtm"
            ),
            tmp_path,
        )
        assert recalled.returncode == EXIT_OK, recalled.stderr
        assert f"zq{i:02d}vkdrtm" in recalled.stdout


def test_ingest_json_reports_every_line_stored_and_the_stall_as_the_reason(
    tmp_path: Path,
) -> None:
    _, _, result = _ingest_on_a_full_disk(tmp_path, "--json")
    assert result.returncode == EXIT_STOPPED, (result.stdout, result.stderr)
    summary = json.loads(result.stdout)
    assert summary["ingested"] == LINES
    assert summary["rejected"] == []
    stopped = summary["stopped"]
    assert stopped["stored_lines"] == LINES
    assert stopped["line"] == LINES + 1  # every line before it is stored
    assert "background extraction cannot commit" in stopped["reason"]
    assert "StorageFullError" in stopped["reason"]


@attrs.define
class _DiskFillsAtTheWait:
    """A server's client whose disk fills up once every line is stored: at the wait."""

    client: Client
    vfs: FaultVFS
    plan: FaultPlan

    async def ingest(self, agent_id: str, turns: Sequence[Turn]) -> IngestReport:
        return await self.client.ingest(agent_id, turns)

    async def wait_idle(self, agent_id: str | None = None) -> None:
        self.vfs.arm(self.plan)
        await self.client.wait_idle(agent_id)


async def test_ingest_through_a_server_stops_when_extraction_cannot_commit(
    tmp_path: Path,
) -> None:
    vfs = FaultVFS("cairn-stalled-server")
    config = attrs.evolve(
        TEST_CONFIG, vfs=vfs.name, extraction_linger_s=3600.0, rules_linger_s=3600.0
    )
    path = write_jsonl(tmp_path / "turns.jsonl", _rows())
    stored_all = FaultPlan.on(Call.WRITE, None, persistent=True, error=apsw.SQLITE_FULL)
    try:
        with short_directory() as directory, trio.fail_after(90):
            socket_path = directory / "s.sock"
            async with (
                open_test_memory(tmp_path / "data", config) as memory,
                trio.open_nursery() as nursery,
            ):
                await nursery.start(serve_unix_socket, memory, socket_path)
                async with open_unix_client(socket_path) as client:
                    filling = _DiskFillsAtTheWait(client, vfs, stored_all)
                    with (
                        trio.fail_after(COMMAND_BOUND_S),
                        pytest.raises(IngestStoppedError) as raised,
                    ):
                        await ingest_file(cast("MemoryApi", filling), "a", path)
                    # The server's error arrived as itself, through its wire code.
                    assert isinstance(raised.value.__cause__, PipelineStalledError)
                    assert raised.value.stored_lines == LINES
                    assert raised.value.stopped_at == LINES + 1
                    vfs.clear()
                    summary = await ingest_file(client, "a", path)
                    assert summary["duplicate"] == LINES
                    recall = await client.recall("a", "zq07vkdrtm")
                    assert "zq07vkdrtm" in recall.memory_block
                nursery.cancel_scope.cancel()
    finally:
        vfs.close()
