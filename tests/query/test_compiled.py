"""The text model's part in entities and query analysis: its query contract under a
deadline and breaker (offline analysis when it times out), its entity drafts checked
against the cited turns."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, TypeVar

import attrs
import msgspec
import trio
import trio.testing
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import BASE_TIME, turn
from tests.runtime.scripted_text import discard_all, events_of

from cairn.domain.degradation import Degradation
from cairn.entities.vocabulary import AliasKind
from cairn.providers.http.text import TextIdentity
from cairn.query.analysis import analyse
from cairn.query.compiled import QueryContract, apply_contract
from cairn.query.shape import QuestionShape
from cairn.runtime.core import runtime_core
from cairn.store.entities import list_entities

S = TypeVar("S", bound=msgspec.Struct)
NOW = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)


@attrs.define(eq=False)
class ContractModel:
    """Extraction answers discard every event (plus ``entities``); a query contract
    waits for ``gate`` (never, unless opened) and then answers ``contract``."""

    contract: dict[str, Any] = attrs.Factory(dict)
    entities: list[dict[str, Any]] = attrs.Factory(list)
    gate: trio.Event | None = None
    queries: int = 0

    @property
    def identity(self) -> TextIdentity:
        return TextIdentity("scripted", "contract-model")

    async def complete_json(
        self, system: str, user: str, schema: type[S], *, max_tokens: int
    ) -> S:
        await trio.lowlevel.checkpoint()
        if schema is QueryContract:
            self.queries += 1
            if self.gate is not None:
                await self.gate.wait()
            return msgspec.convert(self.contract, schema)
        answer = discard_all(events_of(user)) | {"entities": self.entities}
        return msgspec.convert(answer, schema)


def test_the_contract_adds_only_what_checks_out() -> None:
    offline = analyse("Tell me about the trip to the coast", NOW)
    contract = QueryContract(
        entities=["the coast", "Atlantis"],
        shape="where",
        time_start="2025-06-01",
        time_end="2025-09-01",
    )
    upgraded = apply_contract(offline, contract)
    assert "the coast" in upgraded.names
    assert "atlantis" not in upgraded.names  # not in the question
    assert upgraded.shape is QuestionShape.WHERE
    (anchor,) = upgraded.anchors
    assert anchor.start == dt.datetime(2025, 6, 1, tzinfo=dt.UTC)
    bad = apply_contract(offline, QueryContract(shape="poem", time_start="soon"))
    assert (bad.shape, bad.anchors) == (offline.shape, offline.anchors)


async def test_a_timed_out_contract_leaves_the_offline_analysis(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    model = ContractModel(gate=trio.Event())  # the contract never comes
    config = attrs.evolve(TEST_CONFIG, query_compile_s=2.0)
    async with open_test_memory(tmp_path, config, text_provider=model) as memory:
        await memory.ingest(
            "a",
            [
                turn("t1", "Hey Mel, what's new?", speaker="Bo", at=BASE_TIME),
                turn("t2", "I signed up for a pottery class.", speaker="Melanie"),
            ],
        )
        await memory.wait_idle("a")
        for attempt in range(5):
            started = trio.current_time()
            recall = await memory.recall("a", "What activities does Mel enjoy?", k=3)
            waited = trio.current_time() - started
            assert Degradation.QUERY_ANALYSIS_OFFLINE in recall.manifest.degradations
            # The offline analysis still knows Mel is Melanie.
            assert recall.items[0].source_refs == ("t2",)
            # Each waits out the budget; three misses open the breaker, and later
            # recalls ask nothing and do not wait.
            assert model.queries == min(attempt + 1, 3)
            assert (waited > 1.9) is (attempt < 3)


async def test_the_models_entities_land_in_the_same_tables(tmp_path: Path) -> None:
    model = ContractModel(
        entities=[
            {
                "name": "Bailey",
                "kind": "artefact",
                "aliases": ["the new kitten"],
                "sources": [{"event_id": "t1", "quote": "Bailey"}],
            },
            # Not in the turn it cites: dropped.
            {
                "name": "Atlantis",
                "kind": "place",
                "sources": [{"event_id": "t1", "quote": "Atlantis"}],
            },
        ]
    )
    async with open_test_memory(tmp_path, text_provider=model) as memory:
        await memory.ingest(
            "a",
            [turn("t1", "we got the new kitten, bailey is adorable", speaker="Ana")],
        )
        await memory.wait_idle("a")
        records = await runtime_core(memory).database.read(
            lambda reader: list_entities(reader.connection, "a")
        )
    by_name = {record.name: record for record in records}
    assert "Atlantis" not in by_name
    bailey = by_name["Bailey"]
    assert {(alias.alias, alias.kind) for alias in bailey.aliases} == {
        ("Bailey", AliasKind.NAME),
        ("the new kitten", AliasKind.NICKNAME),
    }
    assert all(alias.sources == ("t1",) for alias in bailey.aliases)
