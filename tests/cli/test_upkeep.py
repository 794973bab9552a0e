"""``clear``, ``reindex`` and ``doctor`` on real data directories damaged on purpose."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import pytest
from tests.cli.conftest import TURNS, Invoke, json_of, write_jsonl
from tests.conftest import TEST_CONFIG
from typer.testing import CliRunner

from cairn.cli.app import CliContext
from cairn.cli.main import app
from cairn.testing import FixedDomainClock, HashingEmbedder
from cairn.vectors.manager import VectorStoreManager

QUESTIONS = ("oolong tea", "东京 会议", "where does Ana live", "nurse")


@pytest.fixture
def data(tmp_path: Path, invoke: Invoke) -> Path:
    turns = write_jsonl(tmp_path / "turns.jsonl", TURNS)
    assert invoke("ingest", "--agent", "a", str(turns), "--json").exit_code == 0
    assert invoke("ingest", "--agent", "b", str(turns), "--json").exit_code == 0
    return tmp_path / "data"


def sql(data: Path, statement: str, *params: object) -> list[tuple[object, ...]]:
    connection = apsw.Connection(str(data / "cairn.db"))
    try:
        with connection:
            return [tuple(row) for row in connection.execute(statement, params)]
    finally:
        connection.close()


def recalls(invoke: Invoke, agent: str = "a") -> list[Any]:
    return [
        json_of(invoke("recall", "--agent", agent, "--json", question))["items"]
        for question in QUESTIONS
    ]


def without_ids(results: list[Any]) -> list[Any]:
    """Items with their scores but not their IDs; claim IDs are random per agent and
    order claims of equal score, so each answer is compared as a sorted list."""
    return [
        sorted(
            (item["score"], item["kind"], item["text"], item["source_refs"])
            for item in items
        )
        for items in results
    ]


def projection(data: Path, agent: str) -> Path:
    manager = VectorStoreManager(data / "vectors")
    return manager.path_for(agent, HashingEmbedder().identity)


def test_clear_reports_what_was_and_was_not_removed(invoke: Invoke, data: Path) -> None:
    refused = invoke("clear", "--agent", "a")  # not a terminal and no --yes
    assert refused.exit_code == 2
    assert "--yes" in refused.stderr
    assert json_of(invoke("status", "--json"))["agents"]["a"]["claims"] > 0

    report = json_of(invoke("clear", "--agent", "a", "--yes", "--json"))
    before, after = report["before"], report["after"]
    assert report["agent"] == "a"
    assert report["claims_deleted"] == before["claims"] > 0
    assert after["claims"] == 0
    # The turns the claims were learned from go too, with their vectors.
    assert (before["events"], after["events"]) == (len(TURNS), 0)
    assert after["directives"] == before["directives"]
    assert "directives" in report["kept"]
    assert {"claims", "evidence"} <= set(report["removed"])
    assert after["embeddings"] == 0
    assert sql(data, "SELECT count(*) FROM embeddings WHERE agent_id = 'a'")[0][0] == 0
    other = json_of(invoke("status", "--json"))["agents"]["b"]
    assert other["claims"] == before["claims"]

    unknown = invoke("clear", "--agent", "nobody", "--yes")
    assert unknown.exit_code == 2
    assert "no agent" in unknown.stderr


def test_reindex_rebuilds_from_blobs_and_embeds_only_what_is_missing(
    tmp_path: Path, data: Path, invoke: Invoke
) -> None:
    expected = recalls(invoke)
    path = projection(data, "a")
    assert path.is_file()
    path.write_bytes(b"garbage")
    # Two event vectors lost, as if a crash hit between commit and embedding.
    lost = sql(
        data,
        "SELECT target_rowid FROM embeddings WHERE agent_id = 'a' AND target = 'event'"
        " ORDER BY target_rowid LIMIT 2",
    )
    sql(
        data,
        "DELETE FROM embeddings WHERE target = 'event' AND target_rowid IN (?, ?)",
        *(row[0] for row in lost),
    )
    stored = sql(data, "SELECT count(*) FROM embeddings WHERE agent_id = 'a'")[0][0]

    embedder = HashingEmbedder()
    context = CliContext(
        data_dir=data,
        config=TEST_CONFIG,
        clock=FixedDomainClock(),
        embedder=lambda: embedder,
    )
    result = CliRunner().invoke(
        app, ["reindex", "--agent", "a", "--json"], obj=context, catch_exceptions=False
    )
    assert result.exit_code == 0, result.stderr
    (report,) = json_of(result)["agents"]
    assert report["agent"] == "a"
    assert report["projection_file_dropped"] is True
    assert report["vectors_from_blobs"] == stored
    assert report["embedded"] == 2
    assert embedder.calls >= 1
    assert report["vectors_live"] == stored + 2 == report["embeddings_stored"]
    assert report["events_unembedded"] == 0
    assert recalls(invoke) == expected
    assert json_of(invoke("doctor", "--json"))["ok"] is True

    every = json_of(invoke("reindex", "--json"))["agents"]
    assert [entry["agent"] for entry in every] == ["a", "b"]
    assert all(entry["embedded"] == 0 for entry in every)
    assert invoke("reindex", "--agent", "nobody").exit_code == 2


def test_doctor_finds_damage_and_repair_restores_recall(
    data: Path, invoke: Invoke
) -> None:
    healthy = invoke("doctor", "--json")
    assert healthy.exit_code == 0, healthy.stdout
    report = json_of(healthy)
    assert report["ok"] is True
    assert report["sqlite_integrity"] == "ok"
    assert {e["agent"] for e in report["projections"]} == {"a", "b"}
    assert all(e["state"] == "ok" for e in report["projections"])
    expected = recalls(invoke)

    claim = sql(data, "SELECT min(rowid) FROM claims WHERE agent_id = 'a'")[0][0]
    sql(data, "DELETE FROM claim_fts WHERE rowid = ?", claim)
    sql(data, "INSERT INTO event_fts (rowid, body) VALUES (99999, 'ghost words')")
    sql(
        data,
        "INSERT INTO embeddings (identity_key, target, target_rowid, agent_id, vector)"
        " SELECT identity_key, 'claim', 88888, agent_id, vector FROM embeddings LIMIT 1",
    )
    projection(data, "b").write_bytes(b"not a vector file")
    found = invoke("doctor", "--json")
    assert found.exit_code == 1
    problems = " | ".join(json_of(found)["problems"])
    for expected_problem in (
        "claim_fts rows out of step",
        "event_fts rows out of step",
        "1 embeddings without target",
        "projection of b",
    ):
        assert expected_problem in problems
    by_agent = {e["agent"]: e for e in json_of(found)["projections"]}
    assert by_agent["b"]["state"] == "corrupt"

    repaired = invoke("doctor", "--repair", "--json")
    assert repaired.exit_code == 0, repaired.stdout
    result = json_of(repaired)
    assert result["ok"] is True
    assert result["found"]
    done = " | ".join(result["repairs"])
    assert "rebuilt claim_fts" in done
    assert "rebuilt event_fts" in done
    assert "deleted 1 vectors" in done
    assert "rebuilt projection of b" in done
    assert recalls(invoke) == expected
    # b's projection was rebuilt from blobs: it ranks exactly like a's (same turns).
    assert without_ids(recalls(invoke, "b")) == without_ids(recalls(invoke, "a"))
    assert list(projection(data, "b").parent.glob("*.quarantine-*"))  # kept to inspect


def test_doctor_repairs_a_damaged_fts_index_structure(
    data: Path, invoke: Invoke
) -> None:
    expected = recalls(invoke)
    sql(data, "DELETE FROM claim_fts_data WHERE id > 10")
    found = json_of(invoke("doctor", "--json"))
    assert found["fts"]["claim_fts"]["integrity"] != "ok"
    assert invoke("doctor", "--repair").exit_code == 0
    assert json_of(invoke("doctor", "--json"))["fts"]["claim_fts"]["integrity"] == "ok"
    assert recalls(invoke) == expected


def test_doctor_finishes_a_pending_clear_and_reports_what_it_cannot_repair(
    data: Path, invoke: Invoke
) -> None:
    cutoff = sql(data, "SELECT max(rowid) FROM claims WHERE agent_id = 'b'")[0][0]
    sql(
        data,
        "INSERT INTO clear_jobs (agent_id, rowid_cutoff, created_at, phase)"
        " VALUES ('b', ?, '2026-01-05T09:00:00+00:00', 'claims')",
        cutoff,
    )
    # Every open resumes an interrupted clear in the background, so a command may already
    # find it done; while it is pending, status and doctor show it.
    status = json_of(invoke("status", "--json"))
    phases = [job["phase"] for job in status["agents"]["b"]["clear_jobs_pending"]]
    assert phases in (["claims"], ["lineage"], ["vectors"], [])
    orphan = sql(data, "SELECT min(rowid) FROM claims WHERE agent_id = 'a'")[0][0]
    sql(data, "DELETE FROM claim_sources WHERE claim_rowid = ?", orphan)
    sql(
        data,
        "INSERT INTO clear_jobs (agent_id, rowid_cutoff, created_at, phase)"
        " SELECT 'b', ?, '2026-01-05T09:00:00+00:00', 'claims'"
        " WHERE NOT EXISTS (SELECT 1 FROM clear_jobs WHERE agent_id = 'b'"
        " AND phase <> 'done')",
        cutoff,
    )

    report = json_of(invoke("doctor", "--json"))
    assert [job["agent_id"] for job in report["clear_jobs_pending"]] in (["b"], [])
    assert report["orphans"]["extracted_claims_without_sources"] == 1

    sql(
        data,
        "INSERT INTO clear_jobs (agent_id, rowid_cutoff, created_at, phase)"
        " SELECT 'b', ?, '2026-01-05T09:00:00+00:00', 'claims'"
        " WHERE NOT EXISTS (SELECT 1 FROM clear_jobs WHERE agent_id = 'b'"
        " AND phase <> 'done')",
        cutoff,
    )
    repaired = invoke("doctor", "--repair", "--json")
    assert repaired.exit_code == 1  # the sourceless claim needs a person's decision
    result = json_of(repaired)
    if "finished the pending clear job of b" not in result["repairs"]:
        # The job finished while the runtime opened, before doctor looked.
        pending = sql(data, "SELECT count(*) FROM clear_jobs WHERE phase <> 'done'")
        assert pending[0][0] == 0
    assert result["clear_jobs_pending"] == []
    assert result["problems"] == ["1 extracted claims without sources"]
    assert json_of(invoke("status", "--json"))["agents"]["b"]["claims"] == 0


def test_doctor_reports_dead_letters_and_replay_clears_them(
    data: Path, invoke: Invoke
) -> None:
    # A batch that failed every attempt: its events wait, unextracted, for a replay.
    batch = sql(data, "SELECT min(batch_id) FROM event_batches WHERE agent_id = 'a'")
    batch_id = batch[0][0]
    sql(
        data,
        "UPDATE event_batches SET status = 'dead', receipt = NULL, committed_token = NULL,"
        " attempts = 5, last_error = 'TransientProviderError' WHERE batch_id = ?",
        batch_id,
    )
    sql(data, "UPDATE events SET extracted = 0 WHERE batch_id = ?", batch_id)
    (dead_events,) = sql(
        data, "SELECT count(*) FROM events WHERE batch_id = ?", batch_id
    )[0]
    found = invoke("doctor", "--json")
    assert found.exit_code == 1
    report = json_of(found)
    assert report["events_in_dead_letters"]["a"] == dead_events
    assert report["events_pending_extraction"]["a"] == 0
    assert any("cairn replay --agent a" in problem for problem in report["problems"])
    status = json_of(invoke("status", "--json"))["agents"]["a"]
    assert status["extraction_dead_letters"] == 1

    replayed = json_of(invoke("replay", "--agent", "a", "--json"))
    assert replayed == {"agent": "a", "replayed_batches": 1, "dead_letters": 0}
    assert json_of(invoke("doctor", "--json"))["ok"] is True
    assert sql(data, "SELECT count(*) FROM events WHERE extracted = 0")[0][0] == 0
