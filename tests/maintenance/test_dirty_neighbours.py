"""A seed's neighbours: active claims of its own agent, scope and scope key, by vector
similarity and by its words, bounded per seed and per batch (cairn.maintenance.neighbours)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import attrs
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import turn
from tests.maintenance.fake_passes import RecordingPass

from cairn import Memory
from cairn.domain.claim import ClaimDraft, ClaimKind, SourceSpan
from cairn.domain.ids import AgentId, EventId
from cairn.domain.scope import Scope
from cairn.ingestion.intake import prepare_turns
from cairn.maintenance.neighbours import NeighbourLimits, SeedProbe, resolve_neighbours
from cairn.runtime.core import runtime_core
from cairn.store.claims import insert_claims
from cairn.store.connection import open_connection
from cairn.store.evidence import insert_events
from cairn.testing import FixedDomainClock
from cairn.vectors.keys import EmbedTarget, vector_key

A = AgentId("a")
NOW = dt.datetime(2026, 1, 6, tzinfo=dt.UTC)


async def _neighbours_of(
    memory: Memory, step: RecordingPass, texts: dict[str, int]
) -> dict[str, set[str]]:
    by_rowid = {rowid: text for text, rowid in texts.items()}
    (found,) = step.neighbours
    return {
        by_rowid[seed]: {by_rowid.get(rowid, str(rowid)) for rowid in rowids}
        for seed, rowids in found.items()
    }


async def test_neighbours_stay_in_the_seeds_scope_and_skip_archived_claims(
    tmp_path: Path, clock: FixedDomainClock
) -> None:
    async with open_test_memory(tmp_path / "data", clock=clock) as memory:
        step = RecordingPass()
        registry = runtime_core(memory).registry
        registry.services = attrs.evolve(
            registry.services, maintenance_passes=lambda: (step,)
        )
        supervisor = await registry.get("a")
        texts: dict[str, int] = {}
        ids: dict[str, str] = {}
        for text, scope in [
            ("The user loves oolong tea.", None),
            ("The user really loves oolong tea.", None),
            ("The user loves oolong tea in the morning.", Scope.session("s9")),
            ("The user once loved green oolong tea.", None),
        ]:
            result = await memory.remember("a", text, by="user", scope=scope)
            assert result.rowid is not None
            assert result.claim_id is not None
            texts[text], ids[text] = result.rowid, result.claim_id
        await memory.archive("a", ids["The user once loved green oolong tea."])
        await memory.wait_idle("a")
        await supervisor.run_maintenance_pass()
        found = await _neighbours_of(memory, step, texts)
        assert found["The user loves oolong tea."] == {
            "The user really loves oolong tea."
        }
        assert found["The user really loves oolong tea."] == {
            "The user loves oolong tea."
        }
        # Alone in its session scope; the archived claim is no seed's neighbour.
        assert "The user loves oolong tea in the morning." not in found
        assert all(
            "The user once loved green oolong tea." not in near
            for near in found.values()
        )


async def test_neighbours_are_bounded_per_seed_and_per_batch(
    tmp_path: Path, clock: FixedDomainClock
) -> None:
    config = attrs.evolve(
        TEST_CONFIG,
        maintenance_vector_neighbours=1,
        maintenance_lexical_neighbours=1,
        maintenance_neighbour_budget=5,
    )
    async with open_test_memory(tmp_path / "data", config, clock=clock) as memory:
        step = RecordingPass()
        registry = runtime_core(memory).registry
        registry.services = attrs.evolve(
            registry.services, maintenance_passes=lambda: (step,)
        )
        supervisor = await registry.get("a")
        for colour in ("red", "blue", "green", "black", "white", "grey"):
            await memory.remember("a", f"The user owns a {colour} bicycle.", by="user")
        await memory.wait_idle("a")
        await supervisor.run_maintenance_pass()
        (found,) = step.neighbours
        assert found  # they share words and vectors
        assert all(1 <= len(near) <= 2 for near in found.values())
        assert sum(len(near) for near in found.values()) <= 5


def test_a_turns_vector_stands_for_the_claims_citing_it_in_the_seeds_scope(
    tmp_path: Path,
) -> None:
    connection = open_connection(tmp_path / "cairn.db")
    try:
        with connection:
            insert_events(
                connection,
                A,
                prepare_turns(
                    [
                        turn("t1", "I live in Porto."),
                        turn("t2", "I adopted a cat. I adopted a dog."),
                    ],
                    2400,
                ),
                NOW,
            )
            rowids = {
                EventId(str(e)): int(r)
                for e, r in connection.execute("SELECT event_id, rowid FROM events")
            }

            def draft(text: str, event: str, scope: Scope) -> ClaimDraft:
                return ClaimDraft(
                    text=text,
                    kind=ClaimKind.FACT,
                    scope=scope,
                    spans=(SourceSpan(EventId(event), 0, 5),),
                )

            insert_claims(
                connection,
                A,
                [
                    draft("The user lives in Porto.", "t1", Scope.agent()),
                    draft("The user adopted a cat.", "t2", Scope.agent()),
                    draft("The user adopted a dog.", "t2", Scope.session("s1")),
                ],
                rowids,
                NOW,
            )
        claims = {
            str(text): int(rowid)
            for rowid, text in connection.execute("SELECT rowid, text FROM claims")
        }
        seed = claims["The user lives in Porto."]
        with connection:
            found = resolve_neighbours(
                connection,
                A,
                [SeedProbe(seed, "agent", None)],
                {
                    seed: (
                        vector_key(EmbedTarget.EVENT, rowids[EventId("t2")]),
                        vector_key(EmbedTarget.CLAIM, seed),
                    )
                },
                NeighbourLimits(vector=4, lexical=4, budget=10),
            )
        # The cat claim cites t2 in the seed's scope; the dog claim is another scope's;
        # the seed is never its own neighbour.
        assert found == {seed: (claims["The user adopted a cat."],)}
    finally:
        connection.close()
