"""Export and import of memory as JSON lines (cairn.store.export), over the runtime.

Export settles each agent first (accepted turns extracted and embedded) and then writes
every record from one read snapshot. Import writes batches of records through
``Database.write``, each record in its own savepoint so a bad one is rejected alone, then
starts each imported agent and waits until it is idle: its warm-up embeds everything
imported (vectors are never exported) and extraction runs for evidence that was not yet
extracted at export time.
"""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING, Final, TextIO

import trio

from cairn.domain.ids import validate_agent_id
from cairn.domain.outcomes import IntakeOutcome
from cairn.errors import InvalidInputError
from cairn.ingestion.screen import redact_record
from cairn.ingestion.validate import validate_drafts
from cairn.runtime.core import runtime_core
from cairn.runtime.operator_reports import (
    ExportSummary,
    ImportCounts,
    ImportRejection,
    ImportSummary,
)
from cairn.runtime.threads import run_in_thread
from cairn.runtime.upkeep import known_agents
from cairn.runtime.writes import ImportRecords
from cairn.store.export import (
    FORMAT,
    FORMAT_VERSION,
    encode_line,
    header,
    iter_export,
)
from cairn.store.import_records import import_record

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path

    import apsw

    from cairn.domain.claim import ClaimDraft
    from cairn.domain.evidence import EvidenceEvent
    from cairn.domain.ids import AgentId
    from cairn.runtime.memory import Memory

__all__ = ["export_memory", "import_memory"]

_IMPORT_BATCH = 256


async def export_memory(
    memory: Memory,
    sink: TextIO,
    agent_id: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> ExportSummary:
    """Write the export of one agent (or every agent) to ``sink``; returns counts by type."""
    agents = await known_agents(memory, agent_id)
    for agent in agents:
        await memory.wait_idle(agent)

    def write(connection: apsw.Connection) -> dict[str, int]:
        counts: dict[str, int] = {}
        sink.write(encode_line(header()))
        for record in iter_export(connection, agents):
            sink.write(encode_line(record))
            counts[record["type"]] = counts.get(record["type"], 0) + 1
            if progress is not None:
                progress(1)
        sink.flush()
        return counts

    counts = await runtime_core(memory).database.read(
        lambda reader: write(reader.connection)
    )
    return ExportSummary(tuple(agents), counts)


def _check_header(number: int, record: object) -> None:
    if not (
        isinstance(record, dict)
        and record.get("type") == "header"
        and record.get("format") == FORMAT
    ):
        raise InvalidInputError(f"line {number}: not a {FORMAT} file (no header line)")
    if record.get("version") != FORMAT_VERSION:
        raise InvalidInputError(
            f"line {number}: {FORMAT} version {record.get('version')!r} is not"
            f" supported (this cairn reads version {FORMAT_VERSION})"
        )


def _parsed_lines(path: Path) -> Iterator[tuple[int, int, object]]:
    """``(line number, size in bytes, record or error message)`` per non-blank line."""
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                yield number, len(raw), json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                yield number, len(raw), InvalidInputError(f"not a JSON line: {error}")


_COUNTED_AS: Final = {
    IntakeOutcome.INGESTED: "imported",
    IntakeOutcome.SUPPRESSED: "suppressed",
}


def _accept_claim(draft: ClaimDraft, events: Sequence[EvidenceEvent]) -> bool:
    # The rule every extracted draft passes before commit (cairn.ingestion.validate).
    return bool(validate_drafts([draft], events))


_Result = tuple[int, IntakeOutcome, "AgentId | None", "str | None", str]


def _kind(record: object) -> str:
    return str(record.get("type")) if isinstance(record, dict) else "?"


def _import_records(
    connection: apsw.Connection,
    agent: AgentId,
    records: Sequence[tuple[int, object]],
    now: dt.datetime,
) -> list[_Result]:
    """One agent's records, each in its own savepoint: a rejected record leaves no trace."""
    results: list[_Result] = []
    for number, record in records:
        try:
            with connection:
                outcome = import_record(connection, record, now, _accept_claim)
        except InvalidInputError as error:
            results.append(
                (number, IntakeOutcome.REJECTED, None, str(error), _kind(record))
            )
            continue
        results.append(
            (number, outcome.outcome, outcome.agent, outcome.reason, _kind(record))
        )
    return results


def _route(
    batch: list[tuple[int, object]],
) -> tuple[list[_Result], dict[str, list[tuple[int, object]]]]:
    """Results for lines that need no write (bad lines, headers), and the others
    grouped by the agent whose coordinator must write them."""
    results: list[_Result] = []
    by_agent: dict[str, list[tuple[int, object]]] = {}
    for number, record in batch:
        kind = _kind(record)
        if isinstance(record, InvalidInputError):
            results.append((number, IntakeOutcome.REJECTED, None, str(record), kind))
            continue
        if isinstance(record, dict) and record.get("type") == "header":
            try:
                _check_header(number, record)
            except InvalidInputError as error:
                results.append((number, IntakeOutcome.REJECTED, None, str(error), kind))
            else:
                results.append((number, IntakeOutcome.DUPLICATE, None, None, kind))
            continue
        agent = record.get("agent") if isinstance(record, dict) else None
        if not isinstance(agent, str):
            reason = "field 'agent' must be a string"
            results.append((number, IntakeOutcome.REJECTED, None, reason, kind))
            continue
        try:
            validate_agent_id(agent)
            # No secret comes back in through an import (cairn.ingestion.screen).
            screened = redact_record(record) if isinstance(record, dict) else record
        except ValueError as error:
            results.append((number, IntakeOutcome.REJECTED, None, str(error), kind))
            continue
        by_agent.setdefault(str(agent), []).append((number, screened))
    return results, by_agent


async def import_memory(
    memory: Memory, path: Path, progress: Callable[[int], None] | None = None
) -> ImportSummary:
    """Import an export file; returns counts by type and the rejected lines.

    A file without a valid header line raises InvalidInputError before anything is
    written. Each agent's records are written by that agent's coordinator; what they
    bring without vectors is embedded in the background (``wait_idle`` waits for it).
    """
    files = trio.CapacityLimiter(1)
    lines = _parsed_lines(path)
    first = await run_in_thread(lambda: next(lines, None), limiter=files)
    if first is None:
        raise InvalidInputError(f"{path} is empty")
    _check_header(first[0], first[2])
    if progress is not None:
        progress(first[1])
    counts: dict[str, dict[str, int]] = {}
    rejected: list[ImportRejection] = []
    agents: dict[AgentId, None] = {}
    core = runtime_core(memory)
    while chunk := await run_in_thread(
        lambda: list(itertools.islice(lines, _IMPORT_BATCH)), limiter=files
    ):
        results, by_agent = _route([(number, record) for number, _, record in chunk])
        for agent_id, records in by_agent.items():
            # Each agent's records through its own coordinator, like any other write.
            async with core.admission.write(agent_id) as supervisor:
                written: list[_Result] = await supervisor.commit(
                    ImportRecords(tuple(records), _import_records)
                )
                results += written
                supervisor.embed_backlog()
        results.sort(key=lambda result: result[0])
        for number, outcome, agent, reason, kind in results:
            if outcome is IntakeOutcome.REJECTED:
                rejected.append(ImportRejection(number, kind, reason))
                continue
            if kind == "header":
                continue
            if agent is not None:
                agents[agent] = None
            entry = counts.setdefault(
                kind, {"imported": 0, "duplicate": 0, "suppressed": 0}
            )
            entry[_COUNTED_AS.get(outcome, "duplicate")] += 1
        if progress is not None:
            progress(sum(size for _, size, _ in chunk))
    for agent in agents:
        await memory.wait_idle(agent)
    return ImportSummary(
        tuple(agents),
        {kind: ImportCounts(**entry) for kind, entry in counts.items()},
        tuple(rejected),
    )
