"""Conflicts listed and resolved from the command line and over a real ``cairn serve
--socket`` (trio and blocking clients): the same records, the same typed errors.

The conflict is made embedded first (two equally strong statements at one moment, and
maintenance run explicitly), then the data directory is served or opened by the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.ipc.harness import SERVER_TIMEOUT_S, short_directory, start_socket_server
from typer.testing import CliRunner

from cairn.cli.app import CliContext
from cairn.cli.main import app
from cairn.errors import UnknownClaimError, UnknownConflictError
from cairn.ipc import BlockingClient, open_unix_client
from cairn.runtime.core import runtime_core
from cairn.testing import FixedDomainClock, HashingEmbedder


async def _make_conflict(data_dir: Path) -> tuple[str, tuple[str, str]]:
    async with open_test_memory(data_dir) as memory:
        await memory.remember("a", "I live in Berlin.", by="user")
        await memory.remember("a", "I live in Lisbon.", by="user")
        await memory.wait_idle("a")
        supervisor = await runtime_core(memory).registry.get("a")
        for _ in range(3):
            await supervisor.run_maintenance_pass()
        (conflict,) = await memory.conflicts("a")
    return conflict.conflict_id, conflict.claim_ids


def _cli(data_dir: Path, *args: str) -> tuple[int, str, str]:
    context = CliContext(
        data_dir=data_dir,
        config=TEST_CONFIG,
        clock=FixedDomainClock(),
        embedder=HashingEmbedder,
    )
    result = CliRunner().invoke(app, list(args), obj=context, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_conflicts_are_listed_and_resolved_from_the_command_line(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    # The CLI runs its own trio loop: the conflict is made in one before it.
    conflict_id, (berlin, lisbon) = trio.run(_make_conflict, data_dir)

    code, out, _ = _cli(data_dir, "conflicts", "list", "--agent", "a", "--json")
    assert code == 0
    (listed,) = json.loads(out)["conflicts"]
    assert listed["conflict_id"] == conflict_id
    assert listed["claim_ids"] == [berlin, lisbon]
    assert listed["status"] == "open"
    code, out, _ = _cli(data_dir, "conflicts", "--agent", "a")
    assert code == 0
    assert conflict_id in out
    assert "Berlin" in out

    code, _, err = _cli(
        data_dir, "conflicts", "resolve", "nope", "--agent", "a", "--keep", berlin
    )
    assert code == 2
    assert "no conflict 'nope'" in err
    assert "Traceback" not in err
    code, _, err = _cli(
        data_dir, "conflicts", "resolve", conflict_id, "--agent", "a", "--keep", "c9"
    )
    assert code == 2
    assert "not one of" in err

    code, out, _ = _cli(
        data_dir, "conflicts", "resolve", conflict_id, "--agent", "a", "--keep", lisbon
    )
    assert code == 0
    assert f"kept {lisbon}; {berlin} is now its history" in out
    code, out, _ = _cli(data_dir, "conflicts", "list", "--agent", "a", "--json")
    assert json.loads(out) == {"conflicts": []}
    code, out, _ = _cli(
        data_dir, "conflicts", "list", "--agent", "a", "--all", "--json"
    )
    (resolved,) = json.loads(out)["conflicts"]
    assert (resolved["resolution"], resolved["kept"]) == ("keep_one", lisbon)


async def _over_trio_client(
    socket_path: Path, conflict_id: str, claim_ids: tuple[str, str]
) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(socket_path) as client:
            (listed,) = await client.conflicts("a")
            assert (listed.conflict_id, listed.claim_ids) == (conflict_id, claim_ids)
            with pytest.raises(UnknownConflictError):
                await client.resolve_conflict("a", "nope", keep="both")
            with pytest.raises(UnknownClaimError):
                await client.resolve_conflict("a", conflict_id, keep="c9")


@pytest.mark.subprocess
def test_conflicts_are_listed_and_resolved_over_ipc(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    conflict_id, (berlin, lisbon) = trio.run(_make_conflict, data_dir)
    with short_directory() as sockets:
        server = start_socket_server(
            data_dir, sockets / "cairn.sock", tmp_path / "server.log"
        )
        try:
            trio.run(
                _over_trio_client, server.socket_path, conflict_id, (berlin, lisbon)
            )
            with BlockingClient.connect_unix(
                server.socket_path, timeout_s=SERVER_TIMEOUT_S
            ) as blocking:
                resolved = blocking.resolve_conflict("a", conflict_id, keep=berlin)
                assert (resolved.kept, resolved.status) == (berlin, "resolved")
                assert blocking.conflicts("a") == []
                assert blocking.conflicts("a", include_resolved=True) == [resolved]
        finally:
            assert server.stop() == 0, server.log()
        assert "Traceback" not in server.log(), server.log()
