"""``export`` and ``import``: memory as JSON lines (format in design/cli.md)."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO

import trio
import typer
from rich.table import Table

from cairn.cli.app import (
    EXIT_OK,
    EXIT_REJECTED,
    CliContext,
    JsonOption,
    app,
    emit_json,
    run,
    stderr_console,
    stdout_console,
)
from cairn.cli.progress import progress_bar, wait_idle_shown
from cairn.cli.read_only import export_stored
from cairn.cli.reading import Stored, degraded_of, open_live_or_stored
from cairn.cli.terminal import shown
from cairn.errors import InvalidInputError
from cairn.runtime.threads import run_in_thread
from cairn.runtime.transfer import ImportedDirectives, export_memory, import_memory
from cairn.runtime.upkeep import known_agents

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__: list[str] = []


@contextlib.contextmanager
def _sink(target: Path) -> Iterator[TextIO]:
    """stdout for ``-``; else a sibling file renamed over ``target`` once complete, so a
    failed export never leaves a truncated file under the name asked for."""
    if str(target) == "-":
        yield sys.stdout
        return
    partial = target.with_name(f".{target.name}.partial")
    # 0600: an export holds every memory of the directory, readable by its owner only
    # (a partial file left by an older cairn keeps its mode if reused, so it goes first).
    try:
        partial.unlink(missing_ok=True)
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as error:
        raise InvalidInputError(f"cannot write {target}: {error.strerror}") from None
    with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as stream:
        try:
            yield stream
        except BaseException:
            stream.close()
            partial.unlink(missing_ok=True)
            raise
    os.replace(partial, target)


def _counts_table(title: str, rows: dict[str, Any]) -> Table:
    table = Table("record", *next(iter(rows.values()), {}).keys(), title=shown(title))
    for kind, entry in rows.items():
        table.add_row(kind, *(str(value) for value in entry.values()))
    return table


@app.command("export")
def export_(
    context: typer.Context,
    file: Annotated[
        Path, typer.Argument(help="Where to write the JSONL ('-': stdout).")
    ],
    agent: Annotated[
        str | None,
        typer.Option(
            help="Only this agent (default: every agent).", show_default=False
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Export evidence, claims, lineage, directives and tombstones as JSON lines."""
    cli: CliContext = context.obj
    to_stdout = str(file) == "-"

    async def body() -> int:
        if not to_stdout and not await run_in_thread(
            file.parent.is_dir, limiter=trio.CapacityLimiter(1)
        ):
            raise InvalidInputError(f"no such directory: {file.parent}")
        quiet = as_json or to_stdout
        async with open_live_or_stored(cli, cli.open) as opened:
            if not isinstance(opened, Stored):
                memory = opened
                # The only writer here: what it accepted before is extracted first.
                for known in await known_agents(memory, agent):
                    await memory.wait_idle(known)
                with (
                    progress_bar("export", None, as_json=quiet) as bar,
                    _sink(file) as sink,
                ):
                    summary = await export_memory(memory, sink, agent, bar.advance)
            else:
                # No runtime can open here: export what is stored, read-only.
                with (
                    progress_bar("export", None, as_json=quiet) as bar,
                    _sink(file) as sink,
                ):
                    summary = await export_stored(opened.data, sink, agent, bar.advance)
        if not as_json:
            for reason in degraded_of(opened):
                stderr_console().print(shown(f"degraded: {reason}"))
        if to_stdout:
            return EXIT_OK
        if as_json:
            emit_json(
                {
                    **summary.as_json(),
                    "file": str(file),
                    "degraded": degraded_of(opened),
                }
            )
        else:
            counts = {k: {"records": v} for k, v in summary.records.items()}
            stdout_console().print(_counts_table(f"exported to {file}", counts))
        return EXIT_OK

    run(body)


@app.command("import")
def import_(
    context: typer.Context,
    file: Annotated[Path, typer.Argument(help="A file written by `cairn export`.")],
    directives: Annotated[
        ImportedDirectives,
        typer.Option(
            "--directives",
            help="How directives the file records as active arrive: as drafts that do"
            " nothing until approved, or active (only for your own export).",
            case_sensitive=False,
        ),
    ] = ImportedDirectives.DRAFT,
    as_json: JsonOption = False,
) -> None:
    """Import an export; records already stored are duplicates, conflicting ones rejected.

    Directives arrive as drafts unless --directives=active says the file is your own.
    """
    cli: CliContext = context.obj

    async def body() -> int:
        size = await run_in_thread(
            lambda: file.stat().st_size if file.is_file() else None,
            limiter=trio.CapacityLimiter(1),
        )
        if size is None:
            raise InvalidInputError(f"no such file: {file}")
        async with cli.open() as memory:
            with progress_bar(f"import {file.name}", size, as_json=as_json) as bar:
                summary = await import_memory(
                    memory, file, bar.advance, directives=directives
                )
            # What the file brought is extracted and embedded before the command ends.
            await wait_idle_shown(
                memory,
                summary.agents,
                f"extract and embed {file.name}",
                as_json=as_json,
            )
        if as_json:
            emit_json(summary.as_json())
        else:
            stdout_console().print(
                _counts_table(f"imported {file}", summary.as_json()["records"])
            )
            for agent, count in summary.directives_drafted.items():
                stdout_console().print(
                    f"{count} {'directive' if count == 1 else 'directives'} of"
                    f" {shown(agent)} arrived as drafts: they do nothing until approved"
                    f" (cairn directives list --agent {shown(agent)} --status draft,"
                    " then cairn directives approve)",
                    markup=False,
                )
            if summary.directive_times_clamped:
                stdout_console().print(
                    f"{summary.directive_times_clamped} directive times after now were"
                    " stored as now",
                    markup=False,
                )
            if summary.rejected:
                table = Table("line", "type", "reason", title="rejected lines")
                for rejection in summary.rejected:
                    table.add_row(
                        str(rejection.line),
                        shown(rejection.type),
                        shown(rejection.reason or ""),
                    )
                stderr_console().print(table)
        return EXIT_REJECTED if summary.rejected else EXIT_OK

    run(body)
