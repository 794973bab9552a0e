"""Startup repair: malformed temporal metadata is normalised and the claim archived (never
an atemporal permanent fact); persona/working rows become atemporal; scope keys are
repaired without widening, unrecoverable narrow rows deleted (FTS in step), tombstoned
and counted first when a pending clear covers them."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
import trio
from tests.conftest import open_test_memory

from cairn import RecallContext
from cairn.domain.claim import ClaimDraft, ClaimKind, Lifecycle
from cairn.domain.ids import AgentId
from cairn.domain.scope import Scope, ScopeKind
from cairn.store.agents import ensure_agent
from cairn.store.claims import insert_claims, load_claims
from cairn.store.clear_jobs import start_clear
from cairn.store.connection import open_connection
from cairn.store.repair import repair_claims
from cairn.testing import FixedDomainClock

A = AgentId("a")


def _insert(
    connection: apsw.Connection,
    clock: FixedDomainClock,
    text: str,
    scope: Scope | None = None,
    kind: ClaimKind = ClaimKind.FACT,
) -> int:
    committed = insert_claims(
        connection,
        A,
        [ClaimDraft(kind, text, (), scope=scope or Scope.agent())],
        {},
        clock.now(),
    )
    return committed.inserted[0][0]


def _row(connection: apsw.Connection, rowid: int) -> tuple[object, ...] | None:
    row = connection.execute(
        "SELECT lifecycle, valid_from, valid_until, time_precision, timezone, scope_key"
        " FROM claims WHERE rowid = ?",
        (rowid,),
    ).fetchone()
    return None if row is None else tuple(row)


BROKEN_TEMPORAL = [
    ("valid_from = 'not a date', time_precision = 'day'", (None, None, "day")),
    (
        "valid_until = '2026-03-01T00:00:00+00:00'",
        (None, "2026-03-01T00:00:00+00:00", "day"),
    ),
    (
        "valid_from = '2026-03-01T00:00:00', time_precision = 'day'",
        ("2026-03-01T00:00:00+00:00", None, "day"),
    ),
    (
        "valid_from = '2026-03-01T00:00:00+00:00', time_precision = 'fortnight'",
        ("2026-03-01T00:00:00+00:00", None, "day"),
    ),
    (
        (
            "valid_from = '2026-03-02T00:00:00+00:00', valid_until = '2026-03-01T00:00:00+00:00',"
            " time_precision = 'day'"
        ),
        ("2026-03-02T00:00:00+00:00", None, "day"),
    ),
    (
        "valid_from = '2026-03-01T00:00:00+00:00', time_precision = 'day', timezone = 'Mars/Olympus'",
        ("2026-03-01T00:00:00+00:00", None, "day"),
    ),
]


@pytest.mark.parametrize(("damage", "expected"), BROKEN_TEMPORAL)
def test_malformed_temporal_metadata_is_normalised_and_archived(
    tmp_path: Path, clock: FixedDomainClock, damage: str, expected: tuple[object, ...]
) -> None:
    connection = open_connection(tmp_path / "c.db")
    with connection:
        ensure_agent(connection, A, clock.now())
        broken = _insert(connection, clock, "The lease ends in March.")
        fine = _insert(connection, clock, "I like tea.")
        connection.execute(f"UPDATE claims SET {damage} WHERE rowid = ?", (broken,))
    with connection:
        report = repair_claims(connection, clock.now())
        assert report.temporal_archived == 1
        row = _row(connection, broken)
        assert row is not None
        assert row[0] == "archived"
        assert row[1:4] == expected
        # It loads (no crash on the damaged fields), but not as active memory.
        assert load_claims(connection, A, [broken, fine], [Scope.agent()]).keys() == {
            fine
        }
        archived = load_claims(
            connection, A, [broken], [Scope.agent()], lifecycles=[Lifecycle.ARCHIVED]
        )
        assert archived[broken].temporal is not None
    with connection:
        assert repair_claims(connection, clock.now()).total() == 0  # idempotent
    connection.close()


def test_persona_rows_are_made_atemporal_not_archived(
    tmp_path: Path, clock: FixedDomainClock
) -> None:
    connection = open_connection(tmp_path / "c.db")
    with connection:
        ensure_agent(connection, A, clock.now())
        persona = _insert(
            connection, clock, "Ana: curious, kind.", kind=ClaimKind.PERSONA
        )
        connection.execute(
            "UPDATE claims SET valid_from = 'garbage', time_precision = 'day' WHERE rowid = ?",
            (persona,),
        )
    with connection:
        report = repair_claims(connection, clock.now())
    assert report.temporal_cleared == 1
    assert _row(connection, persona) == ("active", None, None, None, None, None)
    connection.close()


def test_scope_keys_are_repaired_without_widening(
    tmp_path: Path, clock: FixedDomainClock
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    connection = open_connection(data_dir / "cairn.db")
    with connection:
        ensure_agent(connection, A, clock.now())
        padded = _insert(
            connection, clock, "Session note about zebras.", Scope.session("s1")
        )
        blank = _insert(
            connection, clock, "Orphan note about zebras.", Scope.session("s2")
        )
        _insert(connection, clock, "Agent note about zebras.")
        connection.execute(
            "UPDATE claims SET scope_key = ' s1 ' WHERE rowid = ?", (padded,)
        )
        connection.execute(
            "UPDATE claims SET scope_key = '  ' WHERE rowid = ?", (blank,)
        )
    connection.close()

    async def check() -> None:
        async with open_test_memory(data_dir, clock=clock) as memory:
            plain = await memory.recall("a", "zebras", k=10)
            assert [i.text for i in plain.items] == ["Agent note about zebras."]
            in_session = await memory.recall(
                "a", "zebras", k=10, context=RecallContext(session_id="s1")
            )
            assert sorted(i.text for i in in_session.items) == [
                "Agent note about zebras.",
                "Session note about zebras.",
            ]

    trio.run(check)
    connection = open_connection(data_dir / "cairn.db")
    try:
        assert _row(connection, padded) is not None
        assert _row(connection, padded)[5] == "s1"  # type: ignore[index]
        assert _row(connection, blank) is None
        claims = connection.execute("SELECT count(*) FROM claims").fetchone()[0]
        assert (
            connection.execute("SELECT count(*) FROM claim_fts").fetchone()[0] == claims
        )
        assert connection.execute("SELECT count(*) FROM tombstones").fetchone()[0] == 0
    finally:
        connection.close()


def test_unrecoverable_row_under_a_pending_clear_is_tombstoned_and_counted(
    tmp_path: Path, clock: FixedDomainClock
) -> None:
    connection = open_connection(tmp_path / "c.db")
    with connection:
        ensure_agent(connection, A, clock.now())
        blank = _insert(connection, clock, "Orphan note.", Scope(ScopeKind.USER, "u1"))
        dated = _insert(connection, clock, "Dated note.")
        connection.execute("UPDATE claims SET scope_key = '' WHERE rowid = ?", (blank,))
        connection.execute(
            "UPDATE claims SET valid_from = 'x', time_precision = 'day' WHERE rowid = ?",
            (dated,),
        )
        provenance = connection.execute(
            "SELECT provenance_key FROM claims WHERE rowid = ?", (blank,)
        ).fetchone()[0]
        job, _ = start_clear(connection, A, clock.now())
    with connection:
        report = repair_claims(connection, clock.now())
    assert report.scope_deleted == 1
    assert report.counted_by_clear == 1
    assert report.temporal_archived == 1  # repaired under the fence
    assert connection.execute(
        "SELECT provenance_hash, content_hash FROM tombstones"
    ).fetchall() == [(provenance, "")]
    assert (
        connection.execute(
            "SELECT deleted_claims FROM clear_jobs WHERE job_id = ?", (job.job_id,)
        ).fetchone()[0]
        == 1
    )
    # The fence is back for everything else.
    with pytest.raises(apsw.ConstraintError, match="clear job pending"):
        connection.execute("UPDATE claims SET text = 'x' WHERE rowid = ?", (dated,))
    assert (
        connection.execute("SELECT count(*) FROM clear_fence_override").fetchone()[0]
        == 0
    )
    connection.close()
