"""``maintain``: run an agent's maintenance now instead of at its timer.

``cairn maintain --agent A`` works the agent's dirty claims through every pass (merge of
near-duplicates, challenge of contradictions, reflection with a text provider, learning,
persona and working sections) and prints what it did; ``--json`` gives it as one object.
``cairn ingest`` does the same at its end unless ``--no-maintain``."""

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
def maintain(
    context: typer.Context,
    agent: Annotated[
        str, typer.Option("--agent", help="Agent ID.", show_default=False)
    ],
    as_json: JsonOption = False,
) -> None:
    """Run the agent's maintenance now: merge, challenge, learning, persona."""
    cli: CliContext = context.obj

    async def body() -> int:
        async with open_target(cli) as target:
            report = await target.calls.maintain(agent)
        if as_json:
            emit_json(attrs.asdict(report))
        else:
            stdout_console().print(
                f"maintenance of {visible(report.agent_id)}: {report.batches} batches,"
                f" {report.settled} claims settled, {report.remaining} still dirty",
                markup=False,
            )
        return EXIT_OK

    run(body)
