"""`cairn recall` shows what holds now, marks history, and answers `--as-of`."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Invoke, json_of, write_jsonl

MOVE = [
    {
        "id": "m1",
        "session": "s1",
        "role": "user",
        "speaker": "Ravi",
        "at": "2025-02-01T09:00:00+00:00",
        "text": "I live in Pune.",
    },
    {
        "id": "m2",
        "session": "s2",
        "role": "user",
        "speaker": "Ravi",
        "at": "2025-06-01T09:00:00+00:00",
        "text": "I live in Bangalore now.",
    },
]


def test_recall_marks_history_and_answers_as_of(invoke: Invoke, tmp_path: Path) -> None:
    turns = write_jsonl(tmp_path / "move.jsonl", MOVE)
    assert invoke("ingest", "--agent", "r", str(turns), "--json").exit_code == 0
    now = json_of(invoke("recall", "--agent", "r", "--json", "Where does Ravi live?"))
    assert "Bangalore" in now["items"][0]["text"]
    assert now["items"][0]["standing"] == "current"
    pune = [item for item in now["items"] if "Pune" in item["text"]]
    assert pune
    assert {item["standing"] for item in pune} == {"history"}
    assert {item["valid_until"] for item in pune} == {"2025-06-01T09:00:00+00:00"}
    table = invoke("recall", "--agent", "r", "Where does Ravi live?").stdout
    assert "previously" in table
    assert "2025-06-01" in table
    then = json_of(
        invoke(
            "recall",
            "--agent",
            "r",
            "--json",
            "--as-of",
            "2025-03-01T00:00+00:00",
            "Where does Ravi live?",
        )
    )
    assert "Pune" in then["items"][0]["text"]
    assert not [item for item in then["items"] if "Bangalore" in item["text"]]


def test_as_of_needs_an_offset(invoke: Invoke) -> None:
    result = invoke("recall", "--agent", "r", "--as-of", "2025-03-01", "where?")
    assert result.exit_code != 0
    assert "needs a UTC offset" in result.stderr
