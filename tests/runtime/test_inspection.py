"""Inspecting and correcting memory, embedded: ``memories`` filtered in SQL before its
limit, ``memory`` with its evidence and lineage, and ``edit`` as the user: a new revision
in the old one's place (current or history as it was), the old one kept, archived, out of
recall with its source turns; the typed errors; a cancelled edit leaves the file whole."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import trio
from tests.conftest import open_test_memory
from tests.helpers import BASE_TIME, turn
from tests.runtime.test_cancellation import CancelAfterSteps

from cairn import Memory
from cairn.domain.scope import Scope, ScopeKind
from cairn.errors import (
    ArgumentOutOfRangeError,
    InvalidInputError,
    InvalidTransitionError,
    ProtectedClaimError,
    UnknownClaimError,
)
from cairn.store.connection import open_connection
from cairn.testing import FixedDomainClock


def _clock() -> FixedDomainClock:
    return FixedDomainClock(BASE_TIME + dt.timedelta(days=1))


async def _learn(memory: Memory, clock: FixedDomainClock) -> tuple[str, str, str]:
    """Berlin and ramen learned from turns on day 1; a cat remembered on day 2, in a
    user scope. Returns the three claim IDs."""
    await memory.ingest(
        "a",
        [
            turn("t1", "I live in Berlin.", at=BASE_TIME),
            turn("t2", "My favourite food is ramen.", at=BASE_TIME),
        ],
    )
    await memory.wait_idle("a")
    clock.advance(dt.timedelta(days=1))
    cat = await memory.remember(
        "a", "Ana's cat is 50% Miso_", by="user", scope=Scope(ScopeKind.USER, "ana")
    )
    assert cat.claim_id is not None
    (berlin,) = await memory.memories("a", text="Berlin")
    (ramen,) = await memory.memories("a", text="ramen")
    return berlin.id, ramen.id, cat.claim_id


async def test_memories_filters_in_sql_before_the_limit(tmp_path: Path) -> None:
    with trio.fail_after(60):
        clock = _clock()
        async with open_test_memory(tmp_path, clock=clock) as memory:
            berlin, ramen, cat = await _learn(memory, clock)
            listed = await memory.memories("a")
            # Newest stored first.
            assert listed[0].id == cat
            assert {item.id for item in listed} == {berlin, ramen, cat}
            first = next(item for item in listed if item.id == berlin)
            assert (first.text, first.kind, first.lifecycle) == (
                "Ana lives in Berlin",
                "fact",
                "active",
            )
            assert (first.origin, first.source_refs, first.scope) == (
                "extracted",
                ("t1",),
                "agent",
            )
            assert first.created_at == "2026-01-06T09:00:00+00:00"
            assert first.evidence_at == BASE_TIME.isoformat()
            remembered = listed[0]
            assert (remembered.origin, remembered.source_refs) == (
                "remembered_by_user",
                (),
            )
            assert (remembered.scope, remembered.scope_key) == ("user", "ana")

            async def ids(**filters: object) -> list[str]:
                return [item.id for item in await memory.memories("a", **filters)]  # type: ignore[arg-type]

            assert await ids(kind="preference") == [ramen]
            assert await ids(scope=Scope(ScopeKind.USER, "ana")) == [cat]
            assert set(await ids(scope=Scope.agent())) == {berlin, ramen}
            day2 = BASE_TIME + dt.timedelta(days=2)
            assert await ids(since=day2) == [cat]
            assert set(await ids(until=day2)) == {berlin, ramen}
            # The limit applies after the filters: the newest matching, not the newest.
            assert len(await ids(until=day2, limit=1)) == 1
            assert (await ids(limit=1)) == [cat]
            # Text is found anywhere, ASCII case folded, wildcards taken literally.
            assert await ids(text="BERLIN") == [berlin]
            assert await ids(text="50%") == [cat]
            assert await ids(text="Miso_") == [cat]
            assert await ids(text="%") == [cat]
            assert await ids(text="_") == [cat]
            assert await ids(lifecycle="archived") == []
            assert await ids(kind="fact", text="ramen") == []
            # Another agent's claims are not this one's.
            assert await memory.memories("b") == []


async def test_bad_filters_are_typed_errors(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with open_test_memory(tmp_path) as memory:
            with pytest.raises(InvalidInputError, match="unknown memory kind 'fax'"):
                await memory.memories("a", kind="fax")
            with pytest.raises(InvalidInputError, match="the lifecycles are"):
                await memory.memories("a", lifecycle="gone")
            with pytest.raises(InvalidInputError, match="UTC offset"):
                await memory.memories("a", since=dt.datetime(2026, 1, 1))  # noqa: DTZ001
            with pytest.raises(InvalidInputError, match="since must be before until"):
                await memory.memories("a", since=BASE_TIME, until=BASE_TIME)
            with pytest.raises(InvalidInputError, match="blank"):
                await memory.memories("a", text="  ")
            for limit in (0, 1001):
                with pytest.raises(ArgumentOutOfRangeError, match="limit must be"):
                    await memory.memories("a", limit=limit)
            with pytest.raises(UnknownClaimError):
                await memory.memory("a", "nope")
            with pytest.raises(InvalidInputError):
                await memory.memory("a", " ")


async def test_an_edit_is_a_new_revision_and_the_old_one_history(
    tmp_path: Path,
) -> None:
    with trio.fail_after(60):
        clock = _clock()
        async with open_test_memory(tmp_path, clock=clock) as memory:
            berlin, _, _ = await _learn(memory, clock)
            detail = await memory.memory("a", berlin)
            assert [(e.state, e.text) for e in detail.evidence] == [
                ("present", "I live in Berlin.")
            ]
            assert detail.lineage == ()

            report = await memory.edit("a", berlin, "I live in Munich.")
            new = report.memory
            assert report.previous_id == berlin
            assert (new.text, new.lifecycle, new.origin, new.kind) == (
                "I live in Munich.",
                "active",
                "remembered_by_user",
                "fact",
            )
            # It takes the old one's place: the same evidence time.
            assert new.evidence_at == BASE_TIME.isoformat()
            await memory.wait_idle("a")

            recall = await memory.recall("a", "Where does Ana live? Berlin Munich")
            texts = [item.text for item in recall.items]
            assert "I live in Munich." in texts
            assert not [text for text in texts if "Berlin" in text], texts
            assert "Berlin" not in recall.memory_block

            old = await memory.memory("a", berlin)
            assert old.memory.lifecycle == "archived"
            assert old.memory.text == "Ana lives in Berlin"
            (edge,) = old.lineage
            assert (edge.relation, edge.other_role, edge.other_id, edge.other_text) == (
                "edit",
                "child",
                new.id,
                "I live in Munich.",
            )
            revised = await memory.memory("a", new.id)
            (back,) = revised.lineage
            assert (back.relation, back.other_role, back.other_id) == (
                "edit",
                "parent",
                berlin,
            )
            assert [e.state for e in revised.evidence] == ["unsourced"]
            assert [i.id for i in await memory.memories("a", lifecycle="archived")] == [
                berlin
            ]

            # The old revision is history: not edited, not unarchived.
            with pytest.raises(InvalidTransitionError, match=f"edited into {new.id}"):
                await memory.edit("a", berlin, "I live in Paris.")
            with pytest.raises(InvalidTransitionError, match=f"edited into {new.id}"):
                await memory.unarchive("a", berlin)
            # The new one is edited again like any other.
            again = await memory.edit("a", new.id, "I live in Hamburg.")
            assert again.memory.lifecycle == "active"
            assert [e.relation for e in (await memory.memory("a", new.id)).lineage] == [
                "edit",
                "edit",
            ]


async def test_editing_a_superseded_value_keeps_it_history(tmp_path: Path) -> None:
    with trio.fail_after(60):
        clock = FixedDomainClock(BASE_TIME + dt.timedelta(days=30))
        async with open_test_memory(tmp_path, clock=clock) as memory:
            await memory.ingest(
                "a",
                [
                    turn("t1", "I live in Berlin.", at=BASE_TIME),
                    turn(
                        "t2",
                        "I moved to Lisbon.",
                        at=BASE_TIME + dt.timedelta(days=10),
                    ),
                ],
            )
            await memory.wait_idle("a")
            (berlin,) = await memory.memories("a", text="Berlin")
            (lisbon,) = await memory.memories("a", text="Lisbon")
            assert (berlin.lifecycle, lisbon.lifecycle) == ("superseded", "active")
            report = await memory.edit("a", berlin.id, "Ana lived in Munich.")
            assert report.memory.lifecycle == "superseded"
            assert report.memory.superseded_at == berlin.superseded_at
            (still,) = await memory.memories("a", text="Lisbon")
            assert still.lifecycle == "active"
            relations = {
                (e.relation, e.other_role, e.other_id)
                for e in (await memory.memory("a", report.memory.id)).lineage
            }
            assert relations == {
                ("edit", "parent", berlin.id),
                ("supersede", "child", lisbon.id),
            }


async def test_bad_edits_are_typed_errors_and_change_nothing(tmp_path: Path) -> None:
    with trio.fail_after(60):
        clock = _clock()
        async with open_test_memory(tmp_path, clock=clock) as memory:
            berlin, ramen, _ = await _learn(memory, clock)
            before = await memory.memories("a")
            with pytest.raises(UnknownClaimError):
                await memory.edit("a", "nope", "I live in Munich.")
            with pytest.raises(InvalidInputError, match="blank"):
                await memory.edit("a", berlin, "   ")
            with pytest.raises(InvalidInputError, match="already says"):
                await memory.edit("a", berlin, "ana lives in berlin!")
            with pytest.raises(InvalidInputError, match="at most"):
                await memory.edit("a", berlin, "x" * 4001)
            await memory.archive("a", ramen)
            with pytest.raises(InvalidTransitionError, match="unarchive it"):
                await memory.edit("a", ramen, "I love udon.")
            await memory.unarchive("a", ramen)
            assert await memory.memories("a") != []
            after = await memory.memories("a")
            assert [(i.id, i.text, i.lifecycle) for i in after] == [
                (i.id, i.text, i.lifecycle) for i in before
            ]
            # A forgotten claim is gone: nothing of it to edit.
            await memory.forget("a", berlin)
            with pytest.raises(UnknownClaimError):
                await memory.edit("a", berlin, "I live in Munich.")
            with pytest.raises(UnknownClaimError):
                await memory.memory("a", berlin)
            # Persona and working rows are rebuilt by their own projection.
            connection = open_connection(tmp_path / "cairn.db")
            try:
                connection.execute(
                    "UPDATE claims SET kind = 'persona' WHERE claim_id = ?", (ramen,)
                )
            finally:
                connection.close()
            with pytest.raises(ProtectedClaimError):
                await memory.edit("a", ramen, "I love udon.")


def _edit_state(path: Path, claim_id: str) -> tuple[str, int, int]:
    """The edited claim's lifecycle, how many claims say Munich, and edit edges; with
    every claim's FTS row and an intact file."""
    connection = open_connection(path)
    try:

        def count(sql: str, *params: object) -> int:
            return int(connection.execute(sql, params).fetchone()[0])

        assert count("SELECT count(*) FROM claim_fts") == count(
            "SELECT count(*) FROM claims"
        )
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        (lifecycle,) = connection.execute(
            "SELECT lifecycle FROM claims WHERE claim_id = ?", (claim_id,)
        ).fetchone()
        return (
            str(lifecycle),
            count("SELECT count(*) FROM claims WHERE text LIKE '%Munich%'"),
            count("SELECT count(*) FROM derivations WHERE relation = 'edit'"),
        )
    finally:
        connection.close()


@pytest.mark.parametrize("steps", range(1, 9))
async def test_a_cancelled_edit_is_whole_or_absent(tmp_path: Path, steps: int) -> None:
    with trio.fail_after(60):
        clock = _clock()
        async with open_test_memory(tmp_path, clock=clock) as memory:
            berlin, _, _ = await _learn(memory, clock)
            with trio.CancelScope() as scope:
                instrument = CancelAfterSteps(
                    trio.lowlevel.current_task(), scope, steps
                )
                trio.lowlevel.add_instrument(instrument)
                try:
                    await memory.edit("a", berlin, "I live in Munich.")
                finally:
                    trio.lowlevel.remove_instrument(instrument)
        state = _edit_state(tmp_path / "cairn.db", berlin)
        assert state in {("active", 0, 0), ("archived", 1, 1)}, state
        async with open_test_memory(tmp_path, clock=clock) as memory:
            if state[0] == "active":
                await memory.edit("a", berlin, "I live in Munich.")
            await memory.wait_idle("a")
            recall = await memory.recall("a", "Where does Ana live?")
            assert "I live in Munich." in [item.text for item in recall.items]
        assert _edit_state(tmp_path / "cairn.db", berlin) == ("archived", 1, 1)
