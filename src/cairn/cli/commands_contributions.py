"""``recalls`` and ``attention``: what recall contributed, and what needs the host."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import typer
from rich.table import Table

from cairn.cli.app import (
    EXIT_OK,
    CliContext,
    JsonOption,
    app,
    emit_json,
    run,
    stdout_console,
)
from cairn.cli.target import open_target
from cairn.cli.terminal import shown

if TYPE_CHECKING:
    from cairn.api.reports import AttentionItem, RecallRecord

__all__ = ["attention_json", "record_json"]


def record_json(record: RecallRecord) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(record)
    return data


def attention_json(item: AttentionItem) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(item)
    return data


@app.command()
def recalls(
    context: typer.Context,
    agent: Annotated[str, typer.Option(help="Agent ID.", show_default=False)],
    session: Annotated[
        str | None, typer.Option(help="Only this session's.", show_default=False)
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 50,
    as_json: JsonOption = False,
) -> None:
    """List the durable records of recent recalls: what each selected and dropped."""
    cli: CliContext = context.obj

    async def body() -> int:
        async with open_target(cli) as target:
            records = await target.calls.recalls(agent, session_id=session, limit=limit)
        if as_json:
            emit_json({"records": [record_json(record) for record in records]})
            return EXIT_OK
        table = Table("at", "request", "status", "session", "turn", "selected")
        for record in records:
            manifest = record.manifest
            table.add_row(
                record.at,
                record.request_id,
                record.status,
                shown(record.session_id or ""),
                shown(record.turn_id or ""),
                "" if manifest is None else ", ".join(manifest.selected_ids),
            )
        console = stdout_console()
        if records:
            console.print(table)
        else:
            console.print("(no recall recorded)")
        return EXIT_OK

    run(body)


@app.command()
def attention(
    context: typer.Context,
    agent: Annotated[str, typer.Option(help="Agent ID.", show_default=False)],
    session: Annotated[
        str | None, typer.Option(help="Only this session's.", show_default=False)
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 50,
    consume: Annotated[
        bool, typer.Option("--consume", help="Mark the listed items consumed.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """List the agent's unconsumed attention items (late results, task failures, blocked
    tasks, requests for input); with --consume, mark them consumed."""
    cli: CliContext = context.obj

    async def body() -> int:
        async with open_target(cli) as target:
            items = await target.calls.attention(agent, session_id=session, limit=limit)
            consumed = 0
            if consume and items:
                consumed = await target.calls.consume_attention(
                    agent, [item.item_id for item in items]
                )
        if as_json:
            summary: dict[str, Any] = {"items": [attention_json(i) for i in items]}
            if consume:
                summary["consumed"] = consumed
            emit_json(summary)
            return EXIT_OK
        table = Table("item", "kind", "count", "latest", "session", "about")
        for item in items:
            table.add_row(
                str(item.item_id),
                item.kind.value,
                str(item.count),
                item.latest_at,
                shown(item.session_id or ""),
                shown(item.request_id or item.text or ""),
            )
        console = stdout_console()
        if items:
            console.print(table)
        else:
            console.print("(nothing needs attention)")
        if consume:
            console.print(f"consumed {consumed}")
        return EXIT_OK

    run(body)
