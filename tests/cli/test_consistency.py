"""One shape for every command: the agent is ``--agent``, ``--data`` works before or
after the command's name, and an error is one ``cairn: ...`` line with the documented
exit code (design/cli.md, "Exit codes")."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from tests.cli.conftest import TURNS, Invoke, json_of, write_jsonl
from tests.ipc.harness import SERVER_ENV

from cairn.cli.app import hoist_global_options
from cairn.cli.main import app

COMMANDS = frozenset({"recall", "status", "conflicts", "list"})


def _commands(command: Any, path: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    yield " ".join(path), command
    for name, sub in (getattr(command, "commands", None) or {}).items():
        yield from _commands(sub, (*path, name))


def test_the_agent_is_the_agent_option_everywhere() -> None:
    seen = []
    for path, command in _commands(typer.main.get_command(app), ("cairn",)):
        for parameter in command.params:
            if "agent" not in parameter.name:
                continue
            seen.append(path)
            assert parameter.opts == ["--agent"], (path, parameter.opts)
    assert {"cairn recall", "cairn ingest", "cairn export"} <= set(seen)


def test_data_after_the_command(invoke: Invoke, tmp_path: Path) -> None:
    other = tmp_path / "other"
    turns = write_jsonl(tmp_path / "turns.jsonl", TURNS)
    ingested = invoke("ingest", "--agent", "ana", str(turns), "--data", str(other))
    assert ingested.exit_code == 0, ingested.stderr
    after = json_of(invoke("status", "--json", f"--data={other}"))
    assert after["data_dir"] == str(other)
    assert after["agents"]["ana"]["events"] == len(TURNS)
    # Before the command, as always; the default directory was never touched.
    before = json_of(invoke("--data", str(other), "status", "--json"))
    assert before["agents"] == after["agents"]
    assert not (tmp_path / "data").exists()
    nested = invoke("conflicts", "list", "--agent", "ana", "--data", str(other))
    assert nested.exit_code == 0, nested.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["recall", "--data", "D", "q"], ["--data", "D", "recall", "q"]),
        (
            ["--data", "A", "status", "--data", "B"],
            ["--data", "A", "--data", "B", "status"],  # the later one wins
        ),
        (["status", "--data=D", "--json"], ["--data=D", "status", "--json"]),
        # After "--" every token is an argument, "--data" included.
        (
            ["recall", "--data", "D", "--", "--data"],
            ["--data", "D", "recall", "--", "--data"],
        ),
        # The value of a global option is not the command, whatever it spells.
        (["--data", "status", "recall", "q"], ["--data", "status", "recall", "q"]),
        (["conflicts", "list", "--data", "D"], ["--data", "D", "conflicts", "list"]),
    ],
)
def test_hoisting_moves_only_the_global_options(
    args: list[str], expected: list[str]
) -> None:
    assert hoist_global_options(args, COMMANDS) == expected


def _cairn(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cairn", *args],
        capture_output=True,
        text=True,
        env=SERVER_ENV,
        cwd=cwd,
        timeout=60,
        check=False,
    )


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["recall", "what?"], 2),  # a missing option
        (["status", "--bogus"], 2),  # an unknown option
        (["bogus"], 2),  # an unknown command
        (["recall", "--agent", "ana", "--k", "many", "what?"], 2),  # a bad value
        (["ingest", "--agent", "ana", "/no/such/file.jsonl"], 2),  # a typed error
        (["export", "/no/such/dir/out.jsonl"], 2),
        (["install", "no-such-host"], 2),
        (["drain"], 2),
        (["config", "check"], 2),  # the broken configuration file
        (["status"], 2),
    ],
)
def test_an_error_is_one_line(tmp_path: Path, args: list[str], code: int) -> None:
    data = tmp_path / "data"
    data.mkdir()
    broken = args in (["config", "check"], ["status"])
    if broken:
        (data / "cairn.toml").write_text("[memory]\nrecal_k = 3\n", encoding="utf-8")
    done = _cairn("--data", str(data), *args, cwd=tmp_path)
    lines = done.stderr.splitlines()
    assert done.returncode == code, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("cairn: "), lines
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    if broken:
        assert "recal_k" in lines[0]
        assert "recall_k" in lines[0]  # the suggestion


@pytest.mark.subprocess
def test_a_bad_log_level_is_one_line(tmp_path: Path) -> None:
    env = {**SERVER_ENV, "CAIRN_LOG_LEVEL": "loud"}
    done = subprocess.run(
        [sys.executable, "-m", "cairn", "--data", str(tmp_path), "status", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    expected = (
        "cairn: CAIRN_LOG_LEVEL must be one of debug, info, warning, error,"
        " critical, not 'loud'"
    )
    assert done.stderr.splitlines() == [expected]
    assert done.stdout == ""
