"""A starting ``cairn serve`` ingests what hooks spooled while no server ran: the turn is
stored once, before the server's readiness line, without another hook call; a restart
stores nothing again; a spooled file the server refuses moves aside without holding up
the files after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.hooks.test_hook_calls import claude, hook, recall_block, transcript
from tests.ipc.harness import short_directory, start_socket_server

from cairn.hooks.envelope import HookMessage, TurnEnvelope
from cairn.hooks.spool import spool_of

pytestmark = pytest.mark.subprocess

# The server a hook starts is a no-op here: the server stays down.
SERVER_DOWN = {"CAIRN_HOOK_SERVE_COMMAND": json.dumps(["true"])}


def spool_turn_with_server_down(root: Path, data: Path, text: str) -> None:
    path = transcript(root / "t.jsonl", ("user", "u-1", text))
    result = hook(
        data,
        "claude-code",
        "Stop",
        "--budget",
        "2",
        payload=claude("Stop", path),
        env=SERVER_DOWN,
    )
    assert result.stdout == ""
    assert spool_of(data).count() == 1


def test_server_start_ingests_the_spool_once() -> None:
    with short_directory() as root:
        data = root / "data"
        data.mkdir()
        spool_turn_with_server_down(root, data, "My brother Tomas repairs old clocks.")
        server = start_socket_server(data, root / "s.sock", root / "log")
        try:
            # Drained before the readiness line: no hook call was needed.
            assert spool_of(data).count() == 0
            block = recall_block(
                server.socket_path, "claude-code", "brother Tomas clocks"
            )
            assert block.count("My brother Tomas repairs old clocks.") == 1
        finally:
            assert server.stop() == 0
        server = start_socket_server(data, root / "s.sock", root / "log")
        try:
            block = recall_block(
                server.socket_path, "claude-code", "brother Tomas clocks"
            )
            assert block.count("My brother Tomas repairs old clocks.") == 1
        finally:
            assert server.stop() == 0
        assert "ingested 1 spooled turn" in server.log()


def test_a_refused_spool_file_moves_aside() -> None:
    with short_directory() as root:
        data = root / "data"
        spool = spool_of(data)
        refused = spool.put(
            TurnEnvelope(
                "claude-code",
                "not an agent id!",
                "s-1",
                "/w",
                "Stop",
                (HookMessage("claude-code:s-1:m-1", "user", "Never stored."),),
            )
        )
        spool.put(
            TurnEnvelope(
                "claude-code",
                "claude-code",
                "s-2",
                "/w",
                "Stop",
                (HookMessage("claude-code:s-2:m-1", "user", "I play the cello."),),
            )
        )
        server = start_socket_server(data, root / "s.sock", root / "log")
        try:
            assert spool.count() == 0
            assert (spool.directory / "rejected" / refused.name).is_file()
            block = recall_block(server.socket_path, "claude-code", "cello")
            assert "I play the cello." in block
        finally:
            assert server.stop() == 0
