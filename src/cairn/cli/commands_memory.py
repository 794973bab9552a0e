"""``ingest``, ``recall`` and ``demo``: turns in, memory out."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import attrs
import trio
import typer
from rich.table import Table

from cairn.api.protocol import MemoryApi
from cairn.cli.app import (
    EXIT_OK,
    EXIT_REJECTED,
    EXIT_STOPPED,
    CliContext,
    JsonOption,
    app,
    emit_json,
    run,
    stderr_console,
    stdout_console,
)
from cairn.cli.progress import progress_bar, wait_idle_shown
from cairn.cli.target import open_target
from cairn.cli.terminal import shown, visible
from cairn.cli.turns import read_turns
from cairn.domain.outcomes import IntakeOutcome
from cairn.errors import (
    ConnectionLostError,
    IngestStoppedError,
    InvalidInputError,
    PipelineStalledError,
    SecretInIdentifierError,
    StoreConstraintError,
    StoreError,
)
from cairn.retrieval.render import item_labels
from cairn.runtime.threads import run_in_thread
from cairn.serde.recall import recall_to_dict

if TYPE_CHECKING:
    from cairn.domain.evidence import Turn
    from cairn.retrieval.types import Recall, RecallItem

__all__ = ["aware_time", "ingest_file", "recall_json"]

_INGEST_CHUNK = 512
# Which count each stored (or deliberately skipped) outcome goes to.
_COUNTED = {
    IntakeOutcome.INGESTED: "ingested",
    IntakeOutcome.DUPLICATE: "duplicate",
    IntakeOutcome.MERGED: "merged",
    IntakeOutcome.SUPPRESSED: "suppressed",
}
# A call refused as a whole for one of its turns (nothing of it stored): retried a turn
# at a time. A unique-key refusal is in this group: it names a turn, not the disk.
_ONE_BAD_TURN = (InvalidInputError, StoreConstraintError)
# Failures of the storage or the way to it: the file stops there, the rest is not bad.
_STOPPING = (StoreError, ConnectionLostError)
# Room in a request for everything of a turn but its text and IDs (field names, kinds).
_TURN_OVERHEAD_BYTES = 256


def _request_bytes(turn: Turn) -> int:
    """About what ``turn`` adds to an ingest request on the wire (a little more)."""
    fields = (turn.text, turn.event_id, turn.session_id, turn.speaker or "")
    return sum(len(field.encode("utf-8")) for field in fields) + _TURN_OVERHEAD_BYTES


@attrs.define
class _FileIngest:
    """The calls of one file ingest, and what they decided so far, line by line."""

    memory: MemoryApi
    agent: str
    name: str
    counts: dict[str, int] = attrs.field(
        factory=lambda: dict.fromkeys(_COUNTED.values(), 0)
    )
    rejected: list[dict[str, Any]] = attrs.field(factory=list)

    def reject(self, number: int, event_id: str | None, reason: str | None) -> None:
        if event_id is not None:
            # A lone surrogate (a JSON "\ud800" escape) cannot be written out as UTF-8:
            # the report shows it as the escape instead.
            event_id = event_id.encode("utf-8", "backslashreplace").decode("utf-8")
        self.rejected.append({"line": number, "id": event_id, "reason": reason})

    def summary(self) -> dict[str, Any]:
        return {**self.counts, "rejected": list(self.rejected)}

    async def send(self, lines: list[tuple[int, Turn]]) -> None:
        """One ingest call for ``lines``; a call refused for one of its turns is sent
        again a turn at a time, so only the refused turns are rejected."""
        try:
            report = await self.memory.ingest(self.agent, [turn for _, turn in lines])
        # First: a unique-key refusal is a StoreError too, but names a turn.
        except _ONE_BAD_TURN as error:
            if len(lines) == 1:
                number, turn = lines[0]
                # The report never repeats an ID that holds a secret.
                secret = isinstance(error, SecretInIdentifierError)
                self.reject(number, None if secret else turn.event_id, str(error))
                return
            # Nothing of the call was stored: find the refused turns one at a time.
            for line in lines:
                await self.send([line])
            return
        except _STOPPING as error:
            raise self._stopped(lines[0][0], error) from error
        for (number, turn), result in zip(lines, report.results, strict=True):
            if result.outcome is IntakeOutcome.REJECTED:
                self.reject(number, turn.event_id, result.reason)
            else:
                self.counts[_COUNTED[result.outcome]] += 1

    def _stored(self) -> int:
        return sum(self.counts[name] for name in ("ingested", "duplicate", "merged"))

    def stalled(
        self, last_line: int, error: PipelineStalledError
    ) -> IngestStoppedError:
        """Every line is stored, but the background pipeline cannot finish them."""
        stored = self._stored()
        return IngestStoppedError(
            f"ingest of {self.name} stopped after its last line ({last_line}): {error}."
            f" The {stored} lines stored stay stored and queued; once the fault is"
            " cleared, run the same command again (or cairn drain) to finish them"
            " (lines already stored count as duplicates)",
            stored_lines=stored,
            stopped_at=last_line + 1,
            summary=self.summary(),
        )

    def _stopped(self, number: int, error: Exception) -> IngestStoppedError:
        stored = self._stored()
        return IngestStoppedError(
            f"ingest of {self.name} stopped at line {number}: {error}. The {stored}"
            " lines stored before it stay stored; that line and the rest are not. Once"
            " the fault is cleared, run the same command again to store the rest"
            " (lines already stored count as duplicates)",
            stored_lines=stored,
            stopped_at=number,
            summary=self.summary(),
        )


async def ingest_file(
    memory: MemoryApi,
    agent: str,
    path: Path,
    *,
    as_json: bool = True,
    max_request_bytes: int | None = None,
    maintain: bool = True,
) -> dict[str, Any]:
    """Ingest every valid line of ``path``; returns counts and the rejected lines.

    Once extracted and embedded, the agent's maintenance runs (``maintain``: merge,
    challenge, learning, persona), so what a short-lived process ingested is
    consolidated before it exits; the summary's ``maintenance`` says what it did.

    With ``max_request_bytes`` (a server's frame limit) each ingest call stays within
    half of it, and a turn too large to send alone is rejected with the reason.

    One bad line is a rejected line, never a lost file: a call the engine refuses as a
    whole for one of its turns (a message over the segment cap, a secret in an ID) is
    sent again a turn at a time. A storage failure (a full disk, an I/O error, a lost
    server) raises :class:`IngestStoppedError` saying how many lines were stored and
    at which line it stopped. So does a background pipeline that cannot commit once
    every line is stored (:class:`PipelineStalledError` from ``wait_idle``): then all
    lines are stored and queued, and it stopped after the last one.
    """
    intake = _FileIngest(memory, agent, path.name)
    chunk: list[tuple[int, Turn]] = []
    chunk_bytes = 0
    budget = None if max_request_bytes is None else max_request_bytes // 2

    async def flush() -> None:
        nonlocal chunk_bytes
        await intake.send(list(chunk))
        chunk.clear()
        chunk_bytes = 0

    # The file is read in the CLI's own thread, a chunk at a time: never on the loop.
    files = trio.CapacityLimiter(1)
    total = await run_in_thread(lambda: path.stat().st_size, limiter=files)
    lines = read_turns(path)
    last_line = 0
    with progress_bar(f"ingest {path.name}", total, as_json=as_json) as bar:
        while batch := await run_in_thread(
            lambda: list(itertools.islice(lines, _INGEST_CHUNK)), limiter=files
        ):
            for line in batch:
                last_line = line.number
                bar.advance(line.size)
                if line.turn is None:
                    if line.error is not None:
                        intake.reject(line.number, line.event_id, line.error)
                    continue
                if budget is not None:
                    size = _request_bytes(line.turn)
                    if size > budget:
                        intake.reject(
                            line.number,
                            line.turn.event_id,
                            f"too large to send to the server (about {size} bytes;"
                            f" at most {budget} per request)",
                        )
                        continue
                    if chunk and chunk_bytes + size > budget:
                        await flush()
                    chunk_bytes += size
                chunk.append((line.number, line.turn))
            if chunk:
                await flush()
    try:
        await wait_idle_shown(
            memory, [agent], f"extract and embed {path.name}", as_json=as_json
        )
    except PipelineStalledError as error:
        raise intake.stalled(last_line, error) from error
    summary = intake.summary()
    if maintain:
        # One call is bounded in time; a short-lived process consolidates everything it
        # stored, so it calls again while calls settle something.
        batches = settled = 0
        while True:
            report = await memory.maintain(agent)
            batches, settled = batches + report.batches, settled + report.settled
            if report.remaining == 0 or report.settled == 0:
                break
        summary["maintenance"] = {
            "batches": batches,
            "settled": settled,
            "remaining": report.remaining,
        }
    return summary


def _print_ingest_summary(summary: dict[str, Any]) -> None:
    # Merged repeats and forgotten turns are named only when there are any.
    extra = "".join(
        f" {name} {summary[name]},"
        for name in ("merged", "suppressed")
        if summary[name]
    )
    stdout_console().print(
        f"ingested {summary['ingested']}, duplicate {summary['duplicate']},{extra}"
        f" rejected {len(summary['rejected'])}"
    )
    if summary["rejected"]:
        table = Table("line", "id", "reason", title="rejected lines")
        for rejection in summary["rejected"]:
            table.add_row(
                str(rejection["line"]),
                shown(rejection["id"] or ""),
                shown(rejection["reason"] or ""),
            )
        stderr_console().print(table)


@app.command()
def ingest(
    context: typer.Context,
    file: Annotated[Path, typer.Argument(help="JSONL of turns.", show_default=False)],
    agent: Annotated[str, typer.Option(help="Agent ID.", show_default=False)],
    maintain: Annotated[
        bool,
        typer.Option(
            help="Run the agent's maintenance (merge, challenge, persona) at the end."
        ),
    ] = True,
    as_json: JsonOption = False,
) -> None:
    """Ingest turns from a JSONL file; returns once they are extracted, embedded and
    (unless --no-maintain) consolidated by maintenance."""
    cli: CliContext = context.obj

    async def body() -> int:
        if not file.is_file():
            raise InvalidInputError(f"no such file: {file}")
        async with open_target(cli) as target:
            try:
                summary = await ingest_file(
                    target.calls,
                    agent,
                    file,
                    as_json=as_json,
                    max_request_bytes=target.max_request_bytes,
                    maintain=maintain,
                )
            except IngestStoppedError as stopped:
                summary = {
                    **stopped.summary,
                    "stopped": {
                        "line": stopped.stopped_at,
                        "stored_lines": stopped.stored_lines,
                        "reason": str(stopped),
                    },
                }
                code = EXIT_STOPPED
                print(f"cairn: {visible(str(stopped))}", file=sys.stderr)
            else:
                code = EXIT_REJECTED if summary["rejected"] else EXIT_OK
        if as_json:
            emit_json(summary)
        else:
            _print_ingest_summary(summary)
        return code

    run(body)


def recall_json(recall: Recall) -> dict[str, Any]:
    """The JSON shape of one recall: the full result with compact items."""
    data = recall_to_dict(recall)
    data["items"] = [
        {
            key: item[key]
            for key in (
                "id",
                "kind",
                "text",
                "score",
                "source_refs",
                "at",
                "qualifier",
                "origin",
                "lifecycle",
                "stage",
                "standing",
                "valid_until",
                "metadata",
            )
        }
        for item in data["items"]
    ]
    return data


def _print_recall(recall: Recall, as_json: bool, query_id: str | None = None) -> None:
    if as_json:
        data = recall_json(recall)
        emit_json(data if query_id is None else {"id": query_id, **data})
        return
    console = stdout_console()
    if recall.status == "pending":
        console.print(
            f"pending: nothing was ready in time; the result is stored as request"
            f" {recall.request_id}",
            markup=False,
        )
        return
    table = Table(
        "#",
        "id",
        "when",
        "trust",
        "memory",
        "sources",
        title=None if query_id is None else shown(query_id),
    )
    for rank, item in enumerate(recall.items, start=1):
        table.add_row(
            str(rank),
            shown(item.id),
            shown(_when(item)),
            shown(_trust(item)),
            shown(f"{item.kind}: {item.text}"),
            shown(", ".join(item.source_refs)),
        )
    if recall.items:
        console.print(table)
    else:
        console.print("(no memory matched)")
    directives = [
        line[2:]
        for line in recall.directive_block.splitlines()
        if line.startswith("- ")
    ]
    for directive in directives:
        console.print(visible(f"directive: {directive}"))
    degradations = recall.manifest.degradations if recall.manifest else ()
    if recall.status == "partial":
        console.print(
            f"partial ({', '.join(degradations)}): what was ready in time; the complete"
            f" result is stored as request {recall.request_id}",
            markup=False,
        )
    else:
        console.print(
            f"degradations: {', '.join(degradations) or 'none'}"
            f" (request {recall.request_id})",
            markup=False,
        )


def _when(item: RecallItem) -> str:
    """The item's date, its temporal qualifier, and whether it holds now or held
    before."""
    parts = [item.at[:10]] if item.at else []
    if item.qualifier:
        parts.append(item.qualifier)
    if item.standing is not None:
        parts.append(item.standing.value)
    return ", ".join(parts)


def _trust(item: RecallItem) -> str:
    """Where the item comes from, and a claim's learning stage."""
    parts = [item.origin.value.replace("_", " ")] if item.origin is not None else []
    if item.stage is not None:
        parts.append(item.stage)
    return ", ".join(parts)


def _read_queries(path: Path) -> list[tuple[str, str, str | None]]:
    queries = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                query_id, query = str(data["id"]), str(data["query"])
                session = data.get("session")
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
                raise InvalidInputError(f"{path}:{number}: need id and query") from None
            queries.append((query_id, query, None if session is None else str(session)))
    return queries


def aware_time(text: str, option: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInputError(
            f"{option} {text!r} is not an ISO date-time (2026-03-01T09:00+01:00)"
        ) from None
    if moment.utcoffset() is None:
        raise InvalidInputError(
            f"{option} {text!r} needs a UTC offset (2026-03-01T09:00+01:00)"
        )
    return moment


@app.command()
def recall(
    context: typer.Context,
    agent: Annotated[str, typer.Option(help="Agent ID.", show_default=False)],
    query: Annotated[
        str | None, typer.Argument(help="What to recall.", show_default=False)
    ] = None,
    session: Annotated[str | None, typer.Option(help="Session ID.")] = None,
    k: Annotated[
        int, typer.Option("--k", help="At most this many items (1 to 100).")
    ] = 10,
    budget: Annotated[
        int | None,
        typer.Option(help="Budget in UTF-8 bytes (1 to 1048576).", show_default=False),
    ] = None,
    wait: Annotated[
        float, typer.Option(help="Wait budget in seconds (0 to 3600).")
    ] = 30.0,
    queries: Annotated[
        Path | None,
        typer.Option(help="JSONL of {id, query, session?}.", show_default=False),
    ] = None,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="Recall what held at this ISO time with offset (2026-03-01T09:00+01:00).",
            show_default=False,
        ),
    ] = None,
    turn: Annotated[
        str | None,
        typer.Option(
            help="The host's turn key: a repeat for the turn reuses its contribution.",
            show_default=False,
        ),
    ] = None,
    include_noise: Annotated[
        bool,
        typer.Option(
            "--include-noise",
            help="Also recall turns stored as noise (heartbeats, 'ok', logs, tracebacks).",
        ),
    ] = False,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag",
            help="Only memories with this tag (repeat: any of them).",
            show_default=False,
        ),
    ] = None,
    kind: Annotated[
        list[str] | None,
        typer.Option(
            "--kind",
            help="Only memories of this kind (a claim kind or evidence; repeatable).",
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            help="Only memories said at or after this ISO time with offset.",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            help="Only memories said before this ISO time with offset.",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Recall memory for a query (or for every line of --queries)."""
    cli: CliContext = context.obj

    async def body() -> int:
        if queries is None and not query:
            raise InvalidInputError("give a QUERY or --queries FILE")
        moment = None if as_of is None else aware_time(as_of, "--as-of")
        after = None if since is None else aware_time(since, "--since")
        before = None if until is None else aware_time(until, "--until")
        batch = (
            _read_queries(queries) if queries is not None else [(None, query, session)]
        )
        async with open_target(cli) as target:
            for query_id, text, query_session in batch:
                assert text is not None  # noqa: S101 - checked above
                result = await target.calls.recall(
                    agent,
                    text,
                    session_id=query_session or session,
                    k=k,
                    budget_bytes=budget,
                    wait_s=wait,
                    as_of=moment,
                    turn_id=turn,
                    include_noise=include_noise,
                    tags=tag or (),
                    kinds=kind or (),
                    since=after,
                    until=before,
                )
                _print_recall(result, as_json, query_id)
        return EXIT_OK

    run(body)


_DEMO_QUESTIONS = (
    "What drink does Mei like?",
    "When is the trip to Kyoto?",
    "Where does Mei live now?",
    "梅喜欢喝什么？",
    "东京的会议是什么时候？",
)


@app.command()
def demo(context: typer.Context) -> None:
    """Ingest a shipped English and Chinese conversation and show what recall returns."""
    cli: CliContext = context.obj

    async def body() -> int:
        script = resources.files("cairn.data") / "demo.jsonl"
        console = stdout_console()
        with tempfile.TemporaryDirectory(prefix="cairn-demo-") as directory:
            turns = Path(directory) / "demo.jsonl"
            turns.write_text(script.read_text(encoding="utf-8"), encoding="utf-8")
            async with cli.open(Path(directory) / "data") as memory:
                summary = await ingest_file(memory, "demo", turns, as_json=False)
                console.print(
                    f"ingested {summary['ingested']} turns into {directory}\n"
                )
                for question in _DEMO_QUESTIONS:
                    result = await memory.recall("demo", question, k=4, wait_s=30.0)
                    console.print(f"Q: {question}", markup=False)
                    contrast = any(item.standing == "history" for item in result.items)
                    for item in result.items:
                        label = ", ".join(item_labels(item, contrast=contrast))
                        console.print(visible(f"   [{label}] {item.text}"))
                    console.print()
        return EXIT_OK

    run(body)
