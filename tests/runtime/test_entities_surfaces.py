"""``entities``: the people and places the agent's turns speak of, with the turns behind
each name and the relations claims state, embedded, from the command line and over a
real ``cairn serve --socket`` (trio and blocking clients): the same records, the same
typed errors."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
import trio
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import BASE_TIME, turn
from tests.ipc.harness import SERVER_TIMEOUT_S, short_directory, start_socket_server
from typer.testing import CliRunner

from cairn import Entity, EntityAlias
from cairn.cli.app import CliContext
from cairn.cli.main import app
from cairn.errors import ArgumentOutOfRangeError, InvalidInputError
from cairn.ipc import BlockingClient, open_unix_client
from cairn.testing import FixedDomainClock

CLOCK = FixedDomainClock(BASE_TIME + dt.timedelta(days=200))


def _day(days: int) -> dt.datetime:
    return BASE_TIME + dt.timedelta(days=days)


async def _converse(data_dir: Path) -> list[Entity]:
    """Melanie is called Mel before she speaks; Ana lives in Berlin, then Lisbon."""
    async with open_test_memory(data_dir, clock=CLOCK) as memory:
        await memory.ingest(
            "a",
            [
                turn("t1", "Hey Mel! How was the pottery class?", at=_day(0)),
                turn("t2", "It was great, thanks!", speaker="Melanie", at=_day(0)),
                turn("t3", "I live in Berlin.", at=_day(1)),
                turn("t4", "I moved to Lisbon last week.", at=_day(90)),
                turn("t5", "我搬到里斯本了。", at=_day(91)),
            ],
        )
        await memory.wait_idle("a")
        return await memory.entities("a")


def _by_name(found: list[Entity]) -> dict[str, Entity]:
    return {entity.name: entity for entity in found}


async def test_entities_show_names_sources_and_relations(tmp_path: Path) -> None:
    with trio.fail_after(60):
        found = await _converse(tmp_path)
        entities = _by_name(found)
        melanie = entities["Melanie"]
        assert melanie.kind == "person"
        assert EntityAlias("Melanie", "speaker", ("t2",)) in melanie.aliases
        assert EntityAlias("Mel", "nickname", ("t1",)) in melanie.aliases
        lisbon = entities["Lisbon"]
        assert lisbon.kind == "place"
        assert {alias.alias for alias in lisbon.aliases} >= {"Lisbon", "里斯本"}
        # Most mentioned first: Ana speaks four turns.
        assert found[0].name == "Ana"
        lives = [
            (r.other, r.outgoing, r.valid_until is None)
            for r in found[0].relations
            if r.relation == "lives_in"
        ]
        assert lives == [("Berlin", True, False), ("Lisbon", True, True)]
        (incoming,) = (r for r in lisbon.relations if r.relation == "lives_in")
        assert (incoming.other, incoming.outgoing) == ("Ana", False)

        async with open_test_memory(tmp_path, clock=CLOCK) as memory:
            # By any alias, folded: the nickname finds Melanie, the Chinese form Lisbon.
            assert await memory.entities("a", name="mel") == [melanie]
            assert await memory.entities("a", name="里斯本") == [lisbon]
            assert await memory.entities("a", name="Nobody") == []
            assert await memory.entities("a", limit=1) == [found[0]]
            assert await memory.entities("b") == []
            with pytest.raises(InvalidInputError, match="name must not be blank"):
                await memory.entities("a", name="  ")
            with pytest.raises(ArgumentOutOfRangeError):
                await memory.entities("a", limit=0)


async def test_forgetting_the_turn_that_gave_a_name_takes_it_back(
    tmp_path: Path,
) -> None:
    with trio.fail_after(60):
        await _converse(tmp_path)
        async with open_test_memory(tmp_path, clock=CLOCK) as memory:
            await memory.forget("a", "t1")
            await memory.wait_idle("a")
            (melanie,) = await memory.entities("a", name="Melanie")
            assert [alias.alias for alias in melanie.aliases] == ["Melanie"]
            assert await memory.entities("a", name="Mel") == []


def _cli(data_dir: Path, *args: str) -> tuple[int, str, str]:
    context = CliContext(data_dir=data_dir, config=TEST_CONFIG, clock=CLOCK)
    result = CliRunner().invoke(app, list(args), obj=context, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_entities_from_the_command_line(tmp_path: Path) -> None:
    found = trio.run(_converse, tmp_path)

    code, out, _ = _cli(tmp_path, "entities", "--agent", "a", "--json")
    assert code == 0
    listed = json.loads(out)["entities"]
    assert [entity["name"] for entity in listed] == [entity.name for entity in found]
    melanie = next(entity for entity in listed if entity["name"] == "Melanie")
    assert {"alias": "Mel", "kind": "nickname", "sources": ["t1"]} in melanie["aliases"]

    code, out, _ = _cli(tmp_path, "entities", "--agent", "a", "--name", "Lisbon")
    assert code == 0
    assert out.startswith("Lisbon (place)")
    # Each form names the place in the other script too: both turns give both names.
    assert "里斯本 (translation): t4, t5" in out
    assert "lives_in <- Ana [" in out
    code, out, _ = _cli(tmp_path, "entities", "--agent", "a", "--name", "Nobody")
    assert (code, out.strip()) == (0, "(no entity known)")

    code, _, err = _cli(tmp_path, "entities", "--agent", "a", "--name", " ")
    assert code == 2
    assert "name must not be blank" in err
    code, _, err = _cli(tmp_path, "entities", "--agent", "a", "--limit", "0")
    assert code == 2
    assert "limit must be an integer from 1 to 1000" in err
    assert "Traceback" not in err


async def _over_trio_client(socket_path: Path, expected: list[Entity]) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(socket_path) as client:
            assert await client.entities("a") == expected
            with pytest.raises(InvalidInputError):
                await client.entities("a", name="")


@pytest.mark.subprocess
def test_entities_over_ipc_are_the_embedded_records(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    expected = trio.run(_converse, data_dir)
    with short_directory() as sockets:
        server = start_socket_server(
            data_dir, sockets / "cairn.sock", tmp_path / "server.log"
        )
        try:
            trio.run(_over_trio_client, server.socket_path, expected)
            with BlockingClient.connect_unix(
                server.socket_path, timeout_s=SERVER_TIMEOUT_S
            ) as blocking:
                melanie = [e for e in expected if e.name == "Melanie"]
                assert blocking.entities("a", name="Mel") == melanie
        finally:
            assert server.stop() == 0, server.log()
        assert "Traceback" not in server.log(), server.log()
