"""``cairn ingest`` consolidates before it exits (a short-lived process never reaches the
maintenance timer), ``--no-maintain`` leaves that to later, and ``cairn maintain`` runs
it on demand."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Invoke, json_of


def _turns(path: Path) -> Path:
    rows = [
        ("t1", "s1", "I really love oolong tea."),
        ("t2", "s2", "I love drinking oolong tea."),
    ]
    path.write_text(
        "".join(
            json.dumps(
                {
                    "id": event,
                    "session": session,
                    "role": "user",
                    "speaker": "Ana",
                    "text": text,
                    "at": "2026-01-05T09:00:00+00:00",
                }
            )
            + "\n"
            for event, session, text in rows
        ),
        encoding="utf-8",
    )
    return path


def _tea(invoke: Invoke) -> list[list[str]]:
    recall = json_of(invoke("recall", "--agent", "a", "oolong tea", "--json"))
    return [
        item["source_refs"]
        for item in recall["items"]
        if item["kind"] != "evidence" and "oolong" in item["text"]
    ]


def test_ingest_consolidates_before_it_exits(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke(
        "ingest", "--agent", "a", str(_turns(tmp_path / "t.jsonl")), "--json"
    )
    assert result.exit_code == 0, result.stderr
    assert json_of(result)["maintenance"]["settled"] >= 1
    (refs,) = _tea(invoke)
    assert sorted(refs) == ["t1", "t2"]


def test_no_maintain_leaves_it_to_maintain(invoke: Invoke, tmp_path: Path) -> None:
    path = str(_turns(tmp_path / "t.jsonl"))
    result = invoke("ingest", "--agent", "a", path, "--no-maintain", "--json")
    assert result.exit_code == 0, result.stderr
    assert "maintenance" not in json_of(result)
    assert len(_tea(invoke)) == 2
    done = invoke("maintain", "--agent", "a", "--json")
    assert done.exit_code == 0, done.stderr
    report = json_of(done)
    assert report["agent_id"] == "a"
    assert report["settled"] >= 1
    assert report["remaining"] == 0
    assert len(_tea(invoke)) == 1
    text = invoke("maintain", "--agent", "a")
    assert "maintenance of a: 0 batches, 0 claims settled, 0 still dirty" in text.stdout
