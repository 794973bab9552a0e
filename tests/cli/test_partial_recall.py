"""``cairn recall`` on a cold model: the partial answer is printed and called partial, with
the request ID of the complete result; the JSON carries the status."""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
from tests.cli.conftest import TURNS, write_jsonl
from tests.conftest import TEST_CONFIG
from tests.fakes import ColdQueries
from typer.testing import CliRunner

from cairn.cli.app import CliContext
from cairn.cli.main import app
from cairn.testing import FixedDomainClock, HashingEmbedder

# The query model never loads here: a recall's vector side gives up after the warm-up wait
# and its deadline, and the runtime's stop waits for that complete result.
COLD = attrs.evolve(
    TEST_CONFIG,
    query_warmup_wait_s=0.8,
    query_deadline_floor_s=0.1,
    query_deadline_ceiling_s=0.1,
)


def test_recall_prints_a_partial_answer_and_says_so(tmp_path: Path) -> None:
    data = tmp_path / "data"
    runner = CliRunner()

    def cairn(*args: str, embedder: type[HashingEmbedder] = HashingEmbedder) -> str:
        context = CliContext(
            data_dir=data, config=COLD, clock=FixedDomainClock(), embedder=embedder
        )
        result = runner.invoke(app, list(args), obj=context, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    cairn("ingest", "--agent", "a", str(write_jsonl(tmp_path / "t.jsonl", TURNS)))
    shown = cairn(
        "recall", "--agent", "a", "--wait", "0.5", "oolong", embedder=ColdQueries
    )
    assert "oolong" in shown
    assert "partial (vector_pending)" in shown
    answer = json.loads(
        cairn(
            "recall",
            "--agent",
            "a",
            "--wait",
            "0.5",
            "--json",
            "oolong",
            embedder=ColdQueries,
        )
    )
    assert answer["status"] == "partial"
    assert re.search(r"stored as request [0-9a-f]{32}", " ".join(shown.split()))
    assert any("oolong" in item["text"] for item in answer["items"])
    assert answer["manifest"]["degradations"] == ["vector_pending"]
