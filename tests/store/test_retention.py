"""Retention in the store: bounded deletes that keep each agent's newest rows (ties by
insertion order), the purge marking its checkpoint owed, and the v4 migration keeping
late results of an older file in their order."""

from __future__ import annotations

import datetime as dt
from importlib import resources
from pathlib import Path

import apsw

from cairn.domain.ids import AgentId
from cairn.store.connection import SCHEMA_VERSION, open_connection
from cairn.store.fts_purge import (
    checkpoint_generation,
    request_fts_purge,
    run_fts_purges,
    scrub_owed,
    settle_checkpoint,
)
from cairn.store.requests import Retention, prune_retention, save_recall_result

A, B = AgentId("a"), AgentId("b")
NOW = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
RETENTION = Retention(
    recall_max_age=dt.timedelta(hours=1),
    recall_keep=5,
    audit_max_age=dt.timedelta(days=30),
    audit_keep=5,
    batch=4,
)


def _ids(connection: apsw.Connection, agent: str) -> list[str]:
    return [
        str(row[0])
        for row in connection.execute(
            "SELECT request_id FROM recall_requests WHERE agent_id = ? ORDER BY seq",
            (agent,),
        )
    ]


def test_insert_keeps_the_newest_and_pruning_is_bounded(tmp_path: Path) -> None:
    connection = open_connection(tmp_path / "cairn.db")
    with connection:
        for n in range(12):
            save_recall_result(connection, A, f"a{n}", "ok", b"x", NOW)
            save_recall_result(connection, B, f"b{n}", "ok", b"x", NOW)
    assert len(_ids(connection, "a")) == 12
    with connection:
        save_recall_result(connection, A, "a12", "ok", b"x", NOW, keep=5)
    # At most three rows go with one insert: an over-full table shrinks gradually.
    assert _ids(connection, "a") == [f"a{n}" for n in range(3, 13)]
    with connection:
        pruned = prune_retention(connection, A, RETENTION, NOW)
    assert pruned.recall_results == 4  # the batch bound
    with connection:
        prune_retention(connection, A, RETENTION, NOW)
    assert _ids(connection, "a") == [f"a{n}" for n in range(8, 13)]
    assert len(_ids(connection, "b")) == 12  # another agent's rows are untouched
    with connection:
        pruned = prune_retention(connection, B, RETENTION, NOW + dt.timedelta(hours=2))
    assert pruned.recall_results == 4  # expired ones, bounded too
    connection.close()


def test_a_purge_marks_a_checkpoint_owed_until_settled(tmp_path: Path) -> None:
    connection = open_connection(tmp_path / "cairn.db")
    assert not scrub_owed(connection)
    with connection:
        request_fts_purge(connection, "claim_fts", NOW)
    assert scrub_owed(connection)
    assert checkpoint_generation(connection) is None
    with connection:
        assert run_fts_purges(connection, NOW) == 1
    first = checkpoint_generation(connection)
    assert first is not None
    with connection:
        request_fts_purge(connection, "event_fts", NOW)
        run_fts_purges(connection, NOW)
    # A purge after the checkpoint began: settling the older generation keeps it owed.
    with connection:
        assert not settle_checkpoint(connection, first)
    second = checkpoint_generation(connection)
    assert second == first + 1
    with connection:
        assert settle_checkpoint(connection, second)
    assert not scrub_owed(connection)
    with connection:
        assert run_fts_purges(connection, NOW) == 0  # nothing purged, nothing owed
    assert not scrub_owed(connection)
    connection.close()


def test_the_v4_migration_keeps_late_results_in_their_order(tmp_path: Path) -> None:
    db = tmp_path / "cairn.db"
    old = apsw.Connection(str(db))
    package = resources.files("cairn.store") / "migrations"
    for version, name in enumerate(
        ("0001_initial.sql", "0002_ingestion.sql", "0003_forgetting.sql"), start=1
    ):
        with old:
            old.execute((package / name).read_text(encoding="utf-8"))
            old.pragma("user_version", version)
    with old:
        for minute, request in ((3, "late"), (1, "early"), (2, "middle")):
            old.execute(
                "INSERT INTO recall_requests (agent_id, request_id, created_at, status,"
                " result) VALUES ('a', ?, ?, 'ok', x'01')",
                (request, (NOW + dt.timedelta(minutes=minute)).isoformat()),
            )
    old.close()
    connection = open_connection(db)
    assert connection.pragma("user_version") == SCHEMA_VERSION
    assert _ids(connection, "a") == ["early", "middle", "late"]
    assert checkpoint_generation(connection) is None
    connection.close()
