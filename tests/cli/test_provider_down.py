"""``status``, ``doctor``, ``export`` and ``memories list|show`` with the configured
embedding provider down.

The data directory holds turns ingested with the hashing embedder; the commands then run
as real processes configured (``CAIRN_EMBEDDING_*``) for an OpenAI-compatible provider
that is down: a loopback port nothing listens on, or a real HTTP server on loopback that
answers every request with 500. They still do their work from what is stored, and
``status`` says the provider is unreachable.

Two depths of "down": with no ``dimension`` configured the runtime cannot open (the
dimension probe fails), so the commands read the stored rows (cairn.cli.reading); with a
``dimension`` configured the runtime opens and ``status`` probes the provider itself.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from tests.cli.conftest import TURNS, write_jsonl
from tests.ipc.harness import SERVER_ENV
from tests.providers.fakes import open_fake_server, unused_port
from tests.support.serve_hashing import hashing_cairn

pytestmark = pytest.mark.subprocess

COMMAND_BOUND_S = 60.0


async def _run(
    command: list[str], env: dict[str, str] | None = None
) -> trio.CompletedProcess[bytes]:
    with trio.fail_after(COMMAND_BOUND_S):
        return await trio.run_process(
            command,
            env=SERVER_ENV if env is None else env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


def _cairn(data: Path, *args: str) -> list[str]:
    """The real command line, with the embedder the environment configures."""
    return [sys.executable, "-m", "cairn", "--data", str(data), *args]


async def _ingested(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    turns = write_jsonl(tmp_path / "turns.jsonl", TURNS)
    done = await _run(
        hashing_cairn("--data", str(data), "ingest", "--agent", "ana", str(turns))
    )
    assert done.returncode == 0, done.stderr.decode()
    return data


def _provider_env(base_url: str, *, dimension: int | None = None) -> dict[str, str]:
    env = {
        **SERVER_ENV,
        "CAIRN_EMBEDDING_PROVIDER": "openai-compatible",
        "CAIRN_EMBEDDING_BASE_URL": base_url,
        "CAIRN_EMBEDDING_MODEL": "embed-small",
        "CAIRN_EMBEDDING_CONNECT_TIMEOUT_S": "2",
        "CAIRN_EMBEDDING_READ_TIMEOUT_S": "2",
    }
    if dimension is not None:
        env["CAIRN_EMBEDDING_DIMENSION"] = str(dimension)
    return env


@pytest.fixture
async def refused_url() -> str:
    await trio.lowlevel.checkpoint()
    return f"http://127.0.0.1:{unused_port()}"


def _one_json(result: trio.CompletedProcess[bytes]) -> Any:
    out = result.stdout.decode()
    assert out.count("\n") == 1, (out, result.stderr.decode())
    return json.loads(out)


def _no_traceback(result: trio.CompletedProcess[bytes]) -> None:
    assert b"Traceback" not in result.stderr, result.stderr.decode()


async def _check_commands(
    data: Path, tmp_path: Path, env: dict[str, str], *, probed: bool
) -> None:
    status = await _run(_cairn(data, "status", "--json"), env)
    _no_traceback(status)
    assert status.returncode == 0, status.stderr.decode()
    report = _one_json(status)
    assert report["agents"]["ana"]["events"] == len(TURNS)
    assert report["embedder_reachable"] is False
    assert "127.0.0.1" in report["embedder_error"]
    if not probed:
        assert report["read_only"] is True

    shown = await _run(_cairn(data, "status"), env)
    assert shown.returncode == 0, shown.stderr.decode()
    assert "unreachable" in shown.stdout.decode()

    doctor = await _run(_cairn(data, "doctor", "--json"), env)
    _no_traceback(doctor)
    checked = _one_json(doctor)
    assert checked["sqlite_integrity"] == "ok"
    if not probed:
        assert doctor.returncode == 0, doctor.stderr.decode()
        assert checked["ok"] is True
        assert any("embedding provider" in line for line in checked["degraded"])

    # What memory holds is listed and shown from the stored rows too.
    listed = await _run(
        _cairn(data, "memories", "list", "--agent", "ana", "--json"), env
    )
    _no_traceback(listed)
    assert listed.returncode == 0, listed.stderr.decode()
    found = _one_json(listed)
    assert "Ana loves oolong tea" in [item["text"] for item in found["memories"]]
    assert bool(found["degraded"]) is not probed
    claim_id = found["memories"][0]["id"]
    one = await _run(
        _cairn(data, "memories", "show", "--agent", "ana", claim_id, "--json"), env
    )
    assert one.returncode == 0, one.stderr.decode()
    detail = _one_json(one)
    assert detail["memory"]["id"] == claim_id
    assert detail["evidence"], detail

    exported = tmp_path / f"export-{probed}.jsonl"
    export = await _run(_cairn(data, "export", str(exported), "--json"), env)
    _no_traceback(export)
    assert export.returncode == 0, export.stderr.decode()
    lines = [json.loads(line) for line in exported.read_text("utf-8").splitlines()]
    events = [line for line in lines if line.get("type") == "event"]
    assert len(events) == len(TURNS)


async def test_commands_work_with_nothing_listening(
    tmp_path: Path, refused_url: str
) -> None:
    data = await _ingested(tmp_path)
    await _check_commands(data, tmp_path, _provider_env(refused_url), probed=False)


async def test_commands_work_when_the_provider_answers_500(tmp_path: Path) -> None:
    data = await _ingested(tmp_path)
    async with open_fake_server(mode="server_error") as server:
        env = _provider_env(server.base_url)
        await _check_commands(data, tmp_path, env, probed=False)
        assert server.requests, "the provider was never asked"


async def test_status_probes_a_provider_of_known_dimension(
    tmp_path: Path, refused_url: str
) -> None:
    data = await _ingested(tmp_path)
    env = _provider_env(refused_url, dimension=8)
    await _check_commands(data, tmp_path, env, probed=True)


async def test_status_says_a_live_provider_is_reachable(tmp_path: Path) -> None:
    data = await _ingested(tmp_path)
    async with open_fake_server(dimension=8) as server:
        status = await _run(
            _cairn(data, "status", "--json"), _provider_env(server.base_url)
        )
    assert status.returncode == 0, status.stderr.decode()
    report = _one_json(status)
    assert report["embedder_reachable"] is True
    assert report["embedder_error"] is None
    assert report["read_only"] is False


async def test_a_local_embedder_is_not_probed(tmp_path: Path) -> None:
    data = await _ingested(tmp_path)
    status = await _run(hashing_cairn("--data", str(data), "status", "--json"))
    report = _one_json(status)
    assert report["embedder_reachable"] is None
    assert report["embedder_error"] is None
