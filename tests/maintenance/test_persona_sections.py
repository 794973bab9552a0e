"""The persona pass and its projection: which claims each section holds, in what order
and how many; only agent scope and active claims; re-validated when written; no text
stored; built for a database that had claims before the projection existed."""

from __future__ import annotations

import datetime as dt
from importlib import resources
from pathlib import Path

import apsw
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn import Memory
from cairn.domain.ids import AgentId
from cairn.domain.scope import Scope, ScopeKind
from cairn.maintenance.passes import Work
from cairn.maintenance.persona import PersonaPass
from cairn.maintenance.registry import default_passes
from cairn.runtime.core import runtime_core
from cairn.store.clear_jobs import start_clear
from cairn.store.connection import _MIGRATIONS
from cairn.store.dirty import DirtySeed
from cairn.store.projections import (
    ProjectionPlan,
    Section,
    SectionLimits,
    load_projection,
    replace_projection,
)
from cairn.testing import FixedDomainClock

AGENT = AgentId("a")
MIGRATION = "0013_projections.sql"


async def _maintain(memory: Memory) -> None:
    await (await runtime_core(memory).registry.get("a")).run_maintenance_pass()


async def _section(memory: Memory, section: Section) -> list[str]:
    def read(reader: object) -> list[str]:
        connection = reader.connection  # type: ignore[attr-defined]
        rowids = [
            rowid
            for part, rowid in load_projection(connection, AGENT)
            if part is section
        ]
        return [
            str(
                connection.execute(
                    "SELECT text FROM claims WHERE rowid = ?", (rowid,)
                ).fetchone()[0]
            )
            for rowid in rowids
        ]

    return await runtime_core(memory).database.read(read)


async def _claim_rowid(memory: Memory, text: str) -> int:
    return await runtime_core(memory).database.read(
        lambda reader: int(
            reader.connection.execute(
                "SELECT rowid FROM claims WHERE text = ?", (text,)
            ).fetchone()[0]
        )
    )


async def _claim_id(memory: Memory, text: str) -> str:
    return await runtime_core(memory).database.read(
        lambda reader: str(
            reader.connection.execute(
                "SELECT claim_id FROM claims WHERE text = ?", (text,)
            ).fetchone()[0]
        )
    )


async def _plan(memory: Memory, rowids: list[int]) -> ProjectionPlan | None:
    now = runtime_core(memory).clock.now()
    work = Work(AGENT, now, tuple(DirtySeed(rowid, 1) for rowid in rowids))
    return await runtime_core(memory).database.read(
        lambda reader: PersonaPass().plan(reader.connection, work)
    )


def test_the_persona_pass_runs_after_the_other_passes() -> None:
    assert isinstance(default_passes()[-1], PersonaPass)
    assert MIGRATION in [name for name, _ in _MIGRATIONS]


async def test_stable_facts_order_by_confidence_then_newest_evidence(
    memory: Memory, clock: FixedDomainClock
) -> None:
    await memory.remember("a", "Ana's guess: the user likes chess.", by="model")
    clock.advance(dt.timedelta(minutes=1))
    await memory.remember("a", "Ana plays the violin.", by="user")
    clock.advance(dt.timedelta(minutes=1))
    await memory.remember("a", "Ana speaks Portuguese.", by="user")
    await _maintain(memory)
    assert await _section(memory, Section.STABLE) == [
        "Ana speaks Portuguese.",  # 0.95, newest
        "Ana plays the violin.",  # 0.95
        "Ana's guess: the user likes chess.",  # a model's note, 0.6
    ]


async def test_each_section_is_bounded_and_keeps_the_newest(
    memory: Memory, clock: FixedDomainClock
) -> None:
    for n in range(30):
        clock.advance(dt.timedelta(minutes=1))
        await memory.remember("a", f"Ana owns vintage camera number {n}.", by="user")
    await _maintain(memory)
    stable = await _section(memory, Section.STABLE)
    assert len(stable) == SectionLimits().stable
    assert stable[0] == "Ana owns vintage camera number 29."
    assert stable[-1] == "Ana owns vintage camera number 18."


async def test_only_agent_scope_claims_enter_and_only_their_changes_rebuild(
    memory: Memory,
) -> None:
    session = Scope(ScopeKind.SESSION, "s1")
    narrow = await memory.remember(
        "a", "In this chat Ana is called Captain.", by="user", scope=session
    )
    assert narrow.rowid is not None
    # A batch of narrow-scope seeds does not touch the projection.
    assert await _plan(memory, [narrow.rowid]) is None
    wide = await memory.remember("a", "Ana is a marine biologist.", by="user")
    assert wide.rowid is not None
    plan = await _plan(memory, [narrow.rowid, wide.rowid])
    assert plan is not None
    assert plan.sections == {Section.STABLE: (wide.rowid,)}


async def test_a_deleted_claims_seed_refills_its_section(
    memory: Memory, clock: FixedDomainClock
) -> None:
    limit = SectionLimits().stable
    for n in range(limit + 1):
        clock.advance(dt.timedelta(minutes=1))
        await memory.remember("a", f"Ana keeps bee hive number {n}.", by="user")
    await _maintain(memory)
    newest = await _section(memory, Section.STABLE)
    assert len(newest) == limit
    assert "Ana keeps bee hive number 0." not in newest
    gone = await _claim_rowid(memory, "Ana keeps bee hive number 5.")
    await memory.forget("a", await _claim_id(memory, "Ana keeps bee hive number 5."))
    # Its entry went by cascade; a seed naming the deleted claim rebuilds the section.
    assert len(await _section(memory, Section.STABLE)) == limit - 1
    plan = await _plan(memory, [gone])
    assert plan is not None
    assert len(plan.sections[Section.STABLE]) == limit
    written = await runtime_core(memory).database.write(
        lambda connection: replace_projection(connection, AGENT, plan)
    )
    assert written == limit
    assert (await _section(memory, Section.STABLE))[
        -1
    ] == "Ana keeps bee hive number 0."


async def test_the_same_text_is_shown_once(memory: Memory) -> None:
    await memory.remember("a", "Ana likes jazz.", by="user")
    await memory.remember("a", "ana  LIKES jazz.", by="model")
    await _maintain(memory)
    assert await _section(memory, Section.STABLE) == ["Ana likes jazz."]


async def test_a_claim_archived_after_the_plan_was_read_is_not_written(
    memory: Memory,
) -> None:
    kept = await memory.remember("a", "Ana runs every morning.", by="user")
    gone = await memory.remember("a", "Ana collects stamps.", by="user")
    assert kept.rowid is not None
    assert gone.rowid is not None
    assert gone.claim_id is not None
    plan = await _plan(memory, [kept.rowid])
    assert plan is not None
    assert set(plan.rowids) == {kept.rowid, gone.rowid}
    await memory.archive("a", gone.claim_id)
    database = runtime_core(memory).database
    written = await database.write(
        lambda connection: replace_projection(connection, AGENT, plan)
    )
    assert written == 1
    assert await _section(memory, Section.STABLE) == ["Ana runs every morning."]


async def test_the_projection_stores_claim_rowids_and_no_text(memory: Memory) -> None:
    columns = await runtime_core(memory).database.read(
        lambda reader: [
            str(row[1])
            for row in reader.connection.execute(
                "SELECT * FROM pragma_table_info('projection_entries')"
            )
        ]
    )
    assert columns == ["agent_id", "section", "position", "claim_rowid"]


async def test_a_pass_fenced_between_its_read_and_its_apply_keeps_its_seeds_dirty(
    memory: Memory,
) -> None:
    stored = await memory.remember("a", "Ana sails on weekends.", by="user")
    assert stored.rowid is not None
    core = runtime_core(memory)
    # The clear job moves the stored epoch on without waking its actor: the pass's
    # commit is refused by the fence check, and the agent goes on serving.
    await core.database.write(lambda c: start_clear(c, AGENT, core.clock.now()))
    await _maintain(memory)
    # Still queued (the queue hands nothing out while the clear is pending).
    dirty = await core.database.read(
        lambda reader: reader.connection.execute(
            "SELECT claim_rowid FROM dirty_work WHERE agent_id = ?", (AGENT,)
        ).fetchall()
    )
    assert dirty == [(stored.rowid,)]
    await memory.directives.create("a", "Be concise.")


async def test_a_database_from_before_the_projection_gets_one_at_the_next_pass(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.remember("a", "Ana grows tomatoes.", by="user")
        await _maintain(memory)  # settles the seed
    # As before migration 0013 (no projection table, no seed left), then its script.
    script = (resources.files("cairn.store") / "migrations" / MIGRATION).read_text()
    connection = apsw.Connection(str(data_dir / "cairn.db"))
    with connection:
        connection.execute("DROP TABLE projection_entries")
        connection.execute("DROP INDEX claims_projection")
        assert connection.execute("SELECT count(*) FROM dirty_work").fetchone()[0] == 0
        connection.execute(script)
    connection.close()
    async with open_test_memory(data_dir, clock=clock) as memory:
        await _maintain(memory)
        assert await _section(memory, Section.STABLE) == ["Ana grows tomatoes."]


async def test_plans_are_soonest_first_and_a_past_plan_leaves(
    memory: Memory, clock: FixedDomainClock
) -> None:
    # The clock stands at 2026-01-05 09:00 (a Monday).
    at = clock.now() - dt.timedelta(days=3)
    await memory.ingest(
        "a",
        [
            turn("p1", "I'm flying to Tokyo on May 3.", at=at),
            turn("p2", "I'm visiting Rome on February 10.", at=at),
            turn("p3", "I'm driving to Porto on January 4.", at=at),
            turn("p4", "Every Friday at 6pm I go climbing.", at=at),
        ],
    )
    await memory.wait_idle("a")
    await _maintain(memory)
    assert await _section(memory, Section.PLANS) == [
        "Ana is visiting Rome on February 10",
        "Ana is flying to Tokyo on May 3",
        "Ana goes climbing every Friday at 6pm",
    ]  # the Porto trip was yesterday: it is no longer ahead
