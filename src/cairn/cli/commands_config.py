"""``config show`` and ``config check``: the effective settings of the data directory
(``cairn.toml`` and ``CAIRN_*`` variables over the defaults) and where each comes from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio
import typer
from rich.table import Table

from cairn.cli.app import EXIT_OK, CliContext, JsonOption, app, emit_json, run
from cairn.cli.app import stdout_console as console
from cairn.cli.terminal import visible
from cairn.configuration import (
    MEMORY_SCHEMA,
    DecodedTable,
    TableSchema,
    config_path,
    load_memory_config,
    load_table,
)
from cairn.providers.settings import (
    EMBEDDING_SCHEMA,
    TEXT_SCHEMA,
    load_embedding_settings,
    load_text_settings,
)
from cairn.runtime.threads import run_in_thread

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["effective_settings"]

config_app = typer.Typer(
    help="The configuration: cairn.toml and CAIRN_* variables.", no_args_is_help=True
)
app.add_typer(config_app, name="config")


def _rows(
    schema: TableSchema, built: object, decoded: DecodedTable
) -> dict[str, dict[str, Any]]:
    return {
        key: {"value": getattr(built, key), "source": decoded.source_of(key)}
        for key in schema.fields
    }


def effective_settings(data_dir: Path) -> dict[str, Any]:
    """Every setting of every table, as the runtime would use it, with its source.

    Raises ConfigurationError (or InvalidInputError) for a bad file or variable, exactly
    as opening the runtime would."""
    memory = load_memory_config(data_dir)
    embedding = load_embedding_settings(data_dir)
    text = load_text_settings(data_dir)
    return {
        "file": str(config_path(data_dir)),
        "memory": _rows(MEMORY_SCHEMA, memory.config, memory.decoded),
        "embedding": _rows(
            EMBEDDING_SCHEMA, embedding, load_table(EMBEDDING_SCHEMA, data_dir)
        ),
        "text": _rows(TEXT_SCHEMA, text, load_table(TEXT_SCHEMA, data_dir)),
    }


def _print(report: dict[str, Any]) -> None:
    out = console()
    out.print(f"file: {visible(report['file'])}")
    table = Table("setting", "value", "source")
    for name in ("memory", "embedding", "text"):
        for key, row in report[name].items():
            table.add_row(
                f"{name}.{key}", visible(repr(row["value"])), visible(row["source"])
            )
    out.print(table)


@config_app.command("show")
def show(context: typer.Context, as_json: JsonOption = False) -> None:
    """Every setting ([memory], [embedding], [text]) with its value and source
    (default, the file and table, or the variable). Opens no runtime."""
    cli: CliContext = context.obj

    async def body() -> int:
        report = await run_in_thread(
            lambda: effective_settings(cli.data), limiter=trio.CapacityLimiter(1)
        )
        if as_json:
            emit_json(report)
        else:
            _print(report)
        return EXIT_OK

    run(body)


@config_app.command("check")
def check(context: typer.Context, as_json: JsonOption = False) -> None:
    """Validate the file and the variables: exit 0 when the runtime would accept them,
    else exit 2 with the one error line."""
    cli: CliContext = context.obj

    async def body() -> int:
        report = await run_in_thread(
            lambda: effective_settings(cli.data), limiter=trio.CapacityLimiter(1)
        )
        if as_json:
            emit_json({"ok": True, "file": report["file"]})
        else:
            console().print(f"ok: {visible(report['file'])}")
        return EXIT_OK

    run(body)
