"""The blocking client, from plain synchronous code: the same methods and typed errors as
the trio client, over a socket and over a spawned stdio server."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers import turn
from tests.ipc.harness import SERVER_ENV, SERVER_TIMEOUT_S, SocketServer, serve_args

from cairn import IntakeOutcome, RecallStatus
from cairn.errors import ConflictingEventError, ConnectionLostError, UnknownRequestError
from cairn.ipc import BlockingClient

pytestmark = pytest.mark.subprocess


def test_blocking_client_over_a_socket(shared_server: SocketServer) -> None:
    with BlockingClient.connect_unix(
        shared_server.socket_path, timeout_s=SERVER_TIMEOUT_S
    ) as client:
        report = client.ingest("blocking", [turn("k1", "I love hiking in Sintra.")])
        assert report.ingested == 1
        assert client.ingest_turn("blocking", turn("k1", "I love hiking in Sintra."))
        with pytest.raises(ConflictingEventError):
            client.ingest_turn("blocking", turn("k1", "another text"))
        client.wait_idle("blocking")
        client.add_directive("blocking", "Use metric units.")
        recall = client.recall("blocking", "where does Ana hike?", wait_s=30.0)
        assert recall.status is RecallStatus.OK
        assert recall.items[0].source_refs == ("k1",)
        assert "metric" in recall.directive_block
        with pytest.raises(UnknownRequestError):
            client.fetch_recall("blocking", "nope")
        assert client.status().agent("blocking").events == 1
        assert client.clear("blocking").kept
        client.ping()


def test_blocking_client_spawns_a_stdio_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with BlockingClient.spawn_stdio(
        data, env=SERVER_ENV, command=serve_args(data, "--stdio")
    ) as client:
        result = client.ingest_turn("spawned", turn("s1", "I play the cello."))
        assert result.outcome is IntakeOutcome.INGESTED
        client.wait_idle()
        assert client.recall("spawned", "cello", wait_s=30.0).items
        report = client.drain(timeout_s=SERVER_TIMEOUT_S)
        assert report.agents == 1
        client.resume()


def test_connecting_to_nothing_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(ConnectionLostError):
        BlockingClient.connect_unix(tmp_path / "absent.sock")
