"""The checks run against a settled runtime and its data directory: what recall and export
show against what the history says (I1, I2, I3, and I9 for replaced values), stored
vectors against their identity (I4), receipts (I5), integrity (I6) and the files
themselves (I7)."""

from __future__ import annotations

import functools
import io
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from cairn.domain.ids import AgentId
from cairn.runtime.core import runtime_core
from cairn.runtime.threads import run_in_thread
from cairn.runtime.transfer import export_memory
from cairn.runtime.upkeep import check, known_agents
from cairn.store.evidence import load_events
from cairn.stress.embedders import embedders_by_key
from cairn.stress.markers import holds_marker, marker_tail
from cairn.vectors.codec import decode_vector

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from cairn.api.protocol import MemoryApi
    from cairn.runtime.memory import Memory
    from cairn.stress.execute import Executor
    from cairn.stress.model import Expectations

__all__ = [
    "Finding",
    "check_answers",
    "check_directory",
    "check_files",
    "files_holding",
]

_TAIL = re.compile(rb"[a-z]{6}")
_WORD_END = re.compile(rb"[a-z]{6}(?![a-z])")

Finding = tuple[str, str]
"""(invariant, what was found)."""


async def check_answers(
    api: MemoryApi,
    expected: Expectations,
    executor: Executor,
    *,
    wait_s: float,
    directives: bool = True,
) -> list[Finding]:
    """Recall every decided marker: the live ones must come back (a replaced value not
    as current), the gone ones never; and every answer is scanned for other agents'
    markers (through the executor)."""
    findings: list[Finding] = []
    agents = set(expected.live) | set(expected.gone) | set(expected.directives)
    for agent in sorted(agents):
        replaced = expected.history.get(agent, {})
        for marker in sorted(expected.live.get(agent, ())):
            recall = await api.recall(agent, marker, wait_s=wait_s)
            executor.scan_recall(agent, recall)
            if not _shows(recall, marker):
                findings.append(
                    (
                        "I1",
                        f"{agent}: acknowledged {marker} is not recalled ({recall.status})",
                    )
                )
            elif marker in replaced and _current(recall, marker):
                newer = replaced[marker]
                message = f"{agent}: {marker} is current after {newer} replaced it"
                findings.append(("I9", message))
        for marker in sorted(expected.gone.get(agent, ())):
            recall = await api.recall(agent, marker, wait_s=wait_s)
            executor.scan_recall(agent, recall)
            if _shows(recall, marker):
                findings.append(("I2", f"{agent}: {marker} is recalled after it went"))
        wanted = expected.directives.get(agent, set()) if directives else set()
        if wanted:
            recall = await api.recall(agent, "hello", wait_s=wait_s)
            executor.scan_recall(agent, recall)
            findings.extend(
                ("I1", f"{agent}: directive {marker} is not in the directive block")
                for marker in sorted(wanted)
                if marker not in recall.directive_block
            )
    return findings


def _current(recall: Any, marker: str) -> bool:
    """Whether an item stating ``marker`` is marked as what holds now."""
    return any(
        marker in item.text and getattr(item, "standing", None) == "current"
        for item in recall.items
    )


def _shows(recall: Any, marker: str) -> bool:
    return marker in recall.memory_block or any(
        marker in item.text for item in recall.items
    )


async def check_directory(
    memory: Memory, expected: Expectations, executor: Executor
) -> list[Finding]:
    """What only the engine's own process can see: exports, stored vectors, receipts,
    integrity and the bytes of every file. Run on a settled, drained memory."""
    findings: list[Finding] = []
    stored = set(await known_agents(memory))
    for agent in sorted(set(expected.owners.values())):
        if agent not in stored:
            # Retired, or never written (every write of it refused or cut off): nothing
            # of it may be expected, and nothing of it is left to export.
            findings.extend(
                ("I1", f"{agent}: {marker} must be recallable, but the agent is gone")
                for marker in sorted(expected.live.get(agent, ()))
            )
            continue
        sink = io.StringIO()
        await export_memory(memory, sink, agent)
        exported = sink.getvalue()
        executor.scan(agent, exported, "export")
        # Erased text must not be exported at all; text that is only gone from recall
        # (a hidden source, a withdrawn message) is exported as the record it is, and the
        # import round trip checks it stays out of recall there too.
        findings.extend(
            ("I2", f"{agent}: erased {marker} is in the export")
            for marker in sorted(expected.gone.get(agent, ()))
            if marker in expected.erased and marker in exported
        )
    findings.extend(await _stored_vectors(memory))
    findings.extend(await _receipts(memory))
    report = await check(memory)
    findings.extend(("I6", f"doctor: {problem}") for problem in report.problems)
    findings.extend(await check_files(memory, expected))
    return findings


async def check_files(memory: Memory, expected: Expectations) -> list[Finding]:
    """No file of the data directory (database, WAL, vector files) holds erased text.
    Run it while the memory is open: a clean close checkpoints and deletes the WAL,
    which would hide text the runtime itself failed to scrub."""
    held = await run_in_thread(
        functools.partial(files_holding, memory.path, sorted(expected.erased)),
        limiter=runtime_core(memory).limiters.store_read,
    )
    return [
        ("I7", f"forgotten text {marker} is in {', '.join(sorted(paths))}")
        for marker, paths in sorted(held.items())
    ]


async def _stored_vectors(memory: Memory) -> list[Finding]:
    """Every stored vector equals its text embedded by its identity's model: a vector
    computed under another identity (a stale commit across a switch) does not."""
    embedders = embedders_by_key()

    def read(reader: Any) -> list[tuple[str, str, str, int, bytes, str | None]]:
        connection = reader.connection
        rows = []
        for key, target, agent, rowid, blob, claim_text in connection.execute(
            "SELECT e.identity_key, e.target, e.agent_id, e.target_rowid, e.vector,"
            " c.text FROM embeddings AS e LEFT JOIN claims AS c"
            " ON e.target = 'claim' AND c.rowid = e.target_rowid"
        ):
            text = claim_text
            if target == "event":
                events = load_events(connection, AgentId(agent), [rowid])
                text = events[rowid].embedding_text() if rowid in events else None
            rows.append((key, target, agent, rowid, bytes(blob), text))
        return rows

    findings: list[Finding] = []
    for key, target, agent, rowid, blob, text in await runtime_core(
        memory
    ).database.read(read):
        embedder = embedders.get(key)
        if embedder is None or text is None:
            continue
        stored = decode_vector(blob, embedder.dimension).astype(np.float32)
        expected = (await embedder.embed_documents([text]))[0]
        if not np.allclose(stored, expected, atol=2e-3):
            findings.append(
                (
                    "I4",
                    f"{agent}: the {target} {rowid} vector is not its text under {key}",
                )
            )
    return findings


async def _receipts(memory: Memory) -> list[Finding]:
    """A batch publishes once: no claim is stored twice, no batch is left open."""

    def read(reader: Any) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        connection = reader.connection
        doubled = [
            (str(agent), int(count))
            for agent, count in connection.execute(
                "SELECT agent_id, count(*) FROM claims WHERE lifecycle = 'active'"
                " GROUP BY agent_id, kind, content_hash, scope, scope_key"
                " HAVING count(*) > 1"
            )
        ]
        unsettled = [
            (str(agent), int(count))
            for agent, count in connection.execute(
                "SELECT agent_id, count(*) FROM event_batches WHERE status = 'open'"
                " GROUP BY agent_id"
            )
        ]
        return doubled, unsettled

    doubled, unsettled = await runtime_core(memory).database.read(read)
    return [
        ("I5", f"{agent}: a claim is stored {count} times") for agent, count in doubled
    ] + [("I5", f"{agent}: {count} batches still open") for agent, count in unsettled]


def files_holding(root: Path, markers: Iterable[str]) -> dict[str, list[str]]:
    """Which files under ``root`` hold a copy of which marker (:func:`holds_marker`)."""
    wanted = list(markers)
    found: dict[str, list[str]] = {}
    if not wanted:
        return found
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        blob = path.read_bytes().lower()
        # One pass per file: a six-letter tail is held exactly when it ends a run of
        # letters, so collect every run's last six letters once instead of searching
        # the file again for each marker (thousands of them in a schedules batch).
        word_ends = set(_WORD_END.findall(blob))
        for marker in wanted:
            tail = marker_tail(marker).encode()
            if _TAIL.fullmatch(tail):
                held = tail in word_ends
            else:
                held = holds_marker(blob, marker)
            if held:
                found.setdefault(marker, []).append(str(path))
    return found
