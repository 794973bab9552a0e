"""``conflicts list`` and ``conflicts resolve``: contradictions the user decides.

Maintenance raises a conflict when two claims of one scope state incompatible values
and no rule could say which holds (cairn.maintenance.challenge). Both stay recalled,
marked ``conflicting``, until the user keeps one (the other becomes its history) or both.
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
from cairn.cli.terminal import shown

if TYPE_CHECKING:
    from cairn.domain.outcomes import Conflict

__all__ = ["conflict_json"]

AgentOption = Annotated[
    str, typer.Option("--agent", help="Agent ID.", show_default=False)
]

conflicts = typer.Typer(
    help="Contradictions maintenance could not decide: list them, resolve one.",
    invoke_without_command=True,
)
app.add_typer(conflicts, name="conflicts")


def conflict_json(conflict: Conflict) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(conflict)
    return data


def _scope(conflict: Conflict) -> str:
    if conflict.scope_key is None:
        return conflict.scope
    return f"{conflict.scope}:{shown(conflict.scope_key)}"


def _show(found: list[Conflict], as_json: bool) -> int:
    if as_json:
        emit_json({"conflicts": [conflict_json(conflict) for conflict in found]})
        return EXIT_OK
    # Plain lines, not a table: the IDs are what a user copies into ``resolve``, and a
    # table wraps them on a narrow terminal.
    console = stdout_console()
    for conflict in found:
        console.print(
            f"{conflict.conflict_id} {conflict.status} {conflict.reason}"
            f" ({_scope(conflict)})"
        )
        for claim_id, text in zip(conflict.claim_ids, conflict.texts, strict=True):
            kept = " (kept)" if conflict.kept == claim_id else ""
            console.print(f"  {claim_id}{kept} {shown(text)}")
    if not found:
        console.print("(no open conflict)")
    return EXIT_OK


def _list(context: typer.Context, agent: str, every: bool, as_json: bool) -> None:
    cli: CliContext = context.obj

    async def body() -> int:
        async with open_target(cli) as target:
            found = await target.calls.conflicts(agent, include_resolved=every)
        return _show(found, as_json)

    run(body)


@conflicts.callback()
def conflicts_default(
    context: typer.Context,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Agent ID.", show_default=False)
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Resolved ones too.")] = False,
    as_json: JsonOption = False,
) -> None:
    """``cairn conflicts --agent A`` alone lists the open conflicts."""
    if context.invoked_subcommand is not None:
        return
    if agent is None:
        raise typer.BadParameter("--agent is required", param_hint="--agent")
    _list(context, agent, every, as_json)


@conflicts.command("list")
def list_conflicts(
    context: typer.Context,
    agent: AgentOption,
    every: Annotated[bool, typer.Option("--all", help="Resolved ones too.")] = False,
    as_json: JsonOption = False,
) -> None:
    """The agent's open conflicts, oldest first (with --all, resolved ones too)."""
    _list(context, agent, every, as_json)


@conflicts.command("resolve")
def resolve(
    context: typer.Context,
    agent: AgentOption,
    conflict_id: Annotated[
        str, typer.Argument(help="Conflict ID.", show_default=False)
    ],
    keep: Annotated[
        str,
        typer.Option(
            "--keep",
            help="The claim ID that holds (the other becomes its history), or 'both'.",
            show_default=False,
        ),
    ],
    as_json: JsonOption = False,
) -> None:
    """Decide one conflict; maintenance then looks at both claims again."""
    cli: CliContext = context.obj

    async def body() -> int:
        async with open_target(cli) as target:
            conflict = await target.calls.resolve_conflict(
                agent, conflict_id, keep=keep
            )
        if as_json:
            emit_json(conflict_json(conflict))
            return EXIT_OK
        console = stdout_console()
        if conflict.kept is None:
            console.print(f"resolved {conflict.conflict_id}: both claims kept")
        else:
            (other,) = [c for c in conflict.claim_ids if c != conflict.kept]
            console.print(
                f"resolved {conflict.conflict_id}: kept {conflict.kept};"
                f" {other} is now its history"
            )
        return EXIT_OK

    run(body)
