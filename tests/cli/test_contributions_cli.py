"""``cairn recall --turn``, ``cairn recalls`` and ``cairn attention [--consume]``, run in
this process against a real data directory."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Invoke, json_of, write_jsonl


def test_recall_turns_records_and_attention_from_the_command_line(
    tmp_path: Path, invoke: Invoke
) -> None:
    turns = write_jsonl(
        tmp_path / "turns.jsonl",
        [
            {"id": "m1", "session": "s1", "role": "user", "text": "I love oolong tea."},
            {
                "id": "b1",
                "session": "s1",
                "role": "event",
                "kind": "task_blocked",
                "speaker": "deploy",
                "text": "Waiting for CI.",
            },
        ],
    )
    assert invoke("ingest", "--agent", "a", str(turns)).exit_code == 0
    recall = ["recall", "--agent", "a", "--session", "s1", "--turn", "t1", "--json"]
    first = json_of(invoke(*recall, "oolong tea"))
    again = json_of(invoke(*recall, "something else"))
    assert again["request_id"] == first["request_id"]
    assert again["memory_block"] == first["memory_block"]
    records = json_of(invoke("recalls", "--agent", "a", "--session", "s1", "--json"))
    (record,) = records["records"]
    assert (record["request_id"], record["turn_id"], record["status"]) == (
        first["request_id"],
        "t1",
        "ok",
    )
    assert record["manifest"]["selected_ids"] == first["manifest"]["selected_ids"]
    assert "t1" in invoke("recalls", "--agent", "a").stdout

    listed = json_of(invoke("attention", "--agent", "a", "--json"))
    (item,) = listed["items"]
    assert (item["kind"], item["event_id"], item["text"]) == (
        "task_blocked",
        "b1",
        "Waiting for CI.",
    )
    consumed = json_of(invoke("attention", "--agent", "a", "--consume", "--json"))
    assert consumed["consumed"] == 1
    assert json.loads(invoke("attention", "--agent", "a", "--json").stdout) == {
        "items": []
    }
    assert "nothing needs attention" in invoke("attention", "--agent", "a").stdout
