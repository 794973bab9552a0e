"""SQLite's errors reach callers of ``Database`` as cairn's typed store errors, decided by
result code (never by message): the clear fence's trigger refusal is ClearPendingError, a
full file StorageFullError, other constraints StoreConstraintError, a file that is not a
database StorageCorruptError; the writer stays usable after a refused transaction."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import apsw
import pytest
import trio

from cairn.domain.ids import AgentId
from cairn.errors import (
    ClearPendingError,
    StorageCorruptError,
    StorageFullError,
    StorageIOError,
    StoreConstraintError,
    StoreError,
)
from cairn.runtime.database import Database
from cairn.runtime.threads import Limiters
from cairn.store.clear_jobs import start_clear
from cairn.store.errors import store_error

A = AgentId("a")
NOW = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
INSERT_CLAIM = (
    "INSERT INTO claims (claim_id, agent_id, kind, lifecycle, origin, text, confidence,"
    " scope, provenance_key, content_hash, created_at, updated_at)"
    " VALUES (?, 'a', 'fact', 'active', 'user', 't', 1, 'agent', ?, ?, 'n', 'n')"
)


@pytest.fixture
async def database(tmp_path: Path) -> AsyncIterator[Database]:
    with trio.fail_after(30):
        opened = await Database.open(
            tmp_path / "cairn.db", Limiters(), readers=1, synchronous_full=False
        )
    try:
        yield opened
    finally:
        with trio.fail_after(30):
            await opened.aclose()


def _count_claims(connection: apsw.Connection) -> int:
    row = connection.execute("SELECT count(*) FROM claims").fetchone()
    assert row is not None
    return int(row[0])  # type: ignore[arg-type]


async def test_a_pending_clears_trigger_refusal_is_clear_pending_error(
    database: Database,
) -> None:
    with trio.fail_after(30):
        await database.write(lambda c: c.execute(INSERT_CLAIM, ("x", "p1", "h1")))
        await database.write(lambda c: start_clear(c, A, NOW))
        with pytest.raises(ClearPendingError) as refused:
            await database.write(lambda c: c.execute(INSERT_CLAIM, ("y", "p2", "h2")))
        with pytest.raises(ClearPendingError):
            await database.write(lambda c: c.execute("UPDATE claims SET text = 'z'"))
        assert _count_claims(database.writer) == 1
    cause = refused.value.__cause__
    assert isinstance(cause, apsw.ConstraintError)
    assert cause.extendedresult == apsw.SQLITE_CONSTRAINT_TRIGGER  # type: ignore[attr-defined]


async def test_other_constraints_are_store_constraint_errors(
    database: Database,
) -> None:
    with trio.fail_after(30):
        await database.write(lambda c: c.execute(INSERT_CLAIM, ("x", "p1", "h1")))
        with pytest.raises(StoreConstraintError) as refused:
            await database.write(lambda c: c.execute(INSERT_CLAIM, ("x", "p2", "h2")))
    assert not isinstance(refused.value, ClearPendingError)


async def test_a_full_file_is_storage_full_error_and_the_writer_recovers(
    database: Database,
) -> None:
    def fill(connection: apsw.Connection) -> None:
        for index in range(1_000):
            connection.execute(INSERT_CLAIM, (f"c{index}", f"p{index}", "h" * 4_000))

    with trio.fail_after(60):
        pages = await database.write(lambda c: int(c.pragma("page_count")))
        await database.write(lambda c: c.pragma("max_page_count", pages + 4))
        with pytest.raises(StorageFullError):
            await database.write(fill)
        # SQLite rolled the transaction back itself; the next one runs as usual.
        assert _count_claims(database.writer) == 0
        await database.write(lambda c: c.pragma("max_page_count", 1 << 30))
        await database.write(lambda c: c.execute(INSERT_CLAIM, ("x", "p1", "h1")))
        assert _count_claims(database.writer) == 1


async def test_a_failing_read_is_a_store_error(database: Database) -> None:
    with trio.fail_after(30), pytest.raises(StoreError):
        await database.read(lambda r: r.connection.execute("SELECT * FROM nowhere"))


async def test_a_file_that_is_not_a_database_is_storage_corrupt_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cairn.db"
    path.write_bytes(b"not a database, just bytes" * 200)
    with trio.fail_after(30), pytest.raises(StorageCorruptError):
        await Database.open(path, Limiters(), readers=1, synchronous_full=False)


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (apsw.FullError, StorageFullError),
        (apsw.IOError, StorageIOError),
        (apsw.CorruptError, StorageCorruptError),
        (apsw.NotADBError, StorageCorruptError),
        (apsw.ConstraintError, StoreConstraintError),
        (apsw.BusyError, StoreError),
        (apsw.SQLError, StoreError),
    ],
)
def test_the_table_maps_result_classes(
    raised: type[apsw.Error], expected: type[StoreError]
) -> None:
    assert type(store_error(raised("x"))) is expected


def test_the_first_error_of_a_chain_decides() -> None:
    # What apsw raises when SQLite rolled back under a failed savepoint.
    rollback = apsw.SQLError("cannot rollback - no transaction is active")
    rollback.__context__ = apsw.FullError("database or disk is full")
    assert type(store_error(rollback)) is StorageFullError


def test_every_raise_in_the_schema_is_the_clear_fence(tmp_path: Path) -> None:
    """ClearPendingError is decided by SQLITE_CONSTRAINT_TRIGGER alone: that holds while
    no other trigger raises."""
    from cairn.store.connection import open_connection

    connection = open_connection(tmp_path / "cairn.db")
    try:
        raising = {
            str(name)
            for name, sql in connection.execute(
                "SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'"
            )
            if "RAISE(" in str(sql).upper()
        }
    finally:
        connection.close()
    assert raising == {"claims_clear_fence_insert", "claims_clear_fence_update"}
