"""``clear``, ``reindex``, ``doctor`` and ``replay``: operator upkeep of a data
directory."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import attrs
import trio
import typer
from rich.table import Table
from rich.text import Text

from cairn.cli.app import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    CliContext,
    JsonOption,
    app,
    emit_json,
    run,
    stdout_console,
)
from cairn.cli.progress import progress_bar, shows_progress
from cairn.cli.read_only import doctor_stored
from cairn.cli.reading import Stored, open_live_or_stored
from cairn.cli.target import open_target
from cairn.cli.terminal import shown
from cairn.runtime import upkeep
from cairn.runtime.operator_reports import DoctorReport
from cairn.runtime.private_files import LoosePath, loose_paths
from cairn.runtime.threads import run_in_thread

if TYPE_CHECKING:
    from cairn.api.status import StatusReport

__all__: list[str] = []

_COUNTS = ("events", "claims", "directives", "embeddings")


def _counts(status: StatusReport, agent: str) -> dict[str, int]:
    entry = status.agent(agent)
    return {name: int(getattr(entry, name)) for name in _COUNTS}


@app.command()
def clear(
    context: typer.Context,
    agent: Annotated[
        str, typer.Option("--agent", help="Agent ID.", show_default=False)
    ],
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Delete every memory (claim) of AGENT durably; evidence and directives are kept."""
    cli: CliContext = context.obj
    if not yes:
        if as_json or not sys.stdin.isatty():
            print(
                "cairn: clear deletes memories; pass --yes to confirm", file=sys.stderr
            )
            raise typer.Exit(EXIT_BAD_INPUT)
        typer.confirm(f"Delete every memory of {agent!r}?", abort=True)

    async def body() -> int:
        async with open_target(cli) as target:
            memory = target.calls
            agent_id = await target.known_agent(agent)
            before = _counts(await memory.status(), agent_id)
            result = await memory.clear(agent_id)
            after = _counts(await memory.status(), agent_id)
        report = {
            "agent": agent_id,
            **attrs.asdict(result),
            "before": before,
            "after": after,
        }
        if as_json:
            emit_json(report)
            return EXIT_OK
        table = Table("", "before", "after", title=Text(f"clear {agent_id}"))
        for name in _COUNTS:
            table.add_row(name, str(before[name]), str(after[name]))
        console = stdout_console()
        console.print(table)
        console.print(f"removed: {', '.join(result.removed)}")
        console.print(f"kept: {', '.join(result.kept)}")
        return EXIT_OK

    run(body)


@app.command()
def reindex(
    context: typer.Context,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent", help="Agent ID (default: every agent).", show_default=False
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Rebuild vector projections from stored vectors and embed what has none."""
    cli: CliContext = context.obj

    async def body() -> int:
        reports = []
        async with cli.open() as memory:
            for agent_id in await upkeep.known_agents(memory, agent):
                with progress_bar(f"reindex {agent_id}", None, as_json=as_json) as bar:
                    # The bar polls the database while drawn; no bar, no polling.
                    watch = bar.update_to if shows_progress(as_json) else None
                    reports.append(await upkeep.reindex(memory, agent_id, watch))
        if as_json:
            emit_json({"agents": [report.as_json() for report in reports]})
            return EXIT_OK
        table = Table(
            "agent", "from stored vectors", "embedded", "failed", "vectors live"
        )
        for report in reports:
            table.add_row(
                shown(report.agent),
                str(report.vectors_from_blobs),
                str(report.embedded),
                str(report.embedding_failures),
                str(report.vectors_live),
            )
        stdout_console().print(table)
        return EXIT_OK

    run(body)


def _file_modes(
    found: list[LoosePath], remaining: list[LoosePath]
) -> dict[str, list[dict[str, str]]]:
    """The loose modes doctor found: those opening the directory made private, and
    those still loose (a path this user may not change)."""
    still = {loose.path for loose in remaining}

    def entry(loose: LoosePath) -> dict[str, str]:
        return {"path": str(loose.path), "mode": f"{loose.mode:04o}"}

    return {
        "made_private": [entry(loose) for loose in found if loose.path not in still],
        "loose": [entry(loose) for loose in remaining],
    }


def _print_doctor(
    report: DoctorReport, modes: dict[str, list[dict[str, str]]], *, ok: bool
) -> None:
    console = stdout_console()
    table = Table("check", "result")
    sqlite = report.sqlite_integrity
    table.add_row(
        "sqlite integrity_check", shown(str(sqlite if sqlite == "ok" else list(sqlite)))
    )
    for name, entry in report.fts.items():
        table.add_row(
            f"{name} integrity-check",
            shown(
                f"{entry.integrity}; {entry.rows_without_owner} rows without owner,"
                f" {entry.owners_without_row} owners without row"
            ),
        )
    for orphan, count in report.orphans.counts().items():
        table.add_row(orphan.replace("_", " "), str(count))
    for projection in report.projections:
        table.add_row(
            shown(f"projection {projection.agent} {projection.identity.model}"),
            f"{projection.state}: {projection.vectors} vectors,"
            f" {projection.embeddings} stored",
        )
    table.add_row("clear jobs pending", str(len(report.clear_jobs_pending)))
    console.print(table)
    for line in report.repairs or ():
        console.print(shown(f"repaired: {line}"))
    for tightened in modes["made_private"]:
        console.print(
            shown(f"made private: {tightened['path']} (was {tightened['mode']})")
        )
    for line in report.problems:
        console.print(shown(f"problem: {line}"))
    for loose in modes["loose"]:
        console.print(shown(f"problem: {_loose_problem(loose)}"))
    console.print("healthy" if ok else "problems remain")


def _finish_doctor(
    report: DoctorReport | dict[str, Any],
    found: list[LoosePath],
    remaining: list[LoosePath],
    as_json: bool,
) -> int:
    """Print the report (a runtime's, or the read-only checks' JSON) with the file
    modes; the exit code."""
    modes = _file_modes(found, remaining)
    data = report.as_json() if isinstance(report, DoctorReport) else report
    problems = [*data["problems"], *(_loose_problem(entry) for entry in modes["loose"])]
    ok = not problems
    if as_json:
        emit_json({**data, "problems": problems, "file_modes": modes, "ok": ok})
    elif isinstance(report, DoctorReport):
        _print_doctor(report, modes, ok=ok)
    else:
        _print_read_only_doctor(report, modes, problems)
    return EXIT_OK if ok else EXIT_FAILED


def _loose_problem(entry: dict[str, str]) -> str:
    return (
        f"{entry['path']} has mode {entry['mode']}: others may read it, and this user"
        " cannot change it"
    )


def _print_read_only_doctor(
    report: dict[str, Any], modes: dict[str, list[dict[str, str]]], problems: list[str]
) -> None:
    console = stdout_console()
    table = Table("check", "result")
    sqlite = report["sqlite_integrity"]
    table.add_row(
        "sqlite integrity_check", shown(str(sqlite if sqlite == "ok" else list(sqlite)))
    )
    for name, entry in report["fts"].items():
        table.add_row(
            f"{name} rows",
            f"{entry['rows_without_owner']} rows without owner,"
            f" {entry['owners_without_row']} owners without row",
        )
    table.add_row("clear jobs pending", str(len(report["clear_jobs_pending"])))
    console.print(table)
    for reason in report["degraded"]:
        console.print(shown(f"degraded: {reason}"))
    console.print("only the checks that read were run")
    for skipped in report["skipped"]:
        console.print(f"skipped: {skipped}")
    for tightened in modes["made_private"]:
        console.print(
            shown(f"made private: {tightened['path']} (was {tightened['mode']})")
        )
    for line in problems:
        console.print(shown(f"problem: {line}"))
    console.print("problems remain" if problems else "healthy, as far as read")


@app.command()
def doctor(
    context: typer.Context,
    repair: Annotated[
        bool, typer.Option("--repair", help="Rebuild what can be rebuilt.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Check integrity (SQLite, FTS, vectors against stored blobs, orphans, clear jobs)."""
    cli: CliContext = context.obj

    async def body() -> int:
        files = trio.CapacityLimiter(1)
        # Read before the claim: claiming the directory makes these private.
        loose = await run_in_thread(lambda: loose_paths(cli.data), limiter=files)
        report: DoctorReport | dict[str, Any]
        async with open_live_or_stored(cli, cli.open) as opened:
            if isinstance(opened, Stored):
                if repair:
                    raise opened.refusal  # a repair writes, through a runtime
                report = await doctor_stored(opened.data)
                report["degraded"] = list(opened.degraded)
            else:
                checked = await upkeep.check(opened)
                if repair:
                    repairs = await upkeep.repair(opened, checked)
                    checked = (await upkeep.check(opened)).after_repair(
                        checked, repairs
                    )
                report = checked
        remaining = await run_in_thread(lambda: loose_paths(cli.data), limiter=files)
        return _finish_doctor(report, loose, remaining, as_json)

    run(body)


@app.command()
def replay(
    context: typer.Context,
    agent: Annotated[
        str, typer.Option("--agent", help="Agent ID.", show_default=False)
    ],
    as_json: JsonOption = False,
) -> None:
    """Give AGENT's dead extraction batches (dead letters) fresh attempts and wait."""
    cli: CliContext = context.obj

    async def body() -> int:
        async with open_target(cli) as target:
            memory = target.calls
            agent_id = await target.known_agent(agent)
            replayed = await memory.replay_dead_letters(agent_id)
            await memory.wait_idle(agent_id)
            entry = (await memory.status()).agent(agent_id)
        report = {
            "agent": agent_id,
            "replayed_batches": replayed,
            "dead_letters": entry.extraction_dead_letters,
        }
        if as_json:
            emit_json(report)
        else:
            stdout_console().print(
                f"replayed {replayed} dead batches of {agent_id};"
                f" {report['dead_letters']} dead again"
            )
        return EXIT_OK

    run(body)
