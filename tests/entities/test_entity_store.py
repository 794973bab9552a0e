"""Entities as stored: resolution of aliases (English and Chinese) and the reach of
forgetting, clearing, retiring and editing (tests against a real runtime and file)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.conftest import open_test_memory
from tests.helpers import BASE_TIME, files_holding, turn

from cairn import Memory
from cairn.entities.vocabulary import AliasKind, EntityKind
from cairn.runtime.core import runtime_core
from cairn.store.entities import EntityRecord, list_entities

_DAY = dt.timedelta(days=1)


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    async with open_test_memory(tmp_path) as opened:
        yield opened


async def _entities(memory: Memory, agent: str = "a") -> dict[str, EntityRecord]:
    records = await runtime_core(memory).database.read(
        lambda reader: list_entities(reader.connection, agent)
    )
    return {record.name: record for record in records}


def _aliases(record: EntityRecord) -> dict[str, tuple[AliasKind, tuple[str, ...]]]:
    return {alias.alias: (alias.kind, alias.sources) for alias in record.aliases}


async def test_a_nickname_said_before_its_owner_speaks_is_hers(memory: Memory) -> None:
    await memory.ingest(
        "a",
        [
            turn("t1", "Hey Mel! How was the weekend?", speaker="Caroline"),
            turn("t2", "Great, Caroline! We went camping.", speaker="Melanie"),
            turn("t3", "Thanks, Mel, that sounds fun.", speaker="Caroline"),
        ],
    )
    await memory.wait_idle("a")
    entities = await _entities(memory)
    assert set(entities) >= {"Caroline", "Melanie"}
    assert "Mel" not in entities
    assert _aliases(entities["Melanie"])["Mel"] == (AliasKind.NICKNAME, ("t1", "t3"))
    assert _aliases(entities["Melanie"])["Melanie"] == (AliasKind.SPEAKER, ("t2",))


async def test_english_and_chinese_names_resolve_to_one_entity(memory: Memory) -> None:
    await memory.ingest(
        "a",
        [
            turn("t1", "My sister Anna moved to Lisbon.", speaker="Wang Fang"),
            turn(
                "t2",
                "我妹妹很喜欢里斯本。",
                speaker="Wang Fang",
                at=BASE_TIME + dt.timedelta(days=1),
            ),
        ],
    )
    await memory.wait_idle("a")
    entities = await _entities(memory)
    # Her name is the canonical one; the kinship references are aliases.
    sister = entities["Anna"]
    assert _aliases(sister) == {
        "Wang Fang's sister": (AliasKind.KINSHIP, ("t1",)),
        "Anna": (AliasKind.NAME, ("t1",)),
        "Wang Fang的妹妹": (AliasKind.KINSHIP, ("t2",)),
    }
    lisbon = entities["Lisbon"]
    assert lisbon.kind is EntityKind.PLACE
    assert _aliases(lisbon)["里斯本"] == (AliasKind.TRANSLATION, ("t1", "t2"))
    assert lisbon.mentions == 2


async def test_forgetting_a_turn_takes_the_names_only_it_gave(
    memory: Memory, tmp_path: Path
) -> None:
    await memory.ingest(
        "a",
        [
            turn("t1", "I visited Qwertzville with Bob.", speaker="Ana"),
            turn("t2", "Bob says hi.", speaker="Ana"),
        ],
    )
    await memory.wait_idle("a")
    assert {"Qwertzville", "Bob", "Ana"} <= set(await _entities(memory))
    await memory.forget("a", "t1")
    await memory.wait_idle("a")
    await runtime_core(memory).scrubber.wait_settled()
    entities = await _entities(memory)
    assert "Qwertzville" not in entities
    assert _aliases(entities["Bob"])["Bob"] == (AliasKind.NAME, ("t2",))
    assert _aliases(entities["Ana"])["Ana"] == (AliasKind.SPEAKER, ("t2",))
    assert files_holding(tmp_path, ["qwertzville"]) == {}


async def test_clearing_and_retiring_leave_no_entity(memory: Memory) -> None:
    for agent in ("a", "b"):
        await memory.ingest(agent, [turn("t1", "I moved to Denver with Bob.")])
        await memory.wait_idle(agent)
    await memory.clear("a")
    await memory.retire("b")
    assert await _entities(memory, "a") == {}
    assert await _entities(memory, "b") == {}

    def count(reader: object) -> int:
        connection = reader.connection  # type: ignore[attr-defined]
        return sum(
            int(connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            for table in ("entities", "entity_aliases", "entity_mentions")
        )

    assert await runtime_core(memory).database.read(count) == 0


async def test_an_edited_turn_takes_back_what_it_named(memory: Memory) -> None:
    await memory.ingest("a", [turn("t1", "I moved to Denver.")])
    await memory.wait_idle("a")
    assert "Denver" in await _entities(memory)
    await memory.ingest("a", [turn("t1b", "I moved to Boston.", replaces="t1")])
    await memory.wait_idle("a")
    entities = await _entities(memory)
    assert "Denver" not in entities
    assert _aliases(entities["Boston"])["Boston"] == (AliasKind.NAME, ("t1b",))


async def test_a_chinese_name_in_running_text_is_the_person_its_pinyin_names(
    memory: Memory,
) -> None:
    await memory.ingest(
        "a",
        [
            turn("t1", "I moved to Rotterdam last spring.", speaker="Lin Wei"),
            turn("t2", "我和林伟周末去了杭州。", speaker="Mei", at=BASE_TIME + _DAY),
            # Two characters led by a surname that name no one known stay no one.
            turn("t3", "王老师说高兴就好。", speaker="Mei", at=BASE_TIME + 2 * _DAY),
        ],
    )
    await memory.wait_idle("a")
    entities = await _entities(memory)
    lin = _aliases(entities["Lin Wei"])
    assert lin["林伟"] == (AliasKind.NAME, ("t2",))
    assert lin["Wei Lin"] == (AliasKind.TRANSLATION, ("t2",))
    assert not {"王老", "王老师", "高兴"} & set(entities)


async def test_a_chinese_speaker_is_found_by_the_english_form_of_the_name(
    memory: Memory,
) -> None:
    await memory.ingest(
        "a",
        [
            turn("t1", "我住在鹿特丹。", speaker="林伟"),
            turn(
                "t2",
                "I had lunch with Lin Wei today.",
                speaker="Mei",
                at=BASE_TIME + _DAY,
            ),
        ],
    )
    await memory.wait_idle("a")
    entities = await _entities(memory)
    assert "Lin Wei" not in entities
    aliases = _aliases(entities["林伟"])
    assert aliases["林伟"] == (AliasKind.SPEAKER, ("t1",))
    assert aliases["Lin Wei"] == (AliasKind.TRANSLATION, ("t1", "t2"))


async def test_pinyin_shared_by_two_people_joins_neither_and_names_no_place(
    memory: Memory,
) -> None:
    await memory.ingest(
        "a",
        [
            turn("t1", "Morning!", speaker="Lin Wei"),
            turn("t2", "Hi there.", speaker="Wei Lin", at=BASE_TIME + _DAY),
            turn(
                "t3",
                "I flew to Warsaw.",
                speaker="Hua Sha",
                at=BASE_TIME + _DAY,
            ),
            turn("t4", "林伟去了华沙。", speaker="Mei", at=BASE_TIME + 2 * _DAY),
        ],
    )
    await memory.wait_idle("a")
    entities = await _entities(memory)
    assert "林伟" not in _aliases(entities["Lin Wei"])
    assert "林伟" not in _aliases(entities["Wei Lin"])
    # 华沙 is the place, never the person whose name its pinyin spells.
    assert _aliases(entities["Warsaw"])["华沙"][0] is AliasKind.TRANSLATION
    assert "华沙" not in _aliases(entities["Hua Sha"])


async def test_forgetting_the_chinese_turn_takes_its_name_and_pinyin(
    memory: Memory, tmp_path: Path
) -> None:
    await memory.ingest(
        "a",
        [
            turn("t1", "I moved to Rotterdam.", speaker="Lin Wei"),
            turn("t2", "林伟最近很忙。", speaker="Mei", at=BASE_TIME + _DAY),
        ],
    )
    await memory.wait_idle("a")
    assert "林伟" in _aliases((await _entities(memory))["Lin Wei"])
    await memory.forget("a", "t2")
    await memory.wait_idle("a")
    await runtime_core(memory).scrubber.wait_settled()
    assert set(_aliases((await _entities(memory))["Lin Wei"])) == {"Lin Wei"}
    assert files_holding(tmp_path, ["林伟"]) == {}
