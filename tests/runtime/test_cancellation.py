"""Cancellation at any await of the ingest path leaves the database consistent: every
event has its FTS row, every claim its sources and FTS row, and nothing is half-written.
Checked after reopening the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
from tests.conftest import open_test_memory
from tests.helpers import turn
from tests.runtime.scripted_text import ScriptedTextProvider, discard_all

from cairn.store.connection import open_connection

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
    async with open_test_memory(data_dir) as memory:
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
    async with open_test_memory(data_dir) as memory:
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


class CancelAfterAnySteps(trio.abc.Instrument):
    """Cancels ``scope`` after ``steps`` task steps of *any* task: the runtime and all its
    actors stop at whatever await they reached, as in a crash of the process."""

    def __init__(self, scope: trio.CancelScope, steps: int) -> None:
        self.scope, self.remaining, self.seen = scope, steps, 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.seen += 1
        self.remaining -= 1
        if self.remaining == 0:
            self.scope.cancel()


def _check_batches(path: Path) -> None:
    """No partial batch: a batch's events are extracted exactly when it is committed
    with a receipt, and no claim cites an event whose batch did not commit."""
    connection = open_connection(path)
    try:
        rows = connection.execute(
            "SELECT b.status, e.extracted FROM events e"
            " JOIN event_batches b ON b.batch_id = e.batch_id"
        ).fetchall()
        for status, extracted in rows:
            assert (status == "committed") == (extracted == 1), (status, extracted)
        orphans = connection.execute(
            "SELECT count(*) FROM claim_sources s JOIN events e ON e.rowid = s.event_rowid"
            " LEFT JOIN event_batches b ON b.batch_id = e.batch_id"
            " WHERE b.status IS NOT 'committed'"
        ).fetchone()[0]
        assert orphans == 0
        assert (
            connection.execute(
                "SELECT count(*) FROM event_batches WHERE (status = 'committed')"
                " <> (receipt IS NOT NULL)"
            ).fetchone()[0]
            == 0
        )
    finally:
        connection.close()


PIPELINE_TURNS = [
    *TURNS,
    turn("t1", "Deploy failed: disk full.", role="tool", kind="task_failed"),
    turn("e5", "I have a grey cat named Miso."),
]


def _cite_user_turns(events: list[dict[str, Any]]) -> dict[str, Any]:
    """A text model's answer: every user turn as a fact quoting it, the rest discarded."""
    users = [event for event in events if event["role"] == "user"]
    return {
        **discard_all([event for event in events if event["role"] != "user"]),
        "claims": [
            {
                "kind": "fact",
                "text": f"Ana said: {event['text']}",
                "sources": [{"event_id": event["event_id"], "quote": event["text"]}],
            }
            for event in users
        ],
    }


async def _run_pipeline(data_dir: Path, steps: int | None, extractor: str) -> int:
    """Ingest and extract under a scope cancelled after ``steps`` task steps."""
    provider = (
        ScriptedTextProvider(answer=_cite_user_turns) if extractor == "text" else None
    )
    with trio.CancelScope() as scope:
        instrument = CancelAfterAnySteps(scope, steps or 10**9)
        trio.lowlevel.add_instrument(instrument)
        try:
            async with open_test_memory(data_dir, text_provider=provider) as memory:
                await memory.ingest("agent-a", PIPELINE_TURNS)
                await memory.wait_idle("agent-a")
        finally:
            trio.lowlevel.remove_instrument(instrument)
    return instrument.seen


@pytest.mark.parametrize("extractor", ["rules", "text"])
async def test_cancel_anywhere_in_the_pipeline_leaves_no_partial_batch(
    tmp_path: Path, extractor: str
) -> None:
    reference_dir = tmp_path / "reference"
    total = await _run_pipeline(reference_dir, None, extractor)
    expected = _check_consistency(reference_dir / "cairn.db")
    assert expected["claims"] >= 1
    # Sweep the cancellation point over the whole run: every task step with the rule
    # extractor; every third one with the text provider (the same commit path, and the
    # test stays at seconds on a loaded 2-core machine).
    for steps in range(1, total, 1 if extractor == "rules" else 3):
        data_dir = tmp_path / f"cancel-{steps}"
        await _run_pipeline(data_dir, steps, extractor)
        if not (data_dir / "cairn.db").exists():
            continue
        _check_consistency(data_dir / "cairn.db")
        _check_batches(data_dir / "cairn.db")
        # Reopen: everything accepted is finished, nothing published twice.
        await _run_pipeline(data_dir, None, extractor)
        final = _check_consistency(data_dir / "cairn.db")
        _check_batches(data_dir / "cairn.db")
        assert final == expected, steps
