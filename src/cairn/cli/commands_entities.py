"""``entities``: who and what the agent's turns speak of, and under which names.

Entities are found in every ingested turn (speakers, names, nicknames, kinship references
like "my sister", Chinese forms); this shows what was resolved, with the turns behind each
alias, so a user can see why recall ties "Mel" to Melanie.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import msgspec
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

if TYPE_CHECKING:
    from cairn.api.reports import Entity, EntityRelation

__all__ = ["entity_json"]


def entity_json(entity: Entity) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(entity)
    return data


def _turns(count: int) -> str:
    return f"{count} turn" if count == 1 else f"{count} turns"


def _relation(relation: EntityRelation) -> str:
    arrow = "->" if relation.outgoing else "<-"
    # An open end: not known when it began, or it still holds.
    since = relation.valid_from or "?"
    until = relation.valid_until or "now"
    return (
        f"{visible(relation.relation)} {arrow} {visible(relation.other)}"
        f" [{since} .. {until}] ({visible(relation.claim_id)})"
    )


def _show(found: list[Entity], as_json: bool) -> int:
    if as_json:
        emit_json({"entities": [entity_json(entity) for entity in found]})
        return EXIT_OK
    # Blocks of plain lines, not a table: an entity has any number of aliases and
    # relations, and the event IDs are what a user looks up (or forgets) next.
    console = stdout_console()
    for entity in found:
        console.print(
            f"{visible(entity.name)} ({entity.kind}) · {_turns(entity.mentions)}"
        )
        for alias in entity.aliases:
            sources = ", ".join(visible(source) for source in alias.sources)
            console.print(f"  {visible(alias.alias)} ({alias.kind}): {sources}")
        for relation in entity.relations:
            console.print(f"  {_relation(relation)}")
    if not found:
        console.print("(no entity known)")
    return EXIT_OK


@app.command()
def entities(
    context: typer.Context,
    agent: Annotated[
        str, typer.Option("--agent", help="Agent ID.", show_default=False)
    ],
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="Only those known by this name (any alias).",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option(help="At most this many, most mentioned first.")
    ] = 100,
    as_json: JsonOption = False,
) -> None:
    """The agent's entities, most mentioned first: each with its aliases, the turns that
    give them, and its relations."""
    cli: CliContext = context.obj

    async def body() -> int:
        async with open_target(cli) as target:
            found = await target.calls.entities(agent, name=name, limit=limit)
        return _show(found, as_json)

    run(body)
