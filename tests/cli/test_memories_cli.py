"""``cairn memories list|show|edit``: the agent's memories listed with filters, one shown
with its sources and history, one edited as the user; recall then shows the new words."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import TURNS, Invoke, json_of, write_jsonl


def test_list_show_and_edit(invoke: Invoke, tmp_path: Path) -> None:
    turns = write_jsonl(tmp_path / "t.jsonl", TURNS)
    assert invoke("ingest", "--agent", "a", str(turns), "--json").exit_code == 0
    listed = json_of(invoke("memories", "list", "--agent", "a", "--json"))["memories"]
    assert listed
    (tea,) = json_of(
        invoke("memories", "list", "--agent", "a", "--text", "oolong", "--json")
    )["memories"]
    assert tea["lifecycle"] == "active"
    assert tea["source_refs"] == ["t1"]
    lines = invoke("memories", "list", "--agent", "a", "--text", "oolong").stdout
    assert tea["id"] in lines
    assert "active" in lines

    shown = invoke("memories", "show", "--agent", "a", tea["id"]).stdout
    assert "t1" in shown
    assert "I love oolong tea." in shown
    detail = json_of(invoke("memories", "show", "--agent", "a", tea["id"], "--json"))
    assert detail["memory"]["id"] == tea["id"]
    assert [e["state"] for e in detail["evidence"]] == ["present"]

    edited = invoke("memories", "edit", "--agent", "a", tea["id"], "I love green tea.")
    assert edited.exit_code == 0, edited.stderr
    assert "I love green tea." in edited.stdout
    history = json_of(invoke("memories", "show", "--agent", "a", tea["id"], "--json"))
    assert history["memory"]["lifecycle"] == "archived"
    assert [(e["relation"], e["other_role"]) for e in history["lineage"]] == [
        ("edit", "child")
    ]
    recall = json_of(invoke("recall", "--agent", "a", "--json", "What tea?"))
    texts = [item["text"] for item in recall["items"]]
    assert "I love green tea." in texts
    # Neither the old words nor the turn they came from (the assistant's own reply
    # is another turn, and stays).
    assert not [text for text in texts if "love oolong" in text.lower()], texts
    table = invoke("recall", "--agent", "a", "What tea?").stdout
    assert "degradations: none" in table
    # Trust words in their cell (wrapped at spaces on a narrow terminal).
    assert "remembered" in table


def test_errors_are_one_readable_line(invoke: Invoke) -> None:
    unknown = invoke("memories", "show", "--agent", "a", "nope")
    assert unknown.exit_code != 0
    assert "no claim 'nope'" in unknown.stderr
    bad = invoke("memories", "list", "--agent", "a", "--kind", "fax")
    assert bad.exit_code != 0
    assert "unknown memory kind 'fax'" in bad.stderr
    scope = invoke("memories", "list", "--agent", "a", "--scope", "planet:x")
    assert "is not a scope" in scope.stderr
    naive = invoke("memories", "list", "--agent", "a", "--since", "2026-01-01")
    assert "needs a UTC offset" in naive.stderr


def test_list_filters_on_the_caller_tags(invoke: Invoke, tmp_path: Path) -> None:
    tagged = [
        {**TURNS[0], "metadata": {"tags": ["drinks"]}},
        *TURNS[1:],
    ]
    turns = write_jsonl(tmp_path / "t.jsonl", tagged)
    assert invoke("ingest", "--agent", "a", str(turns), "--json").exit_code == 0
    every = json_of(invoke("memories", "list", "--agent", "a", "--json"))["memories"]
    assert len(every) > 1
    (tea,) = json_of(
        invoke(
            "memories",
            "list",
            "--agent",
            "a",
            "--tag",
            "drinks",
            "--tag",
            "x",
            "--json",
        )
    )["memories"]
    assert tea["source_refs"] == ["t1"]
    none = invoke("memories", "list", "--agent", "a", "--tag", "travel")
    assert "(no memory matches)" in none.stdout
