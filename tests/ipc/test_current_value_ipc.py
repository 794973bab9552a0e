"""Succession, ``as_of`` and the trust fields over a real ``cairn serve --socket``: the
same items, with the same types, as embedded (trio and blocking clients)."""

from __future__ import annotations

import datetime as dt

import pytest
import trio
from tests.helpers import turn
from tests.ipc.harness import SERVER_TIMEOUT_S, SocketServer

from cairn import RecallStatus
from cairn.errors import InvalidInputError
from cairn.ipc import BlockingClient, open_unix_client
from cairn.retrieval.types import ItemOrigin, Standing

pytestmark = pytest.mark.subprocess

PARIS = dt.datetime(2025, 1, 1, 9, tzinfo=dt.UTC)
BERLIN = dt.datetime(2025, 1, 20, 9, tzinfo=dt.UTC)


async def test_the_newer_value_and_as_of_over_ipc(shared_server: SocketServer) -> None:
    agent = "succession-ipc"
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            # The older value arrives last.
            await client.ingest(agent, [turn("b", "I live in Berlin.", at=BERLIN)])
            await client.wait_idle(agent)
            await client.ingest(agent, [turn("p", "I live in Paris.", at=PARIS)])
            await client.wait_idle(agent)
            now = await client.recall(agent, "Where does Ana live?", wait_s=30.0)
            assert now.status is RecallStatus.OK
            first = now.items[0]
            assert "Berlin" in first.text
            assert first.standing is Standing.CURRENT
            assert first.origin is ItemOrigin.EXTRACTED
            paris = [item for item in now.items if "Paris" in item.text]
            assert paris
            assert {item.standing for item in paris} == {Standing.HISTORY}
            assert {item.valid_until for item in paris} == {BERLIN.isoformat()}
            then = await client.recall(
                agent,
                "Where does Ana live?",
                wait_s=30.0,
                as_of=PARIS + dt.timedelta(days=3),
            )
            assert "Paris" in then.items[0].text
            assert not [item for item in then.items if "Berlin" in item.text]
            with pytest.raises(InvalidInputError, match="timezone-aware"):
                await client.recall(
                    agent,
                    "Where?",
                    as_of=dt.datetime(2025, 1, 3),  # noqa: DTZ001
                )

    with BlockingClient.connect_unix(
        shared_server.socket_path, timeout_s=SERVER_TIMEOUT_S
    ) as blocking:
        recall = blocking.recall(
            agent, "Where does Ana live?", wait_s=30.0, as_of=BERLIN
        )
        assert "Berlin" in recall.items[0].text
        assert recall.items[0].standing is Standing.CURRENT
