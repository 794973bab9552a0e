"""Caller metadata: tags, an importance and a small JSON object on turns and remembers,
inherited by the claims learned from them, filtered on by recall before its limits,
weighing the ranking a little, kept by export and import, and gone with a forget."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

import pytest
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn import Metadata
from cairn.cli.turns import parse_turn
from cairn.domain.metadata import RecallFilter
from cairn.errors import InvalidInputError, InvalidMetadataError
from cairn.runtime.transfer import export_memory, import_memory
from cairn.store.connection import open_connection
from cairn.store.search import LexicalSearcher

if TYPE_CHECKING:
    from pathlib import Path

    from cairn import Memory

AT = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)


def _tag_rows(data_dir: Path) -> tuple[int, int]:
    connection = open_connection(data_dir / "cairn.db")
    try:
        events = connection.execute("SELECT count(*) FROM event_tags").fetchone()
        claims = connection.execute("SELECT count(*) FROM claim_tags").fetchone()
        assert events is not None
        assert claims is not None
        return int(events[0]), int(claims[0])
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"tags": "work"}, "tags must be a list"),
        ({"tags": [""]}, "a tag must be 1 to 64"),
        ({"tags": ["x" * 65]}, "a tag must be 1 to 64"),
        ({"tags": [f"t{i}" for i in range(33)]}, "at most 32 tags"),
        ({"tags": [3]}, "must hold strings"),
        ({"tags": ["a\x00b"]}, "printable"),
        ({"importance": 1.5}, "importance must be a number from 0 to 1"),
        ({"importance": True}, "importance must be a number from 0 to 1"),
        ({"importance": float("nan")}, "importance must be a number from 0 to 1"),
        ({"extra": ["not", "an", "object"]}, "extra must be a JSON object"),
        ({"extra": {"k": "v" * 5000}}, "at most 4096 bytes"),
        ({"extra": {"k": {1, 2}}}, "JSON values only"),
        ({"extra": {"k": float("inf")}}, "non-finite"),
        ({"extra": {"k": [[[[[[[[[1]]]]]]]]]}}, "nested at most 8"),
    ],
)
def test_bad_metadata_names_what_is_wrong(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(InvalidMetadataError, match=named):
        Metadata(**fields)


async def test_bad_metadata_and_filters_are_refused_and_nothing_is_lost(
    memory: Memory, data_dir: Path
) -> None:
    kept = Metadata(tags=["home"], importance=0.5)
    await memory.ingest("a", [turn("t1", "I live in Lisbon now.", metadata=kept)])
    await memory.wait_idle("a")
    before = (await memory.status()).agent("a")

    with pytest.raises(InvalidMetadataError, match="metadata must be a cairn Metadata"):
        await memory.remember("a", "I own a kayak", by="user", metadata={"tags": ["x"]})  # type: ignore[arg-type]
    with pytest.raises(InvalidMetadataError, match="unknown kind 'gossip'"):
        await memory.recall("a", "Lisbon", kinds=["gossip"])
    with pytest.raises(InvalidMetadataError, match="at most 32 tags"):
        await memory.recall("a", "Lisbon", tags=[f"t{i}" for i in range(33)])
    with pytest.raises(InvalidMetadataError, match=r"since .* must be before until"):
        await memory.recall("a", "Lisbon", since=AT, until=AT)
    with pytest.raises(InvalidInputError, match="unknown fields: colour"):
        parse_turn(
            {
                "id": "x",
                "session": "s",
                "role": "user",
                "text": "hi",
                "metadata": {"colour": "red"},
            }
        )

    after = (await memory.status()).agent("a")
    assert (after.events, after.claims) == (before.events, before.claims)
    recall = await memory.recall("a", "where do I live", tags=["home"])
    assert {item.metadata for item in recall.items} == {kept}
    assert _tag_rows(data_dir)[0] == 1


async def test_claims_inherit_the_metadata_of_the_turns_they_come_from(
    memory: Memory,
) -> None:
    await memory.ingest(
        "a",
        [
            turn(
                "t1",
                "I live in Lisbon.",
                session="s1",
                metadata=Metadata(tags=["home"], importance=0.2, extra={"src": "chat"}),
            ),
            turn(
                "t2",
                "I live in Lisbon.",
                session="s2",
                metadata=Metadata(
                    tags=["profile"], importance=0.8, extra={"src": "form", "v": 2}
                ),
            ),
        ],
    )
    await memory.wait_idle("a")

    recall = await memory.recall("a", "where do I live", kinds=["fact"], k=5)

    (claim,) = recall.items
    assert set(claim.source_refs) == {"t1", "t2"}
    # Union of tags, the largest importance, the first turn's value of a shared key.
    assert claim.metadata == Metadata(
        tags=["home", "profile"], importance=0.8, extra={"src": "chat", "v": 2}
    )


async def test_a_remembered_claim_keeps_its_metadata(memory: Memory) -> None:
    given = Metadata(tags=["health"], importance=0.9, extra={"by": "settings"})
    await memory.remember("a", "My dentist is Dr Silva", by="user", metadata=given)
    await memory.remember("a", "My barber is Rui", by="user")

    recall = await memory.recall("a", "who is my dentist or barber", tags=["health"])

    assert [(item.text, item.metadata) for item in recall.items] == [
        ("My dentist is Dr Silva", given)
    ]


async def test_a_tag_filter_keeps_only_tagged_items_though_untagged_score_higher(
    memory: Memory,
) -> None:
    # 80 untagged turns match "kayak" three times each, more than the lexical and vector
    # lists hold; the two tagged turns match it once.
    await memory.ingest(
        "a",
        [turn(f"u{i}", f"kayak kayak kayak trip number {i}") for i in range(80)]
        + [
            turn(
                "club",
                "The club kayak meets on Friday afternoons by the river",
                metadata=Metadata(tags=["club"]),
            ),
            turn(
                "shop",
                "A shop sells a kayak paddle and a life vest near the port",
                metadata=Metadata(tags=["club", "shopping"]),
            ),
        ],
    )
    await memory.wait_idle("a")

    plain = await memory.recall("a", "kayak", k=2)
    tagged = await memory.recall("a", "kayak", k=2, tags=["club"])
    shopping = await memory.recall("a", "kayak", k=2, tags=["shopping", "none"])

    assert not {"club", "shop"} & {item.id for item in plain.items}
    assert {item.id for item in tagged.items} == {"club", "shop"}
    assert [item.id for item in shopping.items] == ["shop"]
    assert "kayak kayak" not in tagged.memory_block


async def test_the_lexical_lists_apply_the_filter_before_their_limit(
    tmp_path: Path,
) -> None:
    """Stored rows, searched with a limit of 3 while 50 untagged turns rank higher: the
    tagged one is in the list only because the filter is in the query."""

    async with open_test_memory(tmp_path / "data") as memory:
        await memory.ingest(
            "a",
            [turn(f"u{i}", f"kayak kayak kayak {i}") for i in range(50)]
            + [turn("t", "an old kayak in the shed", metadata=Metadata(tags=["x"]))],
        )
        await memory.wait_idle("a")
    connection = open_connection(tmp_path / "data" / "cairn.db")
    try:
        searcher = LexicalSearcher(connection)
        rowid = connection.execute(
            "SELECT rowid FROM events WHERE event_id = 't'"
        ).fetchone()
        assert rowid is not None
        plain = searcher.search_events("a", ["kayak"], 3)
        filtered = searcher.search_events(
            "a", ["kayak"], 3, recall_filter=RecallFilter(tags=["x"])
        )
        evidence_only = searcher.search_events(
            "a", ["kayak"], 3, recall_filter=RecallFilter(kinds=["fact"])
        )
    finally:
        connection.close()
    assert int(rowid[0]) not in {hit.rowid for hit in plain.hits}
    assert [hit.rowid for hit in filtered.hits] == [int(rowid[0])]
    assert evidence_only.hits == []


async def test_time_and_kind_filters(memory: Memory) -> None:
    await memory.ingest(
        "a",
        [
            turn("old", "I bought a red bicycle", at=AT),
            turn("new", "I bought a blue bicycle", at=AT + dt.timedelta(days=30)),
        ],
    )
    await memory.wait_idle("a")

    later = await memory.recall(
        "a", "bicycle", since=AT + dt.timedelta(days=1), kinds=["evidence"]
    )
    earlier = await memory.recall(
        "a", "bicycle", until=AT + dt.timedelta(days=1), kinds=["evidence"]
    )

    assert [item.id for item in later.items] == ["new"]
    assert [item.id for item in earlier.items] == ["old"]


async def test_importance_orders_otherwise_equal_items(tmp_path: Path) -> None:
    texts = [
        ("a1", "Note alpha about the harbour"),
        ("b1", "Note bravo about the harbour"),
    ]

    async def order(importance: dict[str, float]) -> list[str]:
        async with open_test_memory(
            tmp_path / str(sorted(importance.items()))
        ) as memory:
            await memory.ingest(
                "a",
                [
                    turn(
                        event_id,
                        text,
                        metadata=Metadata(importance=importance[event_id])
                        if event_id in importance
                        else None,
                    )
                    for event_id, text in texts
                ],
            )
            await memory.wait_idle("a")
            recall = await memory.recall("a", "harbour", k=2, kinds=["evidence"])
            return [item.id for item in recall.items]

    plain = await order({})
    first, second = plain
    raised = await order({second: 1.0})
    lowered = await order({first: 0.0})
    neutral = await order({first: 0.5, second: 0.5})

    assert raised == [second, first]
    assert lowered == [second, first]
    assert neutral == plain


async def test_export_and_import_keep_metadata(memory: Memory, tmp_path: Path) -> None:
    given = Metadata(tags=["home"], importance=0.7, extra={"src": "chat"})
    remembered = Metadata(tags=["health"])
    await memory.ingest("a", [turn("t1", "I live in Lisbon.", metadata=given)])
    await memory.remember("a", "My dentist is Dr Silva", by="user", metadata=remembered)
    await memory.wait_idle("a")
    backup = tmp_path / "backup.jsonl"
    with backup.open("w", encoding="utf-8") as sink:
        await export_memory(memory, sink)
    records = [json.loads(line) for line in backup.read_text().splitlines()]
    exported = {r["id"]: r.get("metadata") for r in records if r.get("type") == "event"}
    assert exported == {"t1": json.loads(str(given.to_json()))}

    async with open_test_memory(tmp_path / "restored") as restored:
        await import_memory(restored, backup)
        await restored.wait_idle("a")
        home = await restored.recall("a", "where do I live", tags=["home"])
        health = await restored.recall("a", "dentist", tags=["health"])

    assert {item.id: item.metadata for item in home.items} == {
        item.id: given for item in home.items
    }
    assert {item.kind for item in home.items} >= {"evidence"}
    assert len(home.items) == 2
    assert [item.metadata for item in health.items] == [remembered]


async def test_forgetting_a_turn_or_a_claim_takes_its_metadata(
    memory: Memory, data_dir: Path
) -> None:
    await memory.ingest(
        "a", [turn("t1", "I live in Lisbon.", metadata=Metadata(tags=["home", "x"]))]
    )
    remembered = await memory.remember(
        "a", "My dentist is Dr Silva", by="user", metadata=Metadata(tags=["health"])
    )
    await memory.wait_idle("a")
    assert _tag_rows(data_dir) == (2, 3)  # the turn's two, its claim's two, one more
    assert remembered.claim_id is not None

    await memory.forget("a", "t1")
    await memory.forget("a", remembered.claim_id)

    assert _tag_rows(data_dir) == (0, 0)
    for tag in ("home", "health"):
        assert (await memory.recall("a", "Lisbon dentist", tags=[tag])).items == ()
