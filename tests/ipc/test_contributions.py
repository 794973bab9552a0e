"""Recall records, one contribution per turn and the attention inbox over a real
``cairn serve --socket``: the trio and the blocking client get the same public records
as the embedded API."""

from __future__ import annotations

import pytest
import trio
from tests.helpers import turn
from tests.ipc.harness import SERVER_TIMEOUT_S, SocketServer

from cairn import AttentionItem, AttentionKind, RecallRecord, RecallStatus
from cairn.errors import InvalidInputError
from cairn.ipc import BlockingClient, open_unix_client

pytestmark = pytest.mark.subprocess


async def test_records_and_turn_reuse_over_the_trio_client(
    shared_server: SocketServer,
) -> None:
    agent = "records"
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            await client.ingest(
                agent, [turn("r1", "I adopted a grey cat called Miso.")]
            )
            await client.wait_idle(agent)
            first = await client.recall(
                agent, "grey cat", session_id="s1", turn_id="t1", wait_s=30.0
            )
            assert first.status is RecallStatus.OK
            assert "Miso" in first.memory_block
            again = await client.recall(
                agent, "tea?", session_id="s1", turn_id="t1", wait_s=30.0
            )
            assert again == first
            other = await client.recall(
                agent, "grey cat", session_id="s1", turn_id="t2", wait_s=30.0
            )
            assert other.request_id != first.request_id
            assert await client.fetch_recall(agent, first.request_id) == first
            records = await client.recalls(agent, session_id="s1")
            assert all(isinstance(record, RecallRecord) for record in records)
            assert [(r.request_id, r.turn_id) for r in records] == [
                (other.request_id, "t2"),
                (first.request_id, "t1"),
            ]
            assert records[1].manifest == first.manifest
            with pytest.raises(InvalidInputError):
                await client.recalls(agent, limit=0)


async def test_attention_over_the_trio_client(shared_server: SocketServer) -> None:
    agent = "inbox"
    blocked = turn(
        "b1", "Waiting for CI.", role="event", speaker="deploy", kind="task_blocked"
    )
    repeat = turn(
        "b2", "Still waiting.", role="event", speaker="deploy", kind="task_blocked"
    )
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            await client.ingest(agent, [blocked, repeat])
            (item,) = await client.attention(agent)
            assert isinstance(item, AttentionItem)
            assert (item.kind, item.event_id, item.count, item.text) == (
                AttentionKind.TASK_BLOCKED,
                "b2",
                2,
                "Still waiting.",
            )
            assert await client.attention("inbox-other") == []
            assert await client.consume_attention("inbox-other", [item.item_id]) == 0
            assert await client.consume_attention(agent, [item.item_id]) == 1
            assert await client.attention(agent) == []


def test_records_and_attention_over_the_blocking_client(
    shared_server: SocketServer,
) -> None:
    agent = "blocking-inbox"
    with BlockingClient.connect_unix(
        shared_server.socket_path, timeout_s=SERVER_TIMEOUT_S
    ) as client:
        client.ingest(
            agent,
            [
                turn("k1", "I love hiking in Sintra."),
                turn("f1", "The sync failed.", role="event", kind="task_failed"),
            ],
        )
        client.wait_idle(agent)
        answer = client.recall(agent, "hiking", turn_id="t1", wait_s=30.0)
        assert client.recall(agent, "other", turn_id="t1", wait_s=30.0) == answer
        (record,) = client.recalls(agent)
        assert (record.request_id, record.turn_id) == (answer.request_id, "t1")
        assert client.fetch_recall(agent, answer.request_id) == answer
        (item,) = client.attention(agent)
        assert (item.kind, item.event_id) == (AttentionKind.TASK_FAILED, "f1")
        assert client.consume_attention(agent, [item.item_id]) == 1
        assert client.attention(agent) == []
