"""Reflection through the real runtime: with a text provider on loopback HTTP, a
maintenance pass asks it once and writes what it answered as a reflection claim that
recall shows with its evidence; forgetting a statement it drew on takes it away; without
a provider nothing is reflected (cairn.maintenance.reflection)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import msgspec
import pytest
import trio
from tests.conftest import open_test_memory
from tests.providers.fakes import open_fake_server

from cairn import Memory
from cairn.providers.http import RetryPolicy, open_http_client
from cairn.providers.http.text import HttpTextConfig
from cairn.providers.http.text_openai import OpenAICompatibleTextProvider
from cairn.runtime.core import runtime_core

AGENT = "a"
NO_WAIT = RetryPolicy(attempts=1, wait_initial_s=0.0, wait_max_s=0.0, wait_jitter_s=0.0)
SAID = (
    "Ana drinks oolong tea every morning.",
    "Ana takes green tea to work.",
    "Ana bought a new teapot.",
)
REFLECTION = "Ana is a keen tea drinker."


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with open_http_client(trust_env=False) as opened:
        yield opened


async def _maintain(memory: Memory) -> None:
    await (await runtime_core(memory).registry.get(AGENT)).run_maintenance_pass()


async def _reflections(memory: Memory) -> list[str]:
    recall = await memory.recall(AGENT, "tea drinker", wait_s=30)
    return [item.text for item in recall.items if item.kind == "reflection"]


async def test_a_reflection_the_model_draws_is_recalled_with_its_evidence(
    tmp_path: Path, client: httpx.AsyncClient
) -> None:
    answer = {"reflections": [{"text": REFLECTION, "sources": [1, 2]}]}
    with trio.fail_after(60):
        async with open_fake_server(
            chat_content=msgspec.json.encode(answer).decode()
        ) as server:
            provider = OpenAICompatibleTextProvider(
                client,
                HttpTextConfig(base_url=server.base_url, model="fake", retry=NO_WAIT),
            )
            async with open_test_memory(tmp_path, text_provider=provider) as memory:
                remembered = [
                    await memory.remember(AGENT, text, by="user") for text in SAID
                ]
                await _maintain(memory)
                asked = [
                    request
                    for request in server.requests
                    if "Statements:" in str(request.body.get("messages"))
                ]
                assert len(asked) == 1
                assert all(text in str(asked[0].body["messages"]) for text in SAID)
                recall = await memory.recall(AGENT, "tea drinker", wait_s=30)
                (item,) = [i for i in recall.items if i.kind == "reflection"]
                assert item.text == REFLECTION
                assert item.origin == "remembered_by_model"
                # Its lineage: a reflection edge from each statement it drew on (these
                # were remembered, so no turn stands behind them: tests/maintenance/
                # test_reflection.py shows the turns of extracted ones carried over).
                parents = await runtime_core(memory).database.read(
                    lambda reader: reader.connection.execute(
                        "SELECT p.claim_id FROM derivations d"
                        " JOIN claims p ON p.rowid = d.parent_rowid"
                        " JOIN claims c ON c.rowid = d.child_rowid"
                        " WHERE c.claim_id = ? AND d.relation = 'reflection'",
                        (item.id,),
                    ).fetchall()
                )
                assert sorted(p for (p,) in parents) == sorted(
                    stored.claim_id for stored in remembered[:2]
                )
                # A second pass over the same claims asks nothing: they are settled.
                await _maintain(memory)
                assert (
                    len(
                        [
                            request
                            for request in server.requests
                            if "Statements:" in str(request.body.get("messages"))
                        ]
                    )
                    == 1
                )
                forgotten = await memory.forget(AGENT, remembered[0].claim_id)
                assert forgotten.claims_removed[0] == remembered[0].claim_id
                assert len(forgotten.claims_removed) == 2
                assert await _reflections(memory) == []


async def test_without_a_text_provider_nothing_is_reflected(tmp_path: Path) -> None:
    async with open_test_memory(tmp_path) as memory:
        for text in SAID:
            await memory.remember(AGENT, text, by="user")
        await _maintain(memory)
        assert await _reflections(memory) == []
