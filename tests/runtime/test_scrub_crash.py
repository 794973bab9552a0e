"""A forget or clear, then SIGKILL at every step of removing its text from the disk: the
next open purges and checkpoints before anything is served, so no file of the data
directory holds the forgotten words afterwards (and none did once the checkpoint ran)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import open_test_memory
from tests.helpers import files_holding

from cairn.api.status import AgentState
from cairn.store.connection import open_connection
from cairn.testing import FixedDomainClock

pytestmark = pytest.mark.subprocess

DRIVER = Path(__file__).with_name("scrub_driver.py")
# Words and the tails of their stems (tests.helpers.files_holding) in scrub_driver.SECRETS.
FORGOTTEN = ("zanzibarquokka", "ibarquokk", "vexillumtrombon", "llumtrombon")
SECOND = ("quillonberr", "llonberr", "marmaladework", "aladework")


def _owed(db: Path) -> tuple[int, int]:
    connection = open_connection(db)
    try:
        return (
            int(connection.execute("SELECT count(*) FROM fts_purges").fetchone()[0]),
            int(
                connection.execute(
                    "SELECT count(*) FROM wal_checkpoint_owed"
                ).fetchone()[0]
            ),
        )
    finally:
        connection.close()


def _crash(data_dir: Path, step: str, operation: str) -> None:
    data_dir.mkdir(parents=True)
    result = subprocess.run(
        [sys.executable, str(DRIVER), str(data_dir), step, operation],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == -signal.SIGKILL, result.stdout + result.stderr
    assert f"killing at {step}" in result.stdout


@pytest.mark.parametrize("operation", ["forget", "clear"])
@pytest.mark.parametrize("step", ["purge", "checkpoint", "settle"])
async def test_forgotten_text_is_off_the_disk_after_a_kill_and_reopen(
    data_dir: Path, clock: FixedDomainClock, step: str, operation: str
) -> None:
    gone = FORGOTTEN if operation == "forget" else (*FORGOTTEN, *SECOND)
    _crash(data_dir, step, operation)
    db = data_dir / "cairn.db"
    if step == "settle":
        # Killed after the checkpoint: nothing left on disk, only the owed row.
        assert files_holding(data_dir, gone) == {}
        assert _owed(db) == (0, 1)
    else:
        # Killed before it: the scan does see the words (in the WAL, in the index).
        assert files_holding(data_dir, gone)
    async with open_test_memory(data_dir, clock=clock) as memory:
        # Scrubbed by the open path, for every agent: after a forget, "a" has not even
        # started (a pending clear job resumes it in the background).
        if operation == "forget":
            assert (await memory.status()).agent("a").state is AgentState.STOPPED
        assert _owed(db) == (0, 0)
        assert files_holding(data_dir, gone) == {}
        assert files_holding(data_dir, ["gardening"])  # the kept turn, still seen
        if operation == "forget":
            assert files_holding(data_dir, SECOND)  # the claim not forgotten
            recall = await memory.recall("a", "Zanzibarquokka Quillonberry", k=5)
            assert "Quillonberry" in recall.memory_block
            assert "Zanzibarquokka" not in recall.memory_block
        else:
            await memory.resume_interrupted_clears()
    assert files_holding(data_dir, gone) == {}
