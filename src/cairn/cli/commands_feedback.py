"""``feedback``: tell the learning layer which items of one recall helped or were wrong.

``cairn feedback REQUEST_ID --agent A --used ID --wrong ID`` (each option repeatable),
with the IDs ``cairn recall`` showed for that request. Prints what was recorded;
``--json`` gives it as one object."""

from __future__ import annotations

from typing import Annotated

import attrs
import typer

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
from cairn.cli.terminal import visible

__all__: list[str] = []


@app.command()
def feedback(
    context: typer.Context,
    request_id: Annotated[
        str,
        typer.Argument(help="The request ID of the recall.", show_default=False),
    ],
    agent: Annotated[
        str, typer.Option("--agent", help="Agent ID.", show_default=False)
    ],
    used: Annotated[
        list[str] | None,
        typer.Option(
            "--used", help="An item that helped (repeatable).", show_default=False
        ),
    ] = None,
    wrong: Annotated[
        list[str] | None,
        typer.Option(
            "--wrong", help="An item that was wrong (repeatable).", show_default=False
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Report which recalled items helped (--used) or were wrong (--wrong)."""
    cli: CliContext = context.obj

    async def body() -> int:
        async with open_target(cli) as target:
            report = await target.calls.feedback(
                agent, request_id, used=tuple(used or ()), wrong=tuple(wrong or ())
            )
        if as_json:
            emit_json(attrs.asdict(report))
        else:
            repeat = (
                "" if report.new_signals else " (already recorded: nothing changed)"
            )
            stdout_console().print(
                f"feedback on recall {visible(report.request_id)}: {report.used} used,"
                f" {report.wrong} wrong{repeat}",
                markup=False,
            )
        return EXIT_OK

    run(body)
