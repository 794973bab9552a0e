"""``feedback``: a host reports which items of one recall helped or were wrong.

Embedded first (validation, idempotency, dirty marking), then the same call over a real
socket server with the trio and blocking clients, and through the command line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from tests.cli.conftest import Invoke, json_of
from tests.conftest import TEST_CONFIG
from tests.helpers import turn
from tests.ipc.harness import (
    SERVER_TIMEOUT_S,
    SocketServer,
    short_directory,
    start_socket_server,
)
from typer.testing import CliRunner, Result

from cairn import Memory
from cairn.api.reports import FeedbackReport
from cairn.cli.app import CliContext
from cairn.cli.main import app
from cairn.errors import (
    ArgumentOutOfRangeError,
    InvalidInputError,
    UnknownRequestError,
)
from cairn.ipc import BlockingClient, open_unix_client
from cairn.retrieval.types import Recall
from cairn.store.connection import open_connection
from cairn.testing import FixedDomainClock, HashingEmbedder


async def _recalled(memory: Memory, agent: str = "a") -> tuple[Recall, str, str]:
    """A recall returning Ana's claim: (the recall, the claim's ID, its turn's ID)."""
    await memory.ingest(agent, [turn("t1", "I live in Porto.")])
    await memory.wait_idle(agent)
    recall = await memory.recall(agent, "Where does Ana live?")
    (claim,) = [i for i in recall.items if i.kind != "evidence" and "Porto" in i.text]
    return recall, claim.id, "t1"


def _dirty(memory: Memory) -> list[tuple[int, int]]:
    connection = open_connection(memory.path / "cairn.db", readonly=True)
    try:
        return [
            (int(rowid), int(generation))
            for rowid, generation in connection.execute(
                "SELECT claim_rowid, generation FROM dirty_work ORDER BY claim_rowid"
            )
        ]
    finally:
        connection.close()


async def test_feedback_records_once_and_marks_the_claim_dirty(memory: Memory) -> None:
    recall, claim_id, turn_id = await _recalled(memory)
    before = _dirty(memory)
    report = await memory.feedback("a", recall.request_id, used=[claim_id, turn_id])
    # The turn was returned, so it may be named; it has no belief to move.
    assert report == FeedbackReport(recall.request_id, 1, 0, 1)
    marked = _dirty(memory)
    assert marked != before
    assert len(marked) == 1
    again = await memory.feedback("a", recall.request_id, used=[claim_id])
    assert again == FeedbackReport(recall.request_id, 1, 0, 0)
    assert _dirty(memory) == marked  # a repeat changes nothing


async def test_feedback_on_an_unknown_request_is_refused(memory: Memory) -> None:
    _, claim_id, _ = await _recalled(memory)
    with pytest.raises(UnknownRequestError, match="no recall with request ID nope"):
        await memory.feedback("a", "nope", used=[claim_id])


async def test_feedback_may_only_name_items_that_recall_returned(
    memory: Memory,
) -> None:
    recall, claim_id, _ = await _recalled(memory)
    await memory.ingest("a", [turn("t2", "I work at a bakery.")])
    await memory.wait_idle("a")
    other = await memory.recall("a", "bakery", k=1)
    assert claim_id not in {item.id for item in other.items}
    with pytest.raises(InvalidInputError, match="did not return item"):
        await memory.feedback("a", other.request_id, wrong=[claim_id])
    # Another agent's recall is not this agent's.
    with pytest.raises(UnknownRequestError):
        await memory.feedback("b", recall.request_id, used=[claim_id])
    with pytest.raises(InvalidInputError, match="both used and wrong"):
        await memory.feedback("a", recall.request_id, used=[claim_id], wrong=[claim_id])
    with pytest.raises(ArgumentOutOfRangeError, match="at most 100"):
        await memory.feedback("a", recall.request_id, used=[claim_id] * 101)
    with pytest.raises(InvalidInputError, match="not one string"):
        await memory.feedback("a", recall.request_id, used=claim_id)
    # Nothing was recorded by the refusals.
    accepted = await memory.feedback("a", recall.request_id, used=[claim_id])
    assert accepted.new_signals == 1


@pytest.fixture
def invoke(tmp_path: Path) -> Invoke:
    """The CLI in this process, as tests/cli runs it (the hashing embedder, a fixed
    clock)."""
    runner = CliRunner()

    def run(*args: str) -> Result:
        context = CliContext(
            data_dir=tmp_path / "data",
            config=TEST_CONFIG,
            clock=FixedDomainClock(),
            embedder=HashingEmbedder,
        )
        return runner.invoke(app, list(args), obj=context, catch_exceptions=False)

    return run


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SocketServer]:
    data_dir = tmp_path_factory.mktemp("feedback") / "data"
    with short_directory() as sockets:
        started = start_socket_server(
            data_dir, sockets / "cairn.sock", data_dir.parent / "server.log"
        )
        try:
            yield started
        finally:
            assert started.stop() == 0, started.log()
        assert "Traceback" not in started.log(), started.log()


@pytest.mark.subprocess
async def test_feedback_over_a_socket_with_both_clients(server: SocketServer) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(server.socket_path) as client:
            await client.ingest("ipc", [turn("t1", "I live in Porto.")])
            await client.wait_idle("ipc")
            recall = await client.recall("ipc", "Where does Ana live?")
            (claim,) = [i for i in recall.items if i.kind != "evidence"]
            assert claim.stage == "probationary"
            report = await client.feedback("ipc", recall.request_id, used=[claim.id])
            assert report == FeedbackReport(recall.request_id, 1, 0, 1)
            with pytest.raises(UnknownRequestError):
                await client.feedback("ipc", "nope", used=[claim.id])
    with BlockingClient.connect_unix(server.socket_path) as blocking:
        again = blocking.feedback("ipc", recall.request_id, used=[claim.id])
        assert again == FeedbackReport(recall.request_id, 1, 0, 0)
        with pytest.raises(InvalidInputError, match="did not return item"):
            blocking.feedback("ipc", recall.request_id, wrong=["t9"])


def test_feedback_from_the_command_line(invoke: Invoke, tmp_path: Path) -> None:
    lines = tmp_path / "turns.jsonl"
    lines.write_text(
        json.dumps(
            {
                "id": "t1",
                "session": "s1",
                "role": "user",
                "speaker": "Ana",
                "text": "I live in Porto.",
                "at": "2026-01-05T09:00:00+00:00",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    assert invoke("ingest", "--agent", "a", str(lines)).exit_code == 0
    recall = json_of(invoke("recall", "--agent", "a", "Where does Ana live?", "--json"))
    (claim,) = [item for item in recall["items"] if item["kind"] != "evidence"]
    assert claim["stage"] == "probationary"
    request_id = recall["request_id"]
    result = invoke(
        "feedback", request_id, "--agent", "a", "--used", claim["id"], "--json"
    )
    assert result.exit_code == 0, result.stderr
    assert json_of(result) == {
        "request_id": request_id,
        "used": 1,
        "wrong": 0,
        "new_signals": 1,
    }
    text = invoke("feedback", request_id, "--agent", "a", "--used", claim["id"])
    assert "already recorded" in text.stdout
    refused = invoke("feedback", request_id, "--agent", "a", "--wrong", "t9")
    assert refused.exit_code == 2
    assert "did not return item t9" in refused.stderr
    assert "Traceback" not in refused.stderr
