"""The typer app in process: JSON contracts, exit codes, human output, progress rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli.conftest import TURNS, Invoke, json_of, write_jsonl


@pytest.fixture
def turns_file(tmp_path: Path) -> Path:
    rows: list[object] = [*TURNS, "{not json"]
    rows.append({"id": "t9", "session": "s1", "role": "system", "text": "x"})
    return write_jsonl(tmp_path / "turns.jsonl", rows)


def test_ingest_recall_status_contracts(invoke: Invoke, turns_file: Path) -> None:
    first = invoke("ingest", "--agent", "a", str(turns_file), "--json")
    assert first.exit_code == 3
    summary = json_of(first)
    assert summary["ingested"] == 4
    assert summary["duplicate"] == 0
    assert [(r["line"], r["id"]) for r in summary["rejected"]] == [(5, None), (6, "t9")]
    assert "invalid JSON" in summary["rejected"][0]["reason"]

    again = json_of(invoke("ingest", "--agent", "a", str(turns_file), "--json"))
    assert (again["ingested"], again["duplicate"]) == (0, 4)

    recall = json_of(invoke("recall", "--agent", "a", "--json", "oolong tea"))
    assert recall["status"] == "ok"
    assert recall["items"][0]["source_refs"][0] == "t1"
    for item in recall["items"]:
        assert set(item) == {
            "id",
            "kind",
            "text",
            "score",
            "source_refs",
            "at",
            "qualifier",
            "origin",
            "lifecycle",
            "stage",
            "standing",
            "valid_until",
            "metadata",
        }

    status = json_of(invoke("status", "--json"))
    entry = status["agents"]["a"]
    assert entry["events"] == 4
    assert entry["events_pending_extraction"] == 0
    assert entry["claims"] > 0
    assert entry["epoch"] == 0
    assert entry["live"] is False
    assert entry["clear_jobs_pending"] == []
    assert status["embedder"]["model"] == "hashing-v1"
    (stored,) = entry["stored_vectors"]
    assert (stored["model"], stored["count"]) == ("hashing-v1", entry["embeddings"])
    assert (entry["runtime"], entry["query_breaker"], entry["vector_identity"]) == (
        None,
        None,
        None,
    )


def test_human_output_uses_tables_and_escapes_markup(
    invoke: Invoke, tmp_path: Path
) -> None:
    turns = write_jsonl(
        tmp_path / "t.jsonl",
        [
            {
                "id": "m1",
                "session": "s",
                "role": "user",
                "text": "I love [bold]tea[/bold].",
            }
        ],
    )
    result = invoke("ingest", "--agent", "a", str(turns))
    assert result.exit_code == 0
    assert result.stdout.strip() == "ingested 1, duplicate 0, rejected 0"
    shown = invoke("recall", "--agent", "a", "tea")
    assert "[bold]tea[/bold]" in shown.stdout  # user text is never rich markup
    assert "m1" in shown.stdout
    status = invoke("status")
    assert "agent" in status.stdout
    assert "│" in status.stdout or "┃" in status.stdout


def test_bad_input_exits_2_and_stores_nothing(invoke: Invoke, tmp_path: Path) -> None:
    missing = invoke("ingest", "--agent", "a", str(tmp_path / "missing.jsonl"))
    assert missing.exit_code == 2
    assert "no such file" in missing.stderr
    bad_agent = invoke("recall", "--agent", "../x", "tea")
    assert bad_agent.exit_code == 2
    assert "cairn:" in bad_agent.stderr
    usage = invoke("recall", "tea")  # --agent is required
    assert usage.exit_code == 2
    no_query = invoke("recall", "--agent", "a")
    assert no_query.exit_code == 2
    assert "QUERY" in no_query.stderr
    queries = write_jsonl(tmp_path / "q.jsonl", [{"id": "q1"}])
    bad_queries = invoke("recall", "--agent", "a", "--queries", str(queries))
    assert bad_queries.exit_code == 2
    assert "need id and query" in bad_queries.stderr
    status = json_of(invoke("status", "--json"))
    assert all(entry["events"] == 0 for entry in status["agents"].values())


def test_queries_file_answers_each_line_in_order(
    invoke: Invoke, turns_file: Path, tmp_path: Path
) -> None:
    invoke("ingest", "--agent", "a", str(turns_file), "--json")
    queries = write_jsonl(
        tmp_path / "q.jsonl",
        [{"id": "q1", "query": "tea"}, {"id": "q2", "query": "东京 会议"}],
    )
    result = invoke("recall", "--agent", "a", "--json", "--queries", str(queries))
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["q1", "q2"]
    assert any("t3" in item["source_refs"] for item in lines[1]["items"])


def test_help_documents_exit_codes(invoke: Invoke) -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    for phrase in (
        "Exit codes",
        "2 bad usage",
        "3 some input lines",
        "4 another cairn",
    ):
        assert phrase in text
    for command in ("ingest", "recall", "status", "demo", "providers"):
        assert command in result.stdout


def test_progress_bar_only_on_a_terminal_and_never_with_json(
    invoke: Invoke, turns_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    label = "ingest turns.jsonl"
    assert label not in invoke("ingest", "--agent", "a", str(turns_file)).stderr
    monkeypatch.setattr("cairn.cli.progress._is_terminal", lambda: True)
    shown = invoke("ingest", "--agent", "b", str(turns_file))
    assert label in shown.stderr
    quiet = invoke("ingest", "--agent", "c", str(turns_file), "--json")
    assert label not in quiet.stderr
    assert json_of(quiet)["ingested"] == 4


@pytest.mark.subprocess
def test_unexpected_error_traceback_never_shows_locals(tmp_path: Path) -> None:
    # A command that fails unexpectedly while a secret sits in a local variable.
    script = """
import sys
from cairn.cli.main import app, main

@app.command()
def explode() -> None:
    api_secret = "sk-do-not-print-" + "0451"
    raise RuntimeError("boom " + str(len(api_secret)))

sys.exit(main(["--data", sys.argv[1], "explode"]))
"""
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "d")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"COLUMNS": "200", "PATH": "", "TERM": "xterm", "NO_COLOR": "1"},
    )
    assert result.returncode == 1
    assert "RuntimeError" in result.stderr
    assert "boom 20" in result.stderr
    assert "sk-do-not-print-0451" not in result.stderr + result.stdout
