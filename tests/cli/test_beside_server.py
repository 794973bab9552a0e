"""One writer per data directory, across processes: a CLI command beside a running server
sends its work to that server over its socket (found through ``server.json``), or is
refused with exit 4 naming the server; no second runtime ever opens a held directory.
A command that runs the runtime itself holds the directory, so no server starts beside it.

All real processes: ``cairn serve --socket`` (hashing embedder, tests/support) and the real
``python -m cairn`` for the commands, which never need a model when they go through a
server."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
import trio
from tests.helpers import turn
from tests.ipc.harness import (
    SERVER_ENV,
    SERVER_TIMEOUT_S,
    SocketServer,
    cairn_args,
    serve_args,
    short_directory,
    start_socket_server,
)
from tests.support.serve_hashing import hashing_cairn
from typer.testing import CliRunner

from cairn.api.status import AgentStatus
from cairn.cli.app import CliContext
from cairn.cli.main import app
from cairn.ipc import open_stdio_client, open_unix_client
from cairn.ipc.directory import Occupant, claim_data_directory
from cairn.testing import FixedDomainClock, HashingEmbedder

pytestmark = pytest.mark.subprocess

# Seconds a CLI command may take (process start, the command, its answer).
COMMAND_TIMEOUT_S = 120

FACTS = [
    ("t1", "I love oolong tea."),
    ("t2", "I live in Lisbon and I work as a nurse."),
    ("t3", "My sister Inês plays the cello."),
]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def server(data: Path, tmp_path: Path) -> Iterator[SocketServer]:
    with short_directory() as sockets:
        running = start_socket_server(
            data, sockets / "cairn.sock", tmp_path / "server.log"
        )
        try:
            yield running
        finally:
            assert running.stop() == 0, running.log()
        assert "Traceback" not in running.log(), running.log()


def cairn(
    data: Path, *args: str, command: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``cairn --data DATA ARGS`` to its end (bounded)."""
    return subprocess.run(
        command or cairn_args(data, *args),
        capture_output=True,
        text=True,
        env=SERVER_ENV,
        stdin=subprocess.DEVNULL,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )


async def acairn(data: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``cairn`` from a trio test: the process runs while the test's loop goes on."""
    with trio.fail_after(COMMAND_TIMEOUT_S):
        return await trio.run_process(
            cairn_args(data, *args),
            capture_stdout=True,
            capture_stderr=True,
            env=SERVER_ENV,
            stdin=subprocess.DEVNULL,
            check=False,
        )


def cairn_json(data: Path, *args: str) -> dict:
    done = cairn(data, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def _seed(server: SocketServer, agent: str) -> AgentStatus:
    """Ingest FACTS for ``agent`` through the server and wait until they are settled."""
    async with open_unix_client(server.socket_path) as client:
        turns = [turn(event_id, text) for event_id, text in FACTS]
        assert (await client.ingest(agent, turns)).ingested == len(FACTS)
        await client.wait_idle(agent)
        return (await client.status()).agent(agent)


async def _still_serves(server: SocketServer, agent: str) -> AgentStatus:
    """Ingest and recall through the server; wait_idle returning proves the server's own
    work settles (a stale fence would re-lease its batches forever)."""
    with trio.fail_after(SERVER_TIMEOUT_S / 2):
        return await _ingest_and_recall(server, agent)


async def _ingest_and_recall(server: SocketServer, agent: str) -> AgentStatus:
    async with open_unix_client(server.socket_path) as client:
        await client.ingest(agent, [turn("later", "I started learning the oud.")])
        await client.wait_idle(agent)
        recall = await client.recall(agent, "oud", wait_s=30.0)
        assert recall.items
        assert recall.items[0].source_refs == ("later",)
        entry = (await client.status()).agent(agent)
    assert entry.events_pending_extraction == 0
    assert entry.statistics is not None
    assert entry.statistics.outstanding_work == 0
    return entry


def _orphaned_events(data: Path) -> int:
    """Events whose agent row is gone (what a retire in a second runtime left behind)."""
    connection = apsw.Connection(
        str(data / "cairn.db"), flags=apsw.SQLITE_OPEN_READONLY
    )
    try:
        row = connection.execute(
            "SELECT count(*) FROM events"
            " WHERE agent_id NOT IN (SELECT agent_id FROM agents)"
        ).fetchone()
    finally:
        connection.close()
    assert row is not None
    return int(row[0])


async def test_clear_beside_a_live_server_is_done_by_the_server(
    server: SocketServer, data: Path
) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S * 2):
        before = await _seed(server, "A")
        assert before.claims > 0

        done = await acairn(data, "clear", "--agent", "A", "--yes", "--json")
        assert done.returncode == 0, done.stderr.decode()
        report = json.loads(done.stdout)
        assert report["agent"] == "A"
        assert report["claims_deleted"] == before.claims
        assert report["before"]["claims"] == before.claims
        assert report["after"]["claims"] == 0
        assert report["after"]["events"] == 0  # the turns it was learned from go too
        assert report["before"]["events"] == len(FACTS)

        after = await _still_serves(server, "A")
    # The server ran the clear job itself, so its fence moved with it.
    assert after.statistics is not None
    assert after.statistics.clear_jobs_completed == 1
    assert after.claims == 0  # cleared claims stay cleared (evidence is not re-read)
    assert after.statistics.writes_failed == 0


async def test_retire_beside_a_live_server_is_done_by_the_server(
    server: SocketServer, data: Path
) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S * 2):
        await _seed(server, "A")
        await _seed(server, "B")
        done = await acairn(data, "retire", "--agent", "A", "--yes", "--json")
        assert done.returncode == 0, done.stderr.decode()
        report = json.loads(done.stdout)
        assert report["agent_id"] == "A"
        assert report["rows_deleted"]["events"] == len(FACTS)

        async with open_unix_client(server.socket_path) as client:
            status = await client.status()
        assert "A" not in status.agent_ids
        assert status.agent("B").events == len(FACTS)
        assert _orphaned_events(data) == 0
        # The agent ID starts afresh, served by the same runtime.
        fresh = await _still_serves(server, "A")
    assert fresh.events == 1
    assert _orphaned_events(data) == 0


def test_memory_commands_go_through_the_server(
    server: SocketServer, data: Path, tmp_path: Path
) -> None:
    """ingest, recall, status, remember, forget, archive, directives, replay: the same
    JSON as embedded, answered by the server's runtime."""
    turns = tmp_path / "turns.jsonl"
    turns.write_text(
        "".join(
            json.dumps({"id": event_id, "session": "s1", "role": "user", "text": text})
            + "\n"
            for event_id, text in FACTS
        ),
        encoding="utf-8",
    )
    ingested = cairn_json(data, "ingest", "--agent", "C", str(turns))
    # The server's runtime ran the agent's maintenance for the ingest.
    assert ingested.pop("maintenance")["remaining"] == 0
    assert ingested == {
        "ingested": 3,
        "duplicate": 0,
        "merged": 0,
        "suppressed": 0,
        "rejected": [],
    }
    recall = cairn_json(data, "recall", "--agent", "C", "oolong tea")
    assert recall["status"] == "ok"
    assert recall["items"][0]["source_refs"] == ["t1"]

    status = cairn_json(data, "status")
    entry = status["agents"]["C"]
    assert entry["events"] == 3
    assert entry["live"] is True  # the server's runtime answered
    assert entry["runtime"]["outstanding_work"] == 0
    assert entry["clear_jobs_pending"] == []
    assert entry["stored_vectors"][0]["count"] == entry["embeddings"]

    remembered = cairn_json(data, "remember", "--agent", "C", "I prefer window seats.")
    assert remembered["outcome"] == "stored"
    archived = cairn_json(data, "archive", "--agent", "C", remembered["claim_id"])
    assert archived["lifecycle"] == "archived"
    forgotten = cairn_json(data, "forget", "--agent", "C", remembered["claim_id"])
    assert (forgotten["id"], forgotten["kind"]) == (remembered["claim_id"], "claim")

    added = cairn_json(data, "directives", "add", "--agent", "C", "Answer briefly.")
    assert added["status"] == "active"
    listed = cairn_json(data, "directives", "list", "--agent", "C")
    assert [d["directive_id"] for d in listed] == [added["directive_id"]]

    replayed = cairn_json(data, "replay", "--agent", "C")
    assert replayed == {"agent": "C", "replayed_batches": 0, "dead_letters": 0}

    # The operator commands find the server without --socket.
    drained = cairn(data, "drain")
    assert drained.returncode == 0, drained.stderr
    assert json.loads(drained.stdout)["drained"] is True
    resumed = cairn(data, "drain", "--resume")
    assert json.loads(resumed.stdout) == {"resumed": True}

    unknown = cairn(data, "clear", "--agent", "nobody", "--yes")
    assert unknown.returncode == 2
    assert "no agent 'nobody'" in unknown.stderr
    assert server.process.poll() is None


def test_commands_that_need_the_runtime_are_refused_beside_a_server(
    server: SocketServer, data: Path, tmp_path: Path
) -> None:
    export = tmp_path / "export.jsonl"
    refused = [
        ("export", str(export)),
        ("import", str(export)),
        ("doctor",),
        ("doctor", "--repair"),
        ("reindex",),
    ]
    export.write_text('{"type":"header","format":"cairn-export","version":1}\n')
    for args in refused:
        done = cairn(data, *args)
        assert done.returncode == 4, (args, done.stderr)
        assert f"pid {server.process.pid}" in done.stderr
        assert f"socket {server.socket_path}" in done.stderr
        assert f"cairn {args[0]} cannot run beside a server" in done.stderr
        assert "stop the server first" in done.stderr
        assert "Traceback" not in done.stderr
    assert export.read_text().count("\n") == 1  # nothing was written
    assert server.process.poll() is None


async def test_a_stdio_server_refuses_commands_it_cannot_take(data: Path) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_stdio_client(
            data, env=SERVER_ENV, command=serve_args(data, "--stdio")
        ) as client:
            await client.ping()
            done = await acairn(data, "status")
            assert done.returncode == 4
            stderr = done.stderr.decode()
            assert "on stdio" in stderr
            assert "holds" in stderr
            assert (await client.status()).agents == ()


def test_a_command_holding_the_directory_refuses_a_server_and_other_commands(
    data: Path, tmp_path: Path
) -> None:
    claimed = claim_data_directory(data, role="command", command="cairn ingest")
    assert not isinstance(claimed, Occupant)
    with claimed, short_directory() as sockets:
        served = cairn(data, command=serve_args(data, "--socket", str(sockets / "s")))
        assert served.returncode == 4, served.stderr
        assert f"pid {os.getpid()}, cairn ingest) holds {data}" in served.stderr
        assert not (sockets / "s").exists()
        status = cairn(data, "status")
        assert status.returncode == 4
        assert "try again when it has finished" in status.stderr
    # Released: the next command takes the directory itself.
    done = cairn(data, command=hashing_cairn("--data", str(data), "status", "--json"))
    assert done.returncode == 0, done.stderr
    assert not (data / "server.json").exists()


def test_a_command_holds_the_directory_while_its_runtime_is_open(
    data: Path,
) -> None:
    """In-process: the embedder is built inside the runtime, so the lock is checked
    while the command runs."""
    seen: list[Occupant | None] = []

    def embedder() -> HashingEmbedder:
        probe = claim_data_directory(data, role="command", command="probe")
        if isinstance(probe, Occupant):
            seen.append(probe)
        else:
            probe.release()
            seen.append(None)
        return HashingEmbedder()

    context = CliContext(data_dir=data, clock=FixedDomainClock(), embedder=embedder)
    result = CliRunner().invoke(
        app, ["status", "--json"], obj=context, catch_exceptions=False
    )
    assert result.exit_code == 0, result.stderr
    (holder,) = seen
    assert holder is not None
    assert holder.pid == os.getpid()
    assert holder.command == "cairn status"
    assert holder.server is None
    # Released when the command ended.
    after = claim_data_directory(data, role="command", command="probe")
    assert not isinstance(after, Occupant)
    after.release()


def test_a_server_on_a_relative_socket_path_is_found_from_anywhere(
    data: Path, tmp_path: Path
) -> None:
    """The socket is bound as given but published absolute in server.json."""
    with short_directory() as sockets, (tmp_path / "server.log").open("ab") as log:
        process = subprocess.Popen(
            serve_args(data, "--socket", "cairn.sock"),
            cwd=sockets,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            env=SERVER_ENV,
        )
        server = SocketServer(process, sockets / "cairn.sock", tmp_path / "server.log")
        try:
            assert process.stdout is not None
            assert json.loads(process.stdout.readline())["listening"] == "cairn.sock"
            record = json.loads((data / "server.json").read_text(encoding="utf-8"))
            assert record["socket"] == str(sockets / "cairn.sock")
            status = cairn_json(data, "status")  # from the tests' working directory
            assert status["agents"] == {}
        finally:
            assert server.stop() == 0, server.log()
