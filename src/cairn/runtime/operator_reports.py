"""What operator upkeep and transfer report: reindex, doctor, export and import.

Frozen records with documented fields (``cairn.runtime.upkeep``, ``cairn.runtime.transfer``
build them). ``as_json()`` is the documented JSON shape (design/cli.md), which the CLI
prints as is; field names are the JSON keys, in the same order.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Literal, cast

import attrs

from cairn.domain.ids import AgentId
from cairn.store.clear_jobs import PendingClearJob
from cairn.store.integrity import FtsTable, OrphanCounts
from cairn.vectors.identity import EmbeddingIdentity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.store.integrity import FtsRowGaps

__all__ = [
    "DoctorReport",
    "ExportSummary",
    "FtsCheck",
    "ImportCounts",
    "ImportRejection",
    "ImportSummary",
    "ProjectionCheck",
    "ProjectionState",
    "ReindexReport",
]


def _plain(value: object) -> object:
    if attrs.has(type(value)):
        return {
            field.name: _plain(item)
            for field in attrs.fields(cast("type[attrs.AttrsInstance]", type(value)))
            if not (
                (item := getattr(value, field.name)) is None
                and field.metadata.get("omit_none", False)
            )
        }
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value


def _json(record: attrs.AttrsInstance) -> dict[str, Any]:
    """Fields by name, in order; nested records as objects, tuples as lists; ``None`` of
    an optional part (``metadata={"omit_none": True}``) left out."""
    plain = _plain(record)
    assert isinstance(plain, dict)  # noqa: S101 - a record is an object
    return plain


@attrs.frozen
class ReindexReport:
    """One agent's reindex: the projection file of the active identity dropped, the
    projection rebuilt from stored blobs, and what had no vector embedded."""

    agent: AgentId
    identity: EmbeddingIdentity
    projection_file_dropped: bool
    """False when there was no file to drop."""
    vectors_from_blobs: int
    """Stored vectors the projection was rebuilt from (no provider call)."""
    embedded: int
    embedding_failures: int
    vectors_live: int
    """Vectors in the agent's projection afterwards."""
    embeddings_stored: int
    events_unembedded: int
    """Events still without a vector of the identity."""

    def as_json(self) -> dict[str, Any]:
        return _json(self)


class ProjectionState(enum.StrEnum):
    """A projection file compared, read-only, with the stored blobs it projects."""

    OK = "ok"
    EMPTY = "empty"
    """No file and no blobs."""
    MISSING = "missing"
    STALE = "stale"
    """Its keys differ from the blobs'."""
    CORRUPT = "corrupt"
    IDENTITY_MISMATCH = "identity_mismatch"
    NOT_SERVING = "not_serving"
    """Blobs of an identity that does not serve, and no file: none is kept for it."""
    KEPT_NOT_SERVING = "kept_not_serving"
    """A file of an identity that does not serve (deleted when its agent next starts)."""

    @property
    def healthy(self) -> bool:
        """Nothing to rebuild."""
        return self in {
            ProjectionState.OK,
            ProjectionState.EMPTY,
            ProjectionState.NOT_SERVING,
        }


@attrs.frozen
class ProjectionCheck:
    agent: AgentId
    identity_key: str
    identity: EmbeddingIdentity
    active: bool
    """Of the embedding identity the runtime serves."""
    embeddings: int
    """Stored blobs of the agent and identity."""
    state: ProjectionState
    vectors: int
    """Vectors in the file (0 when it could not be read)."""
    missing_from_projection: int
    extra_in_projection: int


@attrs.frozen
class FtsCheck:
    """FTS5's own ``integrity-check`` of a table, and its rows against their owners."""

    integrity: str
    """``"ok"``, or the error the check raised."""
    rows_without_owner: int
    owners_without_row: int
    sample_rowids: tuple[int, ...]

    @classmethod
    def of(cls, error: str | None, gaps: FtsRowGaps) -> FtsCheck:
        return cls(
            error or "ok",
            gaps.rows_without_owner,
            gaps.owners_without_row,
            gaps.sample_rowids,
        )

    @property
    def failed(self) -> bool:
        return self.integrity != "ok"

    @property
    def out_of_step(self) -> bool:
        return bool(self.rows_without_owner or self.owners_without_row)


def _problems(report: DoctorReport) -> tuple[str, ...]:
    problems = []
    if report.sqlite_integrity != "ok":
        problems.append("sqlite integrity_check failed")
    for table, entry in report.fts.items():
        if entry.failed:
            problems.append(f"{table} integrity-check failed")
        if entry.out_of_step:
            problems.append(f"{table} rows out of step with their table")
    for name, count in report.orphans.counts().items():
        if count:
            problems.append(f"{count} {name.replace('_', ' ')}")
    problems.extend(
        f"projection of {entry.agent} ({entry.identity_key}): {entry.state}"
        for entry in report.projections
        if not entry.state.healthy
    )
    for agent, count in report.events_unembedded.items():
        if count:
            problems.append(f"{count} events of {agent} have no vector")
    for agent, count in report.events_pending_extraction.items():
        if count:
            problems.append(f"{count} events of {agent} wait for extraction")
    for agent, count in report.events_in_dead_letters.items():
        if count:
            problems.append(
                f"{count} events of {agent} are in dead extraction batches"
                f" (cairn replay --agent {agent})"
            )
    problems.extend(
        f"clear job {job.job_id} of {job.agent_id} is pending"
        for job in report.clear_jobs_pending
    )
    return tuple(problems)


@attrs.frozen
class DoctorReport:
    """Every integrity check of a data directory; ``problems`` and ``ok`` follow from the
    rest. After a repair, ``found`` is the problems before and ``repairs`` what was done
    (both ``None``, and left out of the JSON, otherwise)."""

    data_dir: str
    sqlite_integrity: Literal["ok"] | tuple[str, ...]
    """``"ok"``, or what ``PRAGMA integrity_check`` listed."""
    fts: dict[FtsTable, FtsCheck]
    orphans: OrphanCounts
    projections: tuple[ProjectionCheck, ...]
    events_unembedded: dict[AgentId, int]
    events_pending_extraction: dict[AgentId, int]
    events_in_dead_letters: dict[AgentId, int]
    clear_jobs_pending: tuple[PendingClearJob, ...]
    problems: tuple[str, ...] = attrs.field(init=False)
    ok: bool = attrs.field(init=False)
    found: tuple[str, ...] | None = attrs.field(
        default=None, metadata={"omit_none": True}
    )
    repairs: tuple[str, ...] | None = attrs.field(
        default=None, metadata={"omit_none": True}
    )

    @problems.default
    def _problems_default(self) -> tuple[str, ...]:
        return _problems(self)

    @ok.default
    def _ok_default(self) -> bool:
        return not self.problems

    def after_repair(self, found: DoctorReport, repairs: Sequence[str]) -> DoctorReport:
        """This report (of the state after a repair) with what was found and done."""
        return attrs.evolve(self, found=found.problems, repairs=tuple(repairs))

    def as_json(self) -> dict[str, Any]:
        return _json(self)


@attrs.frozen
class ExportSummary:
    agents: tuple[AgentId, ...]
    records: dict[str, int]
    """Records written, by type."""

    def as_json(self) -> dict[str, Any]:
        return _json(self)


@attrs.frozen
class ImportCounts:
    imported: int
    duplicate: int
    """Already stored with the same content."""
    suppressed: int = 0
    """Forgotten or cleared before: a tombstone keeps the record out."""


@attrs.frozen
class ImportRejection:
    line: int
    type: str
    """The record's type, ``"?"`` when the line is not a record."""
    reason: str | None


@attrs.frozen
class ImportSummary:
    agents: tuple[AgentId, ...]
    """Agents that received records (each started and waited on)."""
    records: dict[str, ImportCounts]
    """By record type."""
    rejected: tuple[ImportRejection, ...]
    directives_drafted: dict[AgentId, int] = attrs.field(factory=dict)
    """Per agent, directives the file records as active that arrived as drafts: each does
    nothing until the user approves it (an import with ``directives=active`` keeps them
    active)."""
    directive_times_clamped: int = 0
    """Directives whose ``created_at`` or ``updated_at`` lay after now, stored as now."""

    def as_json(self) -> dict[str, Any]:
        return _json(self)
