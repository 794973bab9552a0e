"""In-process CLI runs: the typer app with a fast deterministic embedder and a fixed clock."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import TEST_CONFIG
from typer.testing import CliRunner, Result

from cairn.cli.app import CliContext
from cairn.cli.main import app
from cairn.testing import FixedDomainClock, HashingEmbedder

Invoke = Callable[..., Result]

TURNS = [
    {
        "id": "t1",
        "session": "s1",
        "role": "user",
        "speaker": "Ana",
        "text": "I love oolong tea.",
        "at": "2026-01-05T09:00:00+00:00",
    },
    {"id": "t2", "session": "s1", "role": "assistant", "text": "Noted, oolong it is."},
    {
        "id": "t3",
        "session": "s2",
        "role": "user",
        "speaker": "Ana",
        "text": "我下周三要去东京开会。",
        "at": "2026-01-06T09:00:00+08:00",
    },
    {
        "id": "t4",
        "session": "s2",
        "role": "user",
        "speaker": "Ana",
        "text": "I moved to Lisbon last spring and I work as a nurse.",
    },
]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join(
            (row if isinstance(row, str) else json.dumps(row, ensure_ascii=False))
            + "\n"
            for row in rows
        ),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def invoke(tmp_path: Path) -> Invoke:
    """``invoke(*args, data=DIR)``: run the CLI in this process; stdout and stderr apart."""
    runner = CliRunner()

    def run(*args: str, data: Path | None = None) -> Result:
        context = CliContext(
            data_dir=data or tmp_path / "data",
            config=TEST_CONFIG,
            clock=FixedDomainClock(),
            embedder=HashingEmbedder,
        )
        return runner.invoke(app, list(args), obj=context, catch_exceptions=False)

    return run


def json_of(result: Result) -> Any:
    assert result.stdout.count("\n") == 1, result.stdout
    return json.loads(result.stdout)
