"""Challenge and supersede through the embedded Memory: what succession at insert leaves
is settled by maintenance (cairn.maintenance.challenge), within one scope only, and what
no rule can order is a conflict the user lists and resolves.

Every maintenance pass here is run explicitly (``run_maintenance_pass``), on a fixed
domain clock moved between statements, so each remembered claim's evidence time is
known."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from tests.conftest import open_test_memory
from tests.helpers import BASE_TIME, turn

from cairn import Memory, RecallItem
from cairn.domain.scope import RecallContext, Scope
from cairn.errors import (
    InvalidTransitionError,
    UnknownClaimError,
    UnknownConflictError,
)
from cairn.runtime.core import runtime_core
from cairn.runtime.transfer import export_memory, import_memory
from cairn.store.connection import open_connection
from cairn.testing import FixedDomainClock

DAY = dt.timedelta(days=1)


async def settle(memory: Memory, agent: str = "a", passes: int = 3) -> None:
    """Extraction settled, then maintenance passes (a pass's changes are seeds of the
    next)."""
    await memory.wait_idle(agent)
    supervisor = await runtime_core(memory).registry.get(agent)
    for _ in range(passes):
        await supervisor.run_maintenance_pass()


async def claim_items(
    memory: Memory, query: str, context: RecallContext | None = None
) -> list[RecallItem]:
    recall = await memory.recall("a", query, k=20, context=context)
    return [item for item in recall.items if item.kind != "evidence"]


def supersede_edges(data_dir: Path) -> set[tuple[str, str]]:
    """(parent text, child text) of every supersede derivation."""
    connection = open_connection(data_dir / "cairn.db")
    try:
        return {
            (str(row[0]), str(row[1]))
            for row in connection.execute(
                "SELECT p.text, c.text FROM derivations d"
                " JOIN claims p ON p.rowid = d.parent_rowid"
                " JOIN claims c ON c.rowid = d.child_rowid WHERE d.relation = 'supersede'"
            )
        }
    finally:
        connection.close()


def standing(items: list[RecallItem], word: str) -> str | None:
    found = [item for item in items if word in item.text]
    assert len(found) == 1, items
    return found[0].standing


MOVES = {
    "en": ("I live in Berlin.", "I live in Lisbon.", "Berlin", "Lisbon", "live"),
    "zh": ("我住在柏林。", "我搬到了里斯本。", "柏林", "里斯本", "住"),
}


@pytest.mark.parametrize("language", sorted(MOVES))
async def test_berlin_then_lisbon_gives_lisbon_current_and_berlin_history(
    memory: Memory, clock: FixedDomainClock, data_dir: Path, language: str
) -> None:
    older, newer, old_word, new_word, query = MOVES[language]
    await memory.remember("a", older, by="user")
    clock.advance(30 * DAY)
    await memory.remember("a", newer, by="user")
    # A remembered value is keyed by the rules like an extracted one: succession makes
    # the older one history at once, and maintenance keeps it so (no conflict raised).
    before = await claim_items(memory, f"{query} {old_word} {new_word}")
    assert standing(before, old_word) == "history"
    await settle(memory)
    items = await claim_items(memory, f"{query} {old_word} {new_word}")
    assert standing(items, new_word) == "current"
    assert standing(items, old_word) == "history"
    (berlin,) = [item for item in items if old_word in item.text]
    assert berlin.valid_until == clock.moment.isoformat()
    assert "previously" in (berlin.qualifier or "")
    edges = supersede_edges(data_dir)
    assert any(old_word in p and new_word in c for p, c in edges), edges
    assert await memory.conflicts("a") == []


async def test_a_contradiction_in_another_scope_changes_nothing(
    memory: Memory, clock: FixedDomainClock, data_dir: Path
) -> None:
    await memory.remember("a", "I live in Berlin.", by="user")
    clock.advance(30 * DAY)
    await memory.remember(
        "a", "I live in Lisbon.", by="user", scope=Scope.session("trip")
    )
    await settle(memory)
    agent_wide = await claim_items(memory, "live Berlin Lisbon")
    assert standing(agent_wide, "Berlin") == "current"
    assert not [item for item in agent_wide if "Lisbon" in item.text]
    in_session = await claim_items(
        memory, "live Berlin Lisbon", RecallContext(session_id="trip")
    )
    assert standing(in_session, "Berlin") == "current"
    assert standing(in_session, "Lisbon") == "current"
    assert supersede_edges(data_dir) == set()
    assert await memory.conflicts("a") == []


async def test_a_models_claim_never_overturns_what_the_user_said(
    memory: Memory, clock: FixedDomainClock, data_dir: Path
) -> None:
    await memory.ingest("a", [turn("t1", "I live in Berlin.", speaker=None)])
    clock.advance(30 * DAY)
    await memory.remember("a", "The user lives in Lisbon.", by="model")
    await settle(memory)
    items = await claim_items(memory, "live Berlin Lisbon")
    assert standing(items, "Berlin") == "current"
    assert standing(items, "Lisbon") == "history"
    assert ("The user lives in Lisbon.", "The user lives in Berlin") in supersede_edges(
        data_dir
    )


async def test_a_statement_valid_only_in_the_past_is_history_not_a_conflict(
    memory: Memory, clock: FixedDomainClock
) -> None:
    clock.moment = BASE_TIME + 400 * DAY
    await memory.ingest(
        "a",
        [
            turn("t1", "I live in Berlin.", speaker=None),
            turn("t2", "I live in Lisbon.", speaker=None, at=BASE_TIME + 200 * DAY),
        ],
    )
    await settle(memory)
    items = await claim_items(memory, "live Berlin Lisbon")
    assert standing(items, "Lisbon") == "current"
    assert standing(items, "Berlin") == "history"
    assert await memory.conflicts("a") == []


async def _undecidable(memory: Memory) -> str:
    """Two equally strong statements at one moment: succession orders them by arrival,
    which says nothing; maintenance raises the pair."""
    await memory.remember("a", "I live in Berlin.", by="user")
    await memory.remember("a", "I live in Lisbon.", by="user")
    await settle(memory)
    (conflict,) = await memory.conflicts("a")
    assert conflict.status == "open"
    assert conflict.reason == "same_time"
    assert conflict.scope == "agent"
    assert conflict.texts == ("I live in Berlin.", "I live in Lisbon.")
    return conflict.conflict_id


async def test_an_undecidable_pair_is_listed_and_resolving_it_keeps_one_with_lineage(
    memory: Memory, clock: FixedDomainClock, data_dir: Path
) -> None:
    conflict_id = await _undecidable(memory)
    marked = await claim_items(memory, "live Berlin Lisbon")
    assert len(marked) == 2
    for item in marked:
        assert "conflicting" in (item.qualifier or ""), item
    (berlin,) = [item for item in marked if "Berlin" in item.text]

    clock.advance(DAY)
    resolved = await memory.resolve_conflict("a", conflict_id, keep=berlin.id)
    assert (resolved.status, resolved.resolution, resolved.kept) == (
        "resolved",
        "keep_one",
        berlin.id,
    )
    assert resolved.resolved_at == clock.moment.isoformat()
    assert await memory.conflicts("a") == []
    assert await memory.conflicts("a", include_resolved=True) == [resolved]
    items = await claim_items(memory, "live Berlin Lisbon")
    assert standing(items, "Berlin") == "current"
    assert standing(items, "Lisbon") == "history"
    assert all("conflicting" not in (item.qualifier or "") for item in items)
    assert ("I live in Lisbon.", "I live in Berlin.") in supersede_edges(data_dir)

    # Resolving made both dirty: maintenance runs over them and raises nothing again.
    await settle(memory)
    assert await memory.conflicts("a", include_resolved=True) == [resolved]

    # The user's decision outlasts a later re-ordering of the attribute's chain (an
    # older value arriving): the loser does not become current again.
    await memory.ingest(
        "a",
        [turn("t1", "I live in Madrid.", speaker=None, at=BASE_TIME - 30 * DAY)],
    )
    await settle(memory)
    items = await claim_items(memory, "live Berlin Lisbon Madrid")
    assert standing(items, "Berlin") == "current"
    assert standing(items, "Lisbon") == "history"
    assert standing(items, "Madrid") == "history"


async def test_keeping_both_leaves_both_and_unmarks_them(memory: Memory) -> None:
    conflict_id = await _undecidable(memory)
    resolved = await memory.resolve_conflict("a", conflict_id, keep="both")
    assert (resolved.resolution, resolved.kept) == ("keep_both", None)
    items = await claim_items(memory, "live Berlin Lisbon")
    assert len(items) == 2
    assert all("conflicting" not in (item.qualifier or "") for item in items)
    await settle(memory)
    assert await memory.conflicts("a") == []


async def test_unknown_or_resolved_conflicts_and_foreign_claims_are_typed_errors(
    memory: Memory,
) -> None:
    conflict_id = await _undecidable(memory)
    other = await memory.remember("a", "I love oolong tea.", by="user")
    assert other.claim_id is not None
    with pytest.raises(UnknownConflictError, match="no conflict"):
        await memory.resolve_conflict("a", "nope", keep="both")
    with pytest.raises(UnknownConflictError):
        await memory.resolve_conflict("b", conflict_id, keep="both")
    with pytest.raises(UnknownClaimError, match="not one of"):
        await memory.resolve_conflict("a", conflict_id, keep=other.claim_id)
    (still,) = await memory.conflicts("a")
    assert still.status == "open"
    await memory.resolve_conflict("a", conflict_id, keep="both")
    with pytest.raises(InvalidTransitionError, match="already resolved"):
        await memory.resolve_conflict("a", conflict_id, keep="both")


@pytest.mark.parametrize("how", ["forget", "clear", "retire"])
async def test_forgetting_a_claim_removes_its_conflicts(
    memory: Memory, data_dir: Path, how: str
) -> None:
    await _undecidable(memory)
    (berlin,) = [
        item
        for item in await claim_items(memory, "live Berlin Lisbon")
        if "Berlin" in item.text
    ]
    if how == "forget":
        await memory.forget("a", berlin.id)
    elif how == "clear":
        await memory.clear("a")
    else:
        await memory.retire("a")
    assert await memory.conflicts("a") == []
    connection = open_connection(data_dir / "cairn.db")
    try:
        assert connection.execute("SELECT count(*) FROM conflicts").fetchone() == (0,)
    finally:
        connection.close()
    if how == "forget":
        (lisbon,) = await claim_items(memory, "live Berlin Lisbon")
        assert "Lisbon" in lisbon.text
        assert lisbon.standing == "current"
        assert "conflicting" not in (lisbon.qualifier or "")


@pytest.mark.parametrize("what", ["claim", "turn"])
async def test_forgetting_the_winner_reinstates_what_it_superseded(
    memory: Memory, clock: FixedDomainClock, what: str
) -> None:
    await memory.ingest("a", [turn("t1", "I live in Berlin.", speaker=None)])
    clock.advance(30 * DAY)
    await memory.remember("a", "The user lives in Lisbon.", by="model")
    await settle(memory)
    items = await claim_items(memory, "live Berlin Lisbon")
    assert standing(items, "Lisbon") == "history"
    (berlin,) = [item for item in items if "Berlin" in item.text]
    await memory.forget("a", berlin.id if what == "claim" else "t1")
    items = await claim_items(memory, "live Berlin Lisbon")
    assert [item.text for item in items] == ["The user lives in Lisbon."]
    assert items[0].standing == "current"


async def test_forgetting_the_kept_claim_puts_the_users_loser_back_in_its_chain(
    memory: Memory, clock: FixedDomainClock
) -> None:
    conflict_id = await _undecidable(memory)
    items = await claim_items(memory, "live Berlin Lisbon")
    (berlin,) = [item for item in items if "Berlin" in item.text]
    await memory.resolve_conflict("a", conflict_id, keep=berlin.id)
    await memory.forget("a", berlin.id)
    (lisbon,) = await claim_items(memory, "live Berlin Lisbon")
    assert "Lisbon" in lisbon.text
    assert lisbon.standing == "current"


async def test_conflicts_and_resolutions_survive_an_export_and_import(
    memory: Memory, clock: FixedDomainClock, tmp_path: Path
) -> None:
    resolved_id = await _undecidable(memory)
    items = await claim_items(memory, "live Berlin Lisbon")
    (berlin,) = [item for item in items if "Berlin" in item.text]
    clock.advance(DAY)
    await memory.resolve_conflict("a", resolved_id, keep=berlin.id)
    await memory.remember("a", "My favourite tea is oolong.", by="user")
    await memory.remember("a", "My favourite tea is sencha.", by="user")
    await settle(memory)
    before = await memory.conflicts("a", include_resolved=True)
    assert [c.status for c in before] == ["resolved", "open"]
    export = tmp_path / "export.jsonl"
    with export.open("w", encoding="utf-8") as sink:
        await export_memory(memory, sink, "a")
    async with open_test_memory(tmp_path / "copy", clock=clock) as copy:
        summary = await import_memory(copy, export)
        assert summary.records["conflict"].imported == 2
        assert summary.rejected == ()
        assert await copy.conflicts("a", include_resolved=True) == before
        # Maintenance over the imported claims raises neither pair again, and an older
        # value arriving does not make the user's loser current.
        await copy.ingest(
            "a",
            [turn("t1", "I live in Madrid.", speaker=None, at=BASE_TIME - 30 * DAY)],
        )
        await settle(copy)
        assert await copy.conflicts("a", include_resolved=True) == before
        items = await claim_items(copy, "live Berlin Lisbon Madrid")
        assert standing(items, "Berlin") == "current"
        assert standing(items, "Lisbon") == "history"
        # The same file again brings nothing twice.
        again = await import_memory(copy, export)
        assert again.records["conflict"].duplicate == 2
        # A malformed conflict is a rejected line with its reason; nothing else changes.
        lines = export.read_text(encoding="utf-8").splitlines()
        good, unresolved = (
            json.loads(line) for line in lines if '"type":"conflict"' in line
        )
        bad = [
            {**good, "id": "new-1", "claims": [good["claims"][0]] * 2},
            {**good, "id": "new-2", "status": "resolved", "resolved_at": None},
            {**good, "id": "new-3", "kept": "nope"},
            {**unresolved, "id": "new-4", "claims": ["c-unknown", good["claims"][1]]},
            {**good, "id": "new-5", "reason": "Drop Table"},
        ]
        crafted = tmp_path / "crafted.jsonl"
        crafted.write_text(
            "\n".join([lines[0], *(json.dumps(record) for record in bad)]) + "\n",
            encoding="utf-8",
        )
        summary = await import_memory(copy, crafted)
        assert [r.type for r in summary.rejected] == ["conflict"] * len(bad)
        reasons = " | ".join(str(r.reason) for r in summary.rejected)
        for expected in ("two different", "resolved_at", "keep_one", "not stored"):
            assert expected in reasons, reasons
        assert await copy.conflicts("a", include_resolved=True) == before
