"""Relations with validity, the current-state view, and tasks projected from runtime
events, through a real runtime."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.conftest import open_test_memory
from tests.helpers import BASE_TIME, turn

from cairn import Memory
from cairn.runtime.core import runtime_core
from cairn.store.entities import list_entities
from cairn.store.tasks import current_tasks
from cairn.testing import FixedDomainClock


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    async with open_test_memory(
        tmp_path, clock=FixedDomainClock(BASE_TIME + dt.timedelta(days=200))
    ) as opened:
        yield opened


def _day(days: int) -> dt.datetime:
    return BASE_TIME + dt.timedelta(days=days)


async def test_a_relation_changes_over_time_and_keeps_its_history(
    memory: Memory,
) -> None:
    await memory.ingest(
        "a",
        [
            turn("t1", "I live in Berlin.", at=_day(0)),
            turn("t2", "I moved to Lisbon last week.", at=_day(90)),
        ],
    )
    await memory.wait_idle("a")
    records = await runtime_core(memory).database.read(
        lambda reader: list_entities(reader.connection, "a", name="Ana")
    )
    (ana,) = records
    edges = [(r.relation, r.other, r.valid_from, r.valid_until) for r in ana.relations]
    moved = (_day(90) - dt.timedelta(days=7)).date().isoformat()
    assert [(relation, other) for relation, other, _, _ in edges] == [
        ("lives_in", "Berlin"),
        ("lives_in", "Lisbon"),
    ]
    (berlin, lisbon) = edges
    assert berlin[2] is not None
    assert berlin[2].startswith(_day(0).date().isoformat())
    # Berlin held until the move ("last week": the week before day 90); Lisbon holds now.
    assert berlin[3] == lisbon[2]
    assert lisbon[2] is not None
    assert lisbon[2][:10] <= moved
    assert lisbon[3] is None


async def test_the_current_state_view_answers_where_she_lives_now(
    memory: Memory,
) -> None:
    await memory.ingest(
        "a",
        [
            turn("t1", "I live in Berlin.", at=_day(0)),
            turn("t2", "I moved to Lisbon last week.", at=_day(90)),
            *(
                turn(f"n{i}", f"Berlin had great weather on day {i}.", at=_day(100 + i))
                for i in range(6)
            ),
        ],
    )
    await memory.wait_idle("a")

    def view(reader: object) -> list[tuple[str, str, str]]:
        connection = reader.connection  # type: ignore[attr-defined]
        return [
            (str(subject), str(attribute), str(text))
            for subject, attribute, text in connection.execute(
                "SELECT s.subject, s.attribute, c.text FROM current_state s"
                " JOIN claims c ON c.rowid = s.claim_rowid WHERE s.agent_id = 'a'"
            )
        ]

    assert await runtime_core(memory).database.read(view) == [
        ("Ana", "lives_in", "Ana moved to Lisbon last week")
    ]
    recall = await memory.recall("a", "Where does Ana live now?", k=3)
    assert "Lisbon" in recall.items[0].text


async def test_what_is_blocked_has_an_answer(memory: Memory) -> None:
    events = [
        turn(
            "e1",
            "deploy started",
            role="event",
            speaker="deploy",
            kind="task_started",
            at=_day(1),
        ),
        turn(
            "e2",
            "waiting on the database migration review",
            role="event",
            speaker="deploy",
            kind="task_blocked",
            at=_day(2),
        ),
        turn(
            "e3",
            "nightly report started",
            role="event",
            speaker="report",
            kind="task_started",
            at=_day(2),
        ),
        turn(
            "e4",
            "nightly report finished",
            role="event",
            speaker="report",
            kind="task_finished",
            at=_day(3),
        ),
        turn(
            "e5",
            "backup blocked on disk quota",
            role="event",
            speaker="backup",
            kind="task_blocked",
            at=_day(3),
        ),
        turn(
            "e6",
            "backup resumed",
            role="event",
            speaker="backup",
            kind="task_started",
            at=_day(4),
        ),
        *(
            turn(f"m{i}", f"The migration plan for table {i} looks fine.", at=_day(5))
            for i in range(6)
        ),
    ]
    await memory.ingest("a", events)
    await memory.wait_idle("a")
    tasks = await runtime_core(memory).database.read(
        lambda reader: current_tasks(reader.connection, "a")
    )
    assert {(task.task, task.status) for task in tasks} == {
        ("deploy", "blocked"),
        ("report", "done"),
        ("backup", "running"),
    }
    recall = await memory.recall("a", "What is blocked right now?", k=3)
    assert recall.items[0].source_refs == ("e2",)
    assert all("e5" not in item.source_refs for item in recall.items[:1])
