"""A recall's record is committed before its answer is handed back: a process killed with
SIGKILL right after a recall returned (no close, no maintenance pass) keeps the record,
the answer is fetchable by its request ID, and the turn reuses it after the restart."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest
import trio
from tests.conftest import open_test_memory

from cairn import RecallStatus
from cairn.testing import HashingEmbedder

pytestmark = pytest.mark.subprocess

DRIVER = Path(__file__).with_name("recall_driver.py")


async def test_the_record_survives_a_kill_right_after_the_recall_returns(
    data_dir: Path,
) -> None:
    result = await trio.run_process(
        [sys.executable, str(DRIVER), str(data_dir)],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert result.returncode == -signal.SIGKILL, result.stderr.decode()
    printed = json.loads(result.stdout.decode().splitlines()[-1])
    request_id = printed["request_id"]
    assert "Miso" in printed["block"]
    embedder = HashingEmbedder()
    async with open_test_memory(data_dir, embedder=embedder) as memory:
        (record,) = await memory.recalls("a", session_id="s1")
        assert (record.request_id, record.turn_id, record.status) == (
            request_id,
            "t1",
            "ok",
        )
        assert record.manifest is not None
        assert record.manifest.selected_ids
        fetched = await memory.fetch_recall("a", request_id)
        assert fetched.status is RecallStatus.OK
        assert fetched.memory_block == printed["block"]
        calls = embedder.calls
        again = await memory.recall("a", "grey cat", session_id="s1", turn_id="t1")
        assert again == fetched
        assert embedder.calls == calls
