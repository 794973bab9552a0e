"""``export`` and ``import``: an exact round trip, idempotent re-import, and every record
validated like a normal write."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw
import pytest
import trio
from tests.cli.conftest import TURNS, Invoke, json_of, write_jsonl
from tests.conftest import TEST_CONFIG
from tests.helpers import BASE_TIME

from cairn import Turn, open_memory
from cairn.testing import FixedDomainClock, HashingEmbedder

QUESTIONS = (
    "oolong tea",
    "东京 会议",
    "where does Ana live",
    "nurse",
    "Porto",
    "what language",
)


def seed(data: Path) -> None:
    """Two agents with claims, supersession lineage, a directive, a pending-free clear
    (tombstones) and one turn given without a time."""

    async def main() -> None:
        async with open_memory(
            data, TEST_CONFIG, clock=FixedDomainClock(), embedder=HashingEmbedder()
        ) as memory:
            for agent in ("a", "c"):
                await memory.ingest(
                    agent,
                    [
                        Turn(
                            t["id"],
                            t["session"],
                            t["role"],
                            t["text"],
                            None
                            if "at" not in t
                            else dt.datetime.fromisoformat(t["at"]),
                            t.get("speaker"),
                        )
                        for t in TURNS
                    ],
                )
                await memory.wait_idle(agent)
            later = BASE_TIME + dt.timedelta(days=40)
            await memory.ingest(
                "a",
                [Turn("t5", "s3", "user", "I moved to Porto.", later, "Ana")],
            )
            await memory.wait_idle("a")
            await memory.add_directive("a", "Answer in French.")
            await memory.clear("c")

    trio.run(main)


def sql(data: Path, statement: str) -> list[tuple[Any, ...]]:
    connection = apsw.Connection(str(data / "cairn.db"))
    try:
        return [tuple(row) for row in connection.execute(statement)]
    finally:
        connection.close()


def recalls(invoke: Invoke, data: Path, agent: str = "a") -> list[Any]:
    """Whole recall results but the per-call request ID."""
    results = []
    for question in QUESTIONS:
        result = json_of(
            invoke("recall", "--agent", agent, "--json", question, data=data)
        )
        assert result.pop("request_id")
        results.append(result)
    return results


def test_round_trip_is_byte_identical_and_recalls_the_same(
    tmp_path: Path, invoke: Invoke
) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    seed(source)
    # The fixture really has what the format must carry.
    assert sql(source, "SELECT count(*) FROM derivations")[0][0] >= 1
    assert sql(source, "SELECT count(*) FROM tombstones WHERE agent_id = 'c'")[0][0] > 0
    assert sql(source, "SELECT count(*) FROM claims WHERE lifecycle = 'superseded'")

    first = tmp_path / "first.jsonl"
    summary = json_of(invoke("export", str(first), "--json", data=source))
    assert summary["agents"] == ["a", "c"]
    assert set(summary["records"]) == {
        "event",
        "claim",
        "derivation",
        "directive",
        "tombstone",
        "evidence_tombstone",
    }
    lines = first.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {
        "type": "header",
        "format": "cairn-export",
        "version": 1,
    }
    records = [json.loads(line) for line in lines[1:]]
    t2 = next(r for r in records if r["type"] == "event" and r["id"] == "t2")
    assert t2["at"] is None  # given without a time: the export says so
    assert all(r["agent"] != "c" for r in records if r["type"] == "claim")

    # The operator restores their own export, so its directive stays active
    # (--directives=active): the round trip is byte-identical. The default brings
    # directives in as drafts (tests/cli/test_import_directives.py).
    imported = invoke(
        "import", str(first), "--directives=active", "--json", data=target
    )
    assert imported.exit_code == 0, imported.stdout + imported.stderr
    report = json_of(imported)
    assert report["rejected"] == []
    assert all(entry["duplicate"] == 0 for entry in report["records"].values())
    assert report["records"]["claim"]["imported"] == summary["records"]["claim"]

    second = tmp_path / "second.jsonl"
    invoke("export", str(second), "--json", data=target)
    assert second.read_bytes() == first.read_bytes()
    assert recalls(invoke, target) == recalls(invoke, source)
    # Entities and the relations claims state are derived again on import, the same.
    # (Entity IDs are the data directory's own: an import numbers them anew.)
    entities = [
        [
            {key: value for key, value in entity.items() if key != "entity_id"}
            for entity in json_of(invoke("entities", "--agent", "a", "--json", data=d))[
                "entities"
            ]
        ]
        for d in (source, target)
    ]
    assert any(entity["relations"] for entity in entities[0])
    assert entities[1] == entities[0]
    status = [
        json_of(invoke("status", "--json", data=d))["agents"] for d in (source, target)
    ]
    for agent in ("a", "c"):
        for count in ("events", "claims", "directives", "embeddings"):
            assert status[0][agent][count] == status[1][agent][count], (agent, count)
    # Cleared memories stay cleared: the evidence is imported as already extracted.
    assert status[1]["c"]["claims"] == 0
    assert json_of(invoke("doctor", "--json", data=target))["ok"] is True

    again = json_of(invoke("import", str(first), "--json", data=target))
    # Re-imported by default, the directory's own active directive is a duplicate.
    assert again["records"]["directive"] == {
        "imported": 0,
        "duplicate": 1,
        "suppressed": 0,
    }
    assert again["directives_drafted"] == {}
    assert all(entry["imported"] == 0 for entry in again["records"].values())
    third = tmp_path / "third.jsonl"
    invoke("export", str(third), data=target)
    assert third.read_bytes() == first.read_bytes()


def test_export_of_one_agent_and_to_stdout(tmp_path: Path, invoke: Invoke) -> None:
    source = tmp_path / "source"
    seed(source)
    result = invoke("export", "-", "--agent", "c", data=source)
    assert result.exit_code == 0
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records[0]["type"] == "header"
    assert {r["agent"] for r in records[1:]} == {"c"}
    assert invoke("export", "-", "--agent", "zz", data=source).exit_code == 2
    missing_dir = invoke("export", str(tmp_path / "no" / "x.jsonl"), data=source)
    assert missing_dir.exit_code == 2


def _export_lines(tmp_path: Path, invoke: Invoke) -> list[dict[str, Any]]:
    source = tmp_path / "source"
    seed(source)
    path = tmp_path / "export.jsonl"
    invoke("export", str(path), data=source)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_import_validates_each_record_like_a_normal_write(
    tmp_path: Path, invoke: Invoke
) -> None:
    lines = _export_lines(tmp_path, invoke)
    header, records = lines[0], lines[1:]
    claim = next(r for r in records if r["type"] == "claim" and r["sources"])
    event = next(r for r in records if r["type"] == "event")
    bad: list[Any] = [
        header,
        *records,
        "{not json",
        {"type": "memo", "agent": "a"},
        {**event, "text": "something else entirely"},  # same ID, other content
        {**event, "id": "new-1", "role": "system"},
        {**event, "id": "new-2", "agent": "../escape"},
        {
            **claim,
            "id": "x1",
            "provenance_key": "f" * 64,
            "sources": [{"event": "nope", "start": 0, "end": 3}],
        },
        {
            **claim,
            "id": "x2",
            "provenance_key": "e" * 64,
            "sources": [
                {"event": claim["sources"][0]["event"], "start": 0, "end": 10_000}
            ],
        },
        {**claim, "id": "x3", "provenance_key": "d" * 64, "confidence": 7},
        {**claim, "id": "x4", "provenance_key": "c" * 64, "kind": "gossip"},
        {**claim, "text": "edited"},  # same claim ID, other content
        {
            "type": "directive",
            "agent": "a",
            "id": "d9",
            "kind": "shout",
            "text": "x",
            "status": "active",
            "created_at": "2026-01-01T00:00:00+00:00",
            "updated_at": "2026-01-01T00:00:00+00:00",
        },
    ]
    path = write_jsonl(tmp_path / "bad.jsonl", bad)
    target = tmp_path / "target"
    result = invoke("import", str(path), "--directives=active", "--json", data=target)
    assert result.exit_code == 3
    report = json_of(result)
    rejected = {r["line"]: r["reason"] for r in report["rejected"]}
    first_bad = len(records) + 2
    assert sorted(rejected) == list(range(first_bad, first_bad + 11))
    reasons = " | ".join(rejected.values())
    for expected in (
        "not a JSON line",
        "unknown record type",
        "different content",
        "'system'",
        "agent id",
        "cites events not stored: nope",
        "does not validate against its evidence",
        "confidence",
        "'gossip'",
        "claim id already stored with different content",
        "unknown directive kind",
    ):
        assert expected in reasons, expected
    # Everything valid went in, and nothing of the rejected lines did.
    clean = tmp_path / "clean.jsonl"
    invoke("export", str(clean), data=target)
    assert [
        json.loads(x) for x in clean.read_text(encoding="utf-8").splitlines()
    ] == lines


def test_a_file_that_is_not_an_export_changes_nothing(
    tmp_path: Path, invoke: Invoke
) -> None:
    target = tmp_path / "target"
    turns = write_jsonl(tmp_path / "turns.jsonl", TURNS)
    no_header = invoke("import", str(turns), data=target)
    assert no_header.exit_code == 2
    assert "not a cairn-export file" in no_header.stderr
    future = write_jsonl(
        tmp_path / "future.jsonl",
        [{"type": "header", "format": "cairn-export", "version": 99}],
    )
    later = invoke("import", str(future), data=target)
    assert later.exit_code == 2
    assert "version 99" in later.stderr
    assert invoke("import", str(tmp_path / "missing"), data=target).exit_code == 2
    assert json_of(invoke("status", "--json", data=target))["agents"] == {}


def test_a_tombstone_in_the_target_refuses_the_forgotten_claim(
    tmp_path: Path, invoke: Invoke
) -> None:
    lines = _export_lines(tmp_path, invoke)
    claims = [r for r in lines if r.get("type") == "claim"]
    target = tmp_path / "target"
    events = [r for r in lines if r.get("type") == "event" and r["agent"] == "a"]
    connection_setup = write_jsonl(tmp_path / "events.jsonl", [lines[0], *events])
    assert invoke("import", str(connection_setup), data=target).exit_code == 0
    from cairn.domain.scope import Scope, ScopeKind
    from cairn.store.tombstones import content_hash

    scope = Scope(ScopeKind(claims[0]["scope"]), claims[0]["scope_key"])
    tombstone = {
        "type": "tombstone",
        "agent": "a",
        "provenance_hash": "0" * 64,
        "content_hash": content_hash("a", scope, claims[0]["text"]),
        "created_at": "2026-01-05T09:00:00+00:00",
    }
    path = write_jsonl(tmp_path / "claims.jsonl", [lines[0], tombstone, claims[0]])
    report = json_of(invoke("import", str(path), "--json", data=target))
    assert report["rejected"] == []
    assert report["records"]["claim"] == {
        "imported": 0,
        "duplicate": 0,
        "suppressed": 1,
    }


@pytest.mark.subprocess
def test_exit_codes_of_a_real_process(tmp_path: Path) -> None:
    def cairn(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cairn", "--data", str(tmp_path / "d"), *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    export = tmp_path / "e.jsonl"
    ok = cairn("export", str(export), "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["records"] == {}
    assert cairn("import", str(export)).returncode == 0
    bad = write_jsonl(
        tmp_path / "bad.jsonl",
        [json.loads(export.read_text(encoding="utf-8")), "{oops"],
    )
    partly = cairn("import", str(bad), "--json")
    assert partly.returncode == 3
    assert json.loads(partly.stdout)["rejected"][0]["line"] == 2
    assert cairn("import", str(tmp_path / "missing.jsonl")).returncode == 2
    assert cairn("clear", "--agent", "a").returncode == 2  # no --yes, not a terminal
    assert cairn("doctor", "--json").returncode == 0
    assert cairn("no-such-command").returncode == 2


def test_progress_only_on_a_terminal_and_never_with_json(
    tmp_path: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "source"
    seed(source)
    monkeypatch.setattr("cairn.cli.progress._is_terminal", lambda: True)
    path = tmp_path / "e.jsonl"
    shown = invoke("export", str(path), data=source)
    assert "export" in shown.stderr
    assert "import e.jsonl" in invoke("import", str(path), data=tmp_path / "t1").stderr
    assert "reindex a" in invoke("reindex", data=source).stderr
    for args in (
        ("export", str(tmp_path / "f.jsonl"), "--json"),
        ("import", str(path), "--json"),
        ("reindex", "--json"),
    ):
        quiet = invoke(*args, data=tmp_path / "t2")
        assert quiet.stderr == "", args
        json_of(quiet)


def test_an_interrupted_import_completes_when_run_again(
    tmp_path: Path, invoke: Invoke
) -> None:
    lines = _export_lines(tmp_path, invoke)
    full = tmp_path / "export.jsonl"
    # What a crash leaves: the batches committed so far (here, a prefix of the file).
    prefix = write_jsonl(tmp_path / "prefix.jsonl", lines[: len(lines) // 2])
    target = tmp_path / "target"
    restore = ("--directives=active", "--json")
    assert invoke("import", str(prefix), *restore, data=target).exit_code == 0
    report = json_of(invoke("import", str(full), *restore, data=target))
    assert report["rejected"] == []
    assert (
        sum(e["duplicate"] for e in report["records"].values()) == len(lines) // 2 - 1
    )
    again = tmp_path / "again.jsonl"
    invoke("export", str(again), data=target)
    assert again.read_bytes() == full.read_bytes()
