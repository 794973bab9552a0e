"""Server lifecycle: one server per data directory (an OS lock that dies with the process),
drain and resume while ingestion is in flight (nothing accepted is lost), and a stop that
drains accepted work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from tests.helpers import turn
from tests.ipc.harness import (
    SERVER_ENV,
    SERVER_TIMEOUT_S,
    SocketServer,
    serve_args,
    short_directory,
    start_socket_server,
)
from tests.providers.fakes import open_fake_server

from cairn import EmbedderIdentity, IntakeOutcome, ReconfigureReport, open_memory
from cairn.errors import DrainingError, DrainTimeoutError
from cairn.ipc import open_unix_client
from cairn.testing import HashingEmbedder

pytestmark = pytest.mark.subprocess


@pytest.fixture
def sockets() -> Iterator[Path]:
    with short_directory() as path:
        yield path


@pytest.fixture
def server(tmp_path: Path, sockets: Path) -> Iterator[SocketServer]:
    running = start_socket_server(
        tmp_path / "data", sockets / "cairn.sock", tmp_path / "server.log"
    )
    try:
        yield running
    finally:
        assert running.stop() == 0, running.log()


def _turns(prefix: str, count: int) -> list:
    return [
        turn(f"{prefix}{i}", f"I visited museum number {i} in Porto with Rui.")
        for i in range(count)
    ]


async def _cairn(*args: str) -> dict:
    result = await trio.run_process(
        [sys.executable, "-m", "cairn", *args],
        capture_stdout=True,
        capture_stderr=True,
        env=SERVER_ENV,
        check=False,
    )
    assert result.returncode in {0, 1}, result.stderr.decode()
    return json.loads(result.stdout)


async def test_drain_while_ingesting_loses_nothing_and_resume_rearms(
    server: SocketServer,
) -> None:
    accepted: list[str] = []
    refused = trio.Event()
    first_batch = trio.Event()

    async def keep_ingesting(client) -> None:
        batch = 0
        while True:
            try:
                report = await client.ingest("drain", _turns(f"b{batch}-", 100))
            except DrainingError:
                refused.set()
                return
            accepted.extend(
                r.event_id
                for r in report.results
                if r.outcome is IntakeOutcome.INGESTED
            )
            first_batch.set()
            batch += 1

    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(server.socket_path) as client:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(keep_ingesting, client)
                await first_batch.wait()
                async with open_unix_client(server.socket_path) as operator:
                    report = await operator.drain(timeout_s=SERVER_TIMEOUT_S)
                assert report.agents == 1
                # Drained means settled: everything accepted is stored and extracted.
                counts = (await client.status()).agent("drain")
                assert counts.events == len(accepted)
                assert counts.events_pending_extraction == 0
                assert counts.embeddings == counts.events
                assert counts.statistics.outstanding_work == 0
            assert refused.is_set()

            with pytest.raises(DrainingError):
                await client.add_directive("drain", "Be brief.")
            recall = await client.recall("drain", "museum in Porto", wait_s=30.0)
            assert recall.items  # reads keep working while drained

            # The operator command: drain again (nothing to wait for), then resume.
            drained = await _cairn("drain", "--socket", str(server.socket_path))
            assert drained["drained"] is True
            resumed = await _cairn(
                "drain", "--socket", str(server.socket_path), "--resume"
            )
            assert resumed == {"resumed": True}
            report = await client.ingest("drain", _turns("after-", 50))
            assert report.ingested == 50
            await client.wait_idle("drain")
            counts = (await client.status()).agent("drain")
            assert counts.events == len(accepted) + 50
            assert counts.events_pending_extraction == 0


async def test_drain_timeout_fails_and_stays_drained_until_resume(
    server: SocketServer,
) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(server.socket_path) as client:
            report = await client.ingest("slow", _turns("s", 1500))
            assert report.ingested == 1500
            # Accepted extraction work is outstanding: a microsecond cannot settle it.
            with pytest.raises(DrainTimeoutError):
                await client.drain(timeout_s=1e-6)
            with pytest.raises(DrainingError):
                await client.ingest("slow", _turns("late", 1))
            await client.resume()
            await client.wait_idle("slow")
            counts = (await client.status()).agent("slow")
            assert counts.events == 1500
            assert counts.events_pending_extraction == 0


def _record(data: Path) -> dict:
    return json.loads((data / "server.json").read_text(encoding="utf-8"))


def test_a_second_server_on_the_same_data_directory_is_refused(
    tmp_path: Path, sockets: Path
) -> None:
    data = tmp_path / "data"
    first = start_socket_server(data, sockets / "one.sock", tmp_path / "one.log")
    try:
        # Published by the time the readiness line is out: CLI commands find it.
        record = _record(data)
        assert record["pid"] == first.process.pid
        assert record["transport"] == "socket"
        assert record["socket"] == str(sockets / "one.sock")
        assert record["started_at"]
        for transport in (["--socket", str(sockets / "two.sock")], ["--stdio"]):
            second = subprocess.run(
                serve_args(data, *transport),
                capture_output=True,
                text=True,
                env=SERVER_ENV,
                stdin=subprocess.DEVNULL,
                timeout=SERVER_TIMEOUT_S,
                check=False,
            )
            assert second.returncode == 4
            assert f"pid {first.process.pid}" in second.stderr
            assert f"socket {sockets / 'one.sock'}" in second.stderr
            assert "holds" in second.stderr
        assert not (sockets / "two.sock").exists()
        assert first.process.poll() is None
        assert _record(data)["pid"] == first.process.pid  # untouched by the refused
    finally:
        # A killed server's lock dies with it; its socket file is replaced on restart.
        first.process.send_signal(signal.SIGKILL)
        first.stop()
    assert (sockets / "one.sock").exists()
    assert _record(data)["pid"] == first.process.pid  # stale: its lock is free
    again = start_socket_server(data, sockets / "one.sock", tmp_path / "again.log")
    try:
        assert _record(data)["pid"] == again.process.pid
    finally:
        assert again.stop() == 0
    assert not (sockets / "one.sock").exists()
    assert not (data / "server.json").exists()  # a clean stop withdraws it


async def test_sigterm_stops_after_draining_accepted_work_even_when_repeated(
    tmp_path: Path, sockets: Path
) -> None:
    data = tmp_path / "data"
    server = start_socket_server(data, sockets / "cairn.sock", tmp_path / "log")
    try:
        with trio.fail_after(SERVER_TIMEOUT_S):
            async with open_unix_client(server.socket_path) as client:
                assert (await client.ingest("stop", _turns("t", 800))).ingested == 800
            # A second signal while it drains must not cut the drain short.
            os.kill(server.process.pid, signal.SIGTERM)
            os.kill(server.process.pid, signal.SIGTERM)
    finally:
        code = server.stop()
    assert code == 0, server.log()
    assert "stopped" in server.log()
    async with open_memory(data, embedder=HashingEmbedder()) as memory:
        counts = (await memory.status()).agent("stop")
    assert counts.events == 800
    assert counts.events_pending_extraction == 0


def test_operator_errors_are_clear(tmp_path: Path, sockets: Path) -> None:
    """No server to drain, or a socket path the OS cannot bind: exit 2 and a reason."""
    absent = subprocess.run(
        [sys.executable, "-m", "cairn", "drain", "--socket", str(sockets / "none")],
        capture_output=True,
        text=True,
        env=SERVER_ENV,
        timeout=SERVER_TIMEOUT_S,
        check=False,
    )
    assert absent.returncode == 2
    assert "cannot connect" in absent.stderr
    assert "Traceback" not in absent.stderr

    # Without --socket, drain looks for the server of --data: there is none.
    nothing = tmp_path / "nothing"
    unserved = subprocess.run(
        [sys.executable, "-m", "cairn", "--data", str(nothing), "drain"],
        capture_output=True,
        text=True,
        env=SERVER_ENV,
        timeout=SERVER_TIMEOUT_S,
        check=False,
    )
    assert unserved.returncode == 2
    assert f"no cairn server holds {nothing}" in unserved.stderr
    assert not nothing.exists()

    too_long = sockets / ("x" * 120)
    refused = subprocess.run(
        serve_args(tmp_path / "data", "--socket", str(too_long)),
        capture_output=True,
        text=True,
        env=SERVER_ENV,
        stdin=subprocess.DEVNULL,
        timeout=SERVER_TIMEOUT_S,
        check=False,
    )
    assert refused.returncode == 2, refused.stderr
    assert "cannot listen on" in refused.stderr
    assert "Traceback" not in refused.stderr


async def test_reconfigure_switches_the_served_embedder_live(
    server: SocketServer, tmp_path: Path
) -> None:
    """An operator edits cairn.toml and asks the running server to apply it: the new
    provider serves from then on, without a restart, and work settles under it."""
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with (
            open_fake_server(dimension=12) as provider,
            open_unix_client(server.socket_path) as client,
        ):
            await client.ingest("switch", _turns("before-", 5))
            await client.wait_idle("switch")
            (tmp_path / "data" / "cairn.toml").write_text(
                f'[embedding]\nprovider = "ollama"\nbase_url = "{provider.base_url}"\n'
                'model = "served-embed"\ndimension = 12\n',
                encoding="utf-8",
            )
            changed = await _cairn("reconfigure", "--socket", str(server.socket_path))
            assert changed == {
                "changed": True,
                "embedder": {
                    "provider": "ollama",
                    "model": "served-embed",
                    "dimension": 12,
                    "metric": "cos",
                },
            }
            again = await client.reconfigure()
            assert again == ReconfigureReport(  # already applied: the same embedder
                False, EmbedderIdentity("ollama", "served-embed", 12, "cos"), None
            )
            later = [
                turn(f"after-{i}", f"I visited museum number {i} in Porto with Rui.")
                for i in range(5, 10)
            ]
            await client.ingest("switch", later)
            await client.wait_idle("switch")
            recall = await client.recall("switch", "museum in Porto", wait_s=30.0)
            status = await client.status()
    assert status.embedder.model == "served-embed"
    assert status.agent("switch").vector_identity.dimension == 12
    assert recall.manifest is not None
    assert recall.manifest.degradations == ()
    # Every event, old and new, was embedded by the new provider.
    embedded = {text for request in provider.requests for text in request.body["input"]}
    for i in range(10):
        assert any(f"museum number {i} " in text for text in embedded), i
