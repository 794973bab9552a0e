"""Batch bookkeeping on a real SQLite file, without a runtime: lease order, backoff
arithmetic, dead letters and replay, releasing an earlier runtime's leases; and intake
idempotency over arbitrary sequences of turns."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn import Turn
from cairn.domain.ids import AgentId
from cairn.errors import StaleLeaseError
from cairn.ingestion.intake import prepare_turns
from cairn.store.batches import (
    batch_statistics,
    count_pending,
    fail_batch,
    release_leases,
    replay_dead,
    take_lease,
)
from cairn.store.connection import open_connection
from cairn.store.evidence import IntakeOutcome, insert_events

AGENT = AgentId("a")
NOW = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[apsw.Connection]:
    opened = open_connection(tmp_path / "cairn.db")
    try:
        yield opened
    finally:
        opened.close()


def _ingest(connection: apsw.Connection, *texts: str) -> None:
    turns = [
        Turn(f"e{index}", "s1", "user", text, NOW, "Ana")
        for index, text in enumerate(texts)
    ]
    with connection:
        insert_events(connection, AGENT, prepare_turns(turns, 2400), NOW)


def _lease(connection: apsw.Connection, now_s: float, *, form_new: bool = True):
    with connection:
        return take_lease(
            connection,
            AGENT,
            now_s=now_s,
            lease_s=120.0,
            max_events=2,
            form_new=form_new,
            trigger="test",
            created_at=NOW,
        )


def _fail(connection: apsw.Connection, lease, now_s: float) -> bool:
    with connection:
        return fail_batch(
            connection,
            AGENT,
            lease,
            now_s=now_s,
            error="TransientProviderError",
            max_attempts=3,
            backoff_s=2.0,
            backoff_cap_s=3.0,
            now=NOW,
        )


def test_backoff_dead_letter_replay_and_release(connection: apsw.Connection) -> None:
    _ingest(connection, "one", "two", "three")
    first = _lease(connection, 0.0)
    assert [e.event_id for e in first.events] == ["e0", "e1"]
    second = _lease(connection, 0.0)
    assert [e.event_id for e in second.events] == ["e2"]
    assert _lease(connection, 0.0) is None

    assert _fail(connection, first, 10.0) is False
    # Backing off for 2 s: not before 12.
    assert _lease(connection, 11.9, form_new=False) is None
    retry = _lease(connection, 12.0, form_new=False)
    assert (retry.batch_id, retry.attempt) == (first.batch_id, 2)
    with pytest.raises(StaleLeaseError):
        _fail(connection, first, 12.0)  # the old token
    assert _fail(connection, retry, 12.0) is False
    # Doubled, then capped at 3 s.
    assert _lease(connection, 14.9, form_new=False) is None
    last = _lease(connection, 15.0, form_new=False)
    assert last.attempt == 3
    assert _fail(connection, last, 15.0) is True

    stats = batch_statistics(connection, AGENT)
    assert (stats.dead_batches, stats.dead_events) == (1, 2)
    # Dead letters are not pending work; the other batch still is.
    assert count_pending(connection, AGENT) == 1
    error = connection.execute(
        "SELECT last_error FROM event_batches WHERE batch_id = ?", (first.batch_id,)
    ).fetchone()[0]
    assert error == "TransientProviderError"

    with connection:
        assert replay_dead(connection, AGENT) == 1
    assert count_pending(connection, AGENT) == 3
    again = _lease(connection, 0.0, form_new=False)
    assert (again.batch_id, again.attempt) == (first.batch_id, 1)

    # A new runtime: its clock starts again, so every lease of the old one is released.
    with connection:
        assert release_leases(connection, AGENT) == 2
    assert _lease(connection, 0.0, form_new=False).batch_id == first.batch_id


texts = st.text(alphabet="ab c。密码", min_size=1, max_size=8).filter(str.strip)


@settings(max_examples=40)
@given(st.lists(st.tuples(st.sampled_from(["x", "y", "z"]), texts), max_size=8))
def test_intake_is_idempotent_for_any_sequence(
    tmp_path_factory: pytest.TempPathFactory, items: list[tuple[str, str]]
) -> None:
    connection = open_connection(tmp_path_factory.mktemp("db") / "cairn.db")
    try:
        turns = [Turn(event_id, "s1", "user", text, NOW) for event_id, text in items]
        prepared = prepare_turns(turns, 2400)
        with connection:
            first = insert_events(connection, AGENT, prepared, NOW)
        rows = connection.execute("SELECT count(*) FROM events").fetchone()[0]
        # The first text of each ID wins; a later other text under the ID is rejected.
        winners: dict[str, str] = {}
        for (event_id, text), result in zip(items, first, strict=True):
            if event_id not in winners:
                winners[event_id] = text
                assert result.outcome is IntakeOutcome.INGESTED
            elif winners[event_id] == text:
                assert result.outcome is IntakeOutcome.DUPLICATE
            else:
                assert result.outcome is IntakeOutcome.REJECTED
        with connection:
            again = insert_events(connection, AGENT, prepared, NOW)
        assert all(result.outcome is not IntakeOutcome.INGESTED for result in again)
        assert connection.execute("SELECT count(*) FROM events").fetchone()[0] == rows
        assert rows == len(winners)
    finally:
        connection.close()
