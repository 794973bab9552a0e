"""Cancellation at any await of the ingest path leaves the database consistent: every
event has its FTS row, every claim its sources and FTS row, and nothing is half-written.
Checked after reopening the file."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from tests.conftest import TEST_CONFIG
from tests.helpers import turn

from cairn import open_memory
from cairn.store.connection import open_connection
from cairn.testing import FixedDomainClock, HashingEmbedder

TURNS = [
    turn("e1", "I love hiking with my dog Rex."),
    turn("e2", "My favourite food is ramen."),
    turn("e3", "I'm going to Oslo next Friday."),
    turn("e4", "我喜欢喝绿茶。"),
]


class CancelAfterSteps(trio.abc.Instrument):
    """Cancels ``scope`` once ``task`` has been scheduled ``steps`` times: the cancellation
    lands at whatever await the task reaches next, so sweeping ``steps`` covers every await."""

    def __init__(
        self, task: trio.lowlevel.Task, scope: trio.CancelScope, steps: int
    ) -> None:
        self.task, self.scope, self.remaining = task, scope, steps

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task is self.task:
            self.remaining -= 1
            if self.remaining == 0:
                self.scope.cancel()


def _check_consistency(path: Path) -> dict[str, int]:
    connection = open_connection(path)
    try:

        def count(sql: str) -> int:
            return int(connection.execute(sql).fetchone()[0])

        events = count("SELECT count(*) FROM events")
        assert count("SELECT count(*) FROM event_fts") == events
        claims = count("SELECT count(*) FROM claims")
        assert count("SELECT count(*) FROM claim_fts") == claims
        assert (
            count(
                "SELECT count(*) FROM claims c WHERE NOT EXISTS"
                " (SELECT 1 FROM claim_sources s WHERE s.claim_rowid = c.rowid)"
            )
            == 0
        )
        assert (
            count(
                "SELECT count(*) FROM claim_sources s JOIN events e ON e.rowid = s.event_rowid"
                " WHERE e.extracted = 0"
            )
            == 0
        ), "claims exist for an event that is not marked extracted"
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        pending = count("SELECT count(*) FROM events WHERE extracted = 0")
        return {"events": events, "claims": claims, "pending": pending}
    finally:
        connection.close()


@pytest.mark.parametrize("steps", range(1, 13))
async def test_cancel_at_every_await_of_ingest(tmp_path: Path, steps: int) -> None:
    data_dir = tmp_path / "data"
    completed = False
    async with open_memory(
        data_dir, TEST_CONFIG, clock=FixedDomainClock(), embedder=HashingEmbedder()
    ) as memory:
        with trio.CancelScope() as scope:
            instrument = CancelAfterSteps(trio.lowlevel.current_task(), scope, steps)
            trio.lowlevel.add_instrument(instrument)
            try:
                await memory.ingest("agent-a", TURNS)
                await memory.wait_idle("agent-a")
                completed = True
            finally:
                trio.lowlevel.remove_instrument(instrument)
    counts = _check_consistency(data_dir / "cairn.db")
    assert counts["events"] in (0, len(TURNS))
    # Closing drains accepted work, even an ingest whose caller was cancelled after its
    # request was queued: nothing accepted is left unextracted.
    assert counts["pending"] == 0
    # Reopen: whatever was accepted is finished by the next runtime, never duplicated.
    async with open_memory(
        data_dir, TEST_CONFIG, clock=FixedDomainClock(), embedder=HashingEmbedder()
    ) as memory:
        report = await memory.ingest("agent-a", TURNS)
        await memory.wait_idle("agent-a")
        assert report.ingested + report.duplicates == len(TURNS)
    final = _check_consistency(data_dir / "cairn.db")
    assert final["events"] == len(TURNS)
    assert final["claims"] >= 1
    connection = open_connection(data_dir / "cairn.db")
    try:
        assert (
            connection.execute(
                "SELECT count(*) FROM events WHERE extracted = 0"
            ).fetchone()[0]
            == 0
        )
    finally:
        connection.close()
    if completed:
        assert counts["events"] == len(TURNS)
