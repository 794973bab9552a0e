"""Operator reports are records whose JSON is the shape design/cli.md documents (keys in
order); a doctor report's problems follow from its checks, and ``found``/``repairs``
appear only after a repair."""

from __future__ import annotations

import json

from cairn.domain.ids import AgentId
from cairn.runtime.operator_reports import (
    DoctorReport,
    FtsCheck,
    ImportCounts,
    ImportRejection,
    ImportSummary,
    ProjectionCheck,
    ProjectionState,
    ReindexReport,
)
from cairn.store.clear_jobs import PendingClearJob
from cairn.store.integrity import FtsRowGaps, OrphanCounts
from cairn.testing import HashingEmbedder

A = AgentId("a")
IDENTITY = HashingEmbedder().identity


def _doctor(
    state: ProjectionState = ProjectionState.OK, gaps: int = 0, jobs: int = 0
) -> DoctorReport:
    return DoctorReport(
        data_dir="/data",
        sqlite_integrity="ok",
        fts={
            "claim_fts": FtsCheck.of(None, FtsRowGaps(0, 0, ())),
            "event_fts": FtsCheck.of(None, FtsRowGaps(gaps, 0, tuple(range(gaps)))),
        },
        orphans=OrphanCounts(0, 0, gaps),
        projections=(
            ProjectionCheck(A, IDENTITY.key(), IDENTITY, True, 4, state, 4, 0, 0),
        ),
        events_unembedded={A: 0},
        events_pending_extraction={A: 0},
        events_in_dead_letters={A: 0},
        clear_jobs_pending=tuple(
            PendingClearJob(job, A, "claims", 0, "2026-01-01T00:00:00+00:00")
            for job in range(1, jobs + 1)
        ),
    )


def test_doctor_json_has_the_documented_keys_in_order() -> None:
    data = json.loads(json.dumps(_doctor().as_json()))
    assert list(data) == [
        "data_dir",
        "sqlite_integrity",
        "fts",
        "orphans",
        "projections",
        "events_unembedded",
        "events_pending_extraction",
        "events_in_dead_letters",
        "clear_jobs_pending",
        "problems",
        "ok",
    ]
    assert list(data["fts"]["event_fts"]) == [
        "integrity",
        "rows_without_owner",
        "owners_without_row",
        "sample_rowids",
    ]
    assert data["projections"][0]["identity"] == IDENTITY.as_dict()
    assert data["projections"][0]["state"] == "ok"
    assert data["problems"] == []
    assert data["ok"] is True


def test_problems_follow_from_the_checks() -> None:
    report = _doctor(ProjectionState.STALE, gaps=2, jobs=1)
    assert report.problems == (
        "event_fts rows out of step with their table",
        "2 embeddings without target",
        f"projection of a ({IDENTITY.key()}): stale",
        "clear job 1 of a is pending",
    )
    assert report.ok is False
    assert _doctor(ProjectionState.EMPTY).ok is True


def test_found_and_repairs_appear_only_after_a_repair() -> None:
    found = _doctor(ProjectionState.MISSING)
    repaired = _doctor().after_repair(found, ["rebuilt projection"])
    data = repaired.as_json()
    assert list(data)[-4:] == ["problems", "ok", "found", "repairs"]
    assert data["found"] == [f"projection of a ({IDENTITY.key()}): missing"]
    assert data["repairs"] == ["rebuilt projection"]
    assert "found" not in found.as_json()


def test_reindex_and_import_json_shapes() -> None:
    reindex = ReindexReport(A, IDENTITY, True, 4, 0, 0, 4, 4, 0).as_json()
    assert reindex == {
        "agent": "a",
        "identity": IDENTITY.as_dict(),
        "projection_file_dropped": True,
        "vectors_from_blobs": 4,
        "embedded": 0,
        "embedding_failures": 0,
        "vectors_live": 4,
        "embeddings_stored": 4,
        "events_unembedded": 0,
    }
    summary = ImportSummary(
        (A,), {"event": ImportCounts(3, 1)}, (ImportRejection(2, "?", "not JSON"),)
    )
    assert summary.as_json() == {
        "agents": ["a"],
        "records": {"event": {"imported": 3, "duplicate": 1, "suppressed": 0}},
        "rejected": [{"line": 2, "type": "?", "reason": "not JSON"}],
        "directives_drafted": {},
        "directive_times_clamped": 0,
    }
