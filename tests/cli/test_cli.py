"""The command line, run as a real subprocess: exact JSON contracts, exit codes, idempotent
re-ingest, the demo, and clear errors for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli.conftest import TURNS as CONVERSATION

pytestmark = pytest.mark.subprocess

# The first three turns of the in-process tests' conversation.
TURNS = CONVERSATION[:3]


def cairn(
    *args: str, data: Path, check: bool = True
) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "CAIRN_DATA": str(data)}
    result = subprocess.run(
        [sys.executable, "-m", "cairn", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
        check=False,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture
def turns_file(tmp_path: Path) -> Path:
    path = tmp_path / "turns.jsonl"
    lines = [json.dumps(t, ensure_ascii=False) for t in TURNS]
    lines.append("{not json")
    lines.append(
        json.dumps({"id": "t9", "session": "s1", "role": "system", "text": "x"})
    )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_ingest_recall_status_round_trip(tmp_path: Path, turns_file: Path) -> None:
    data = tmp_path / "data"
    first = cairn(
        "ingest", "--agent", "a", str(turns_file), "--json", data=data, check=False
    )
    assert first.returncode == 3, first.stderr
    summary = json.loads(first.stdout)
    assert summary["ingested"] == 3
    assert summary["duplicate"] == 0
    assert [r["line"] for r in summary["rejected"]] == [4, 5]

    again = json.loads(
        cairn(
            "ingest", "--agent", "a", str(turns_file), "--json", data=data, check=False
        ).stdout
    )
    assert again["ingested"] == 0
    assert again["duplicate"] == 3

    recall = json.loads(
        cairn(
            "recall", "--agent", "a", "--json", "--k", "5", "oolong tea", data=data
        ).stdout
    )
    assert recall["status"] == "ok"
    assert set(recall) >= {
        "status",
        "request_id",
        "items",
        "memory_block",
        "directive_block",
        "manifest",
    }
    assert recall["items"]
    for item in recall["items"]:
        assert set(item) >= {"id", "kind", "text", "score", "source_refs", "standing"}
    assert recall["items"][0]["source_refs"][0] == "t1"
    assert "<context-data" in recall["memory_block"]

    chinese = json.loads(
        cairn("recall", "--agent", "a", "--json", "东京", data=data).stdout
    )
    assert any("t3" in item["source_refs"] for item in chinese["items"])

    other = json.loads(
        cairn("recall", "--agent", "b", "--json", "oolong tea", data=data).stdout
    )
    assert other["items"] == []

    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        json.dumps({"id": "q1", "query": "tea"})
        + "\n"
        + json.dumps({"id": "q2", "query": "东京 会议"})
        + "\n",
        encoding="utf-8",
    )
    lines = cairn(
        "recall", "--agent", "a", "--json", "--queries", str(queries), data=data
    ).stdout.splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["q1", "q2"]

    status = json.loads(cairn("status", "--json", data=data).stdout)
    assert status["agents"]["a"]["events"] == 3
    assert status["agents"]["a"]["events_pending_extraction"] == 0


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    result = cairn(
        "ingest",
        "--agent",
        "a",
        str(tmp_path / "missing.jsonl"),
        data=tmp_path / "d",
        check=False,
    )
    assert result.returncode == 2
    assert "no such file" in result.stderr
    assert "Traceback" not in result.stderr
    result = cairn("recall", "--agent", "../x", "tea", data=tmp_path / "d", check=False)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_demo_runs_offline() -> None:
    result = cairn("demo", data=Path("/nonexistent-unused"))
    assert "Q: What drink does Mei like?" in result.stdout
    assert "oolong" in result.stdout
    assert "乌龙茶" in result.stdout


def test_providers_check(tmp_path: Path) -> None:
    ok = json.loads(cairn("providers", "check", "--json", data=tmp_path / "a").stdout)
    assert ok["status"] == "ok"
    assert ok["embedding"]["provider"] == "local"
    assert ok["embedding"]["dimension"] == 384
    assert ok["embedding"]["warm_ms"] > 0
    assert ok["text"] == {
        "kind": "text",
        "provider": "none",
        "model": None,
        "ok": True,
        "error": None,
    }

    from tests.providers.fakes import unused_port

    refused = tmp_path / "refused"
    refused.mkdir()
    (refused / "cairn.toml").write_text(
        f'[embedding]\nprovider = "ollama"\nbase_url = "http://127.0.0.1:{unused_port()}"\n'
        'model = "m"\ndimension = 8\n',
        encoding="utf-8",
    )
    result = cairn("providers", "check", "--json", data=refused, check=False)
    assert result.returncode == 1
    refused_report = json.loads(result.stdout)
    assert refused_report["status"] == "failed"
    assert refused_report["embedding"]["error"]["type"] == "TransientProviderError"

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "cairn.toml").write_text(
        '[embedding]\nprovider = "magic"\n', encoding="utf-8"
    )
    result = cairn("providers", "check", data=broken, check=False)
    assert result.returncode == 2
    assert "unknown embedding provider" in result.stderr
    assert "Traceback" not in result.stderr


def test_runtime_events_edits_and_replay(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = tmp_path / "events.jsonl"
    lines = [
        {"id": "a1", "session": "s1", "role": "user", "text": "I live in Paris."},
        {
            "id": "a2",
            "session": "s1",
            "role": "user",
            "text": "I live in Berlin.",
            "replaces": "a1",
        },
        {
            "id": "a3",
            "session": "s1",
            "role": "event",
            "text": "Deploy failed",
            "kind": "task_failed",
        },
        {"id": "a4", "session": "s1", "role": "event", "text": "x", "kind": "bogus"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    result = cairn(
        "ingest", "--agent", "A", str(path), "--json", data=data, check=False
    )
    assert result.returncode == 3
    summary = json.loads(result.stdout)
    assert summary["ingested"] == 3
    assert [r["line"] for r in summary["rejected"]] == [4]
    replay = json.loads(cairn("replay", "--agent", "A", "--json", data=data).stdout)
    assert replay == {"agent": "A", "replayed_batches": 0, "dead_letters": 0}
    status = json.loads(cairn("status", "--json", data=data).stdout)
    assert status["agents"]["A"]["extraction_dead_letters"] == 0


def test_forgetting_commands_say_what_they_changed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    stored = json.loads(
        cairn(
            "remember",
            "--agent",
            "a",
            "My bike lock code is 1234.",
            "--json",
            data=data,
        ).stdout
    )
    assert stored["outcome"] == "stored"
    cairn(
        "directives",
        "add",
        "bike",
        "--agent",
        "a",
        "--kind",
        "suppress_topic",
        data=data,
    )
    refused = cairn(
        "directives",
        "add",
        "的",
        "--agent",
        "a",
        "--kind",
        "suppress_topic",
        data=data,
        check=False,
    )
    assert refused.returncode == 2
    assert "refused" in refused.stderr
    cleared = json.loads(
        cairn("clear", "--agent", "a", "--yes", "--json", data=data).stdout
    )
    assert cleared["claims_deleted"] == 1
    assert cleared["kept_counts"]["directives"] == 1
    assert "directives" in cleared["kept"]
    unconfirmed = cairn("retire", "--agent", "a", data=data, check=False)
    assert unconfirmed.returncode == 2
    assert "--yes" in unconfirmed.stderr


def test_forget_a_recalled_turn_from_the_command_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = tmp_path / "frog.jsonl"
    path.write_text(
        json.dumps(
            {
                "id": "f1",
                "session": "s1",
                "role": "user",
                "text": "I keep my spare house key under the ceramic frog.",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    cairn("ingest", "--agent", "a", str(path), data=data)
    shown = json.loads(
        cairn("recall", "--agent", "a", "spare house key", "--json", data=data).stdout
    )
    (item,) = [i for i in shown["items"] if "frog" in i["text"]]
    forgotten = cairn("forget", "--agent", "a", item["id"], data=data)
    assert forgotten.stdout.startswith(f"forgot evidence {item['id']}: removed")
    after = cairn("recall", "--agent", "a", "ceramic frog", "--json", data=data)
    assert "frog" not in after.stdout
    unknown = cairn("forget", "--agent", "a", "f404", data=data, check=False)
    assert unknown.returncode == 2
    assert "cairn: no memory 'f404' in agent 'a'" in unknown.stderr
