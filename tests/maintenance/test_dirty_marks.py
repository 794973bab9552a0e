"""Every committed mutation of a claim gives it a new dirty generation in its own
transaction, and a deleted claim takes its dirty row with it (cairn.store.dirty)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from tests.conftest import open_test_memory
from tests.helpers import BASE_TIME, turn

from cairn import Memory
from cairn.runtime.core import runtime_core
from cairn.runtime.transfer import export_memory, import_memory
from cairn.testing import FixedDomainClock

LATER = BASE_TIME + dt.timedelta(days=3)


async def _rows(memory: Memory, sql: str) -> list[tuple[object, ...]]:
    return await runtime_core(memory).database.read(
        lambda reader: [tuple(row) for row in reader.connection.execute(sql)]
    )


async def _dirty(memory: Memory) -> dict[str, int]:
    """Claim text -> dirty generation, for the claims with a dirty row."""
    return {
        str(text): int(str(generation))
        for text, generation in await _rows(
            memory,
            "SELECT c.text, d.generation FROM dirty_work d"
            " JOIN claims c ON c.rowid = d.claim_rowid",
        )
    }


async def _settle_all(memory: Memory, agent: str = "a") -> None:
    """One maintenance pass: with no passes registered every seed settles."""
    supervisor = await runtime_core(memory).registry.get(agent)
    await supervisor.run_maintenance_pass()
    assert await _dirty(memory) == {}


async def _claim_id(memory: Memory, fragment: str) -> str:
    (row,) = await _rows(
        memory, f"SELECT claim_id FROM claims WHERE text LIKE '%{fragment}%'"
    )
    return str(row[0])


async def test_a_new_claim_and_a_repeat_of_it_mark_it_dirty(memory: Memory) -> None:
    await memory.ingest("a", [turn("t1", "I live in Porto.")])
    await memory.wait_idle("a")
    (text,) = await _dirty(memory)
    assert "Porto" in text
    await _settle_all(memory)

    # The same statement from another turn is a source merge into the same claim.
    await memory.ingest("a", [turn("t2", "I live in Porto.", at=LATER)])
    await memory.wait_idle("a")
    assert list(await _dirty(memory)) == [text]
    (sources,) = await _rows(memory, "SELECT count(*) FROM claim_sources")
    assert sources == (2,)


async def test_a_newer_value_marks_the_value_it_supersedes(
    memory: Memory, clock: FixedDomainClock
) -> None:
    clock.moment = LATER + dt.timedelta(days=30)
    await memory.ingest("a", [turn("t1", "I live in Porto.")])
    await memory.wait_idle("a")
    await _settle_all(memory)
    await memory.ingest("a", [turn("t2", "I moved to Lyon.", at=LATER)])
    await memory.wait_idle("a")
    dirty = await _dirty(memory)
    assert any("Porto" in text for text in dirty), dirty  # superseded now
    assert any("Lyon" in text for text in dirty), dirty
    lifecycles = dict(await _rows(memory, "SELECT text, lifecycle FROM claims"))
    assert [v for k, v in lifecycles.items() if "Porto" in str(k)] == ["superseded"]


async def test_archive_unarchive_and_a_users_re_add_mark_the_claim(
    memory: Memory,
) -> None:
    added = await memory.remember(
        "a", "The user's locker code is kept at home.", by="user"
    )
    assert added.claim_id is not None
    assert list(await _dirty(memory)) == ["The user's locker code is kept at home."]
    await _settle_all(memory)

    await memory.archive("a", added.claim_id)
    assert list(await _dirty(memory)) == ["The user's locker code is kept at home."]
    await _settle_all(memory)
    await memory.unarchive("a", added.claim_id)
    assert list(await _dirty(memory)) == ["The user's locker code is kept at home."]
    await _settle_all(memory)

    await memory.archive("a", added.claim_id)
    await _settle_all(memory)
    again = await memory.remember(
        "a", "The user's locker code is kept at home.", by="user"
    )
    assert again.claim_id == added.claim_id
    assert list(await _dirty(memory)) == ["The user's locker code is kept at home."]


async def test_forgetting_a_value_marks_the_one_it_restores_and_drops_its_own_row(
    memory: Memory, clock: FixedDomainClock
) -> None:
    clock.moment = LATER + dt.timedelta(days=30)
    await memory.ingest(
        "a",
        [turn("t1", "I live in Porto."), turn("t2", "I moved to Lyon.", at=LATER)],
    )
    await memory.wait_idle("a")
    await _settle_all(memory)
    lyon = await _claim_id(memory, "Lyon")
    await memory.forget("a", lyon)
    dirty = await _dirty(memory)
    assert [text for text in dirty if "Porto" in text], dirty  # current again
    assert (0,) in await _rows(
        memory,
        "SELECT count(*) FROM dirty_work WHERE claim_rowid NOT IN"
        " (SELECT rowid FROM claims)",
    )


async def test_forgetting_one_source_marks_the_claim_that_keeps_another(
    memory: Memory,
) -> None:
    await memory.ingest(
        "a",
        [turn("t1", "I live in Porto."), turn("t2", "I live in Porto.", at=LATER)],
    )
    await memory.wait_idle("a")
    await _settle_all(memory)
    result = await memory.forget("a", "t2")
    assert result.claims_kept
    assert [text for text in await _dirty(memory) if "Porto" in text]


async def test_an_edit_drops_the_rows_of_claims_it_deletes_and_marks_the_kept(
    memory: Memory, clock: FixedDomainClock
) -> None:
    clock.moment = LATER + dt.timedelta(days=30)
    await memory.ingest(
        "a",
        [
            turn("t1", "I live in Porto."),
            turn("t2", "I adopted a grey cat named Miso.", at=LATER),
            turn("t3", "I live in Porto.", session="s2", at=LATER),
        ],
    )
    await memory.wait_idle("a")
    await _settle_all(memory)
    # t1 is replaced: the Porto claim keeps t3 (another session); the claims of t2,
    # re-opened, are deleted and extracted again.
    await memory.ingest_event("a", turn("t4", "I enjoy reading novels.", replaces="t1"))
    await memory.wait_idle("a")
    orphans = await _rows(
        memory,
        "SELECT count(*) FROM dirty_work WHERE claim_rowid NOT IN"
        " (SELECT rowid FROM claims)",
    )
    assert orphans == [(0,)]
    assert [text for text in await _dirty(memory) if "Porto" in text]


async def test_imported_claims_arrive_dirty(tmp_path: Path) -> None:
    clock = FixedDomainClock()
    export = tmp_path / "export.jsonl"
    async with open_test_memory(tmp_path / "one", clock=clock) as source:
        await source.remember("a", "The user grows basil on the balcony.", by="user")
        with export.open("w", encoding="utf-8") as sink:
            await export_memory(source, sink, "a")
    async with open_test_memory(tmp_path / "two", clock=clock) as target:
        summary = await import_memory(target, export)
        assert not summary.rejected
        assert list(await _dirty(target)) == ["The user grows basil on the balcony."]
