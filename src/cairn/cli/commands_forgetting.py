"""Trust and forgetting: ``retire``, ``forget``, ``archive``, ``unarchive``, ``remember`` and
``directives list|add|propose|approve|revoke``. Every command says exactly what it changed;
``--json`` gives the same as one JSON object. (``clear`` lives with the upkeep commands.)"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import attrs
import typer

from cairn.cli.app import (
    EXIT_BAD_INPUT,
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

AgentOption = Annotated[
    str, typer.Option("--agent", help="Agent ID.", show_default=False)
]
ClaimArgument = Annotated[str, typer.Argument(help="Claim ID.", show_default=False)]
DirectiveKind = Annotated[
    str, typer.Option("--kind", help="instruction or suppress_topic.")
]


def _plain(value: Any) -> Any:
    """Results as JSON-ready values (attrs classes as dicts, enums as their values)."""
    if attrs.has(type(value)):
        return {k: _plain(v) for k, v in attrs.asdict(value, recurse=False).items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return str(value.value) if hasattr(value, "value") else value


def _say(result: Any, as_json: bool, text: str) -> int:
    if as_json:
        emit_json(result)
    else:
        stdout_console().print(text, markup=False)
    return EXIT_OK


def _run_on_memory(context: typer.Context, action: Any) -> None:
    """Run ``action(memory)`` on the directory's server, or on a runtime of our own."""
    cli: CliContext = context.obj

    async def body() -> int:
        async with open_target(cli) as target:
            code: int = await action(target.calls)
        return code

    run(body)


@app.command()
def retire(
    context: typer.Context,
    agent: AgentOption,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm the deletion.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Delete EVERYTHING of an agent: memories, evidence, directives, tombstones, vectors."""
    if not yes:
        print(
            "cairn: retire deletes every memory, evidence row and directive of the"
            " agent; pass --yes to confirm",
            file=sys.stderr,
        )
        raise typer.Exit(EXIT_BAD_INPUT)

    async def action(memory: Any) -> int:
        report = await memory.retire(agent)
        # JSON keeps its documented shape: rows deleted as a table -> count object.
        result = {
            "agent_id": report.agent_id,
            "rows_deleted": {count.table: count.rows for count in report.rows_deleted},
            "kept": list(report.kept),
        }
        rows = ", ".join(f"{c.table} {c.rows}" for c in report.rows_deleted if c.rows)
        return _say(
            result,
            as_json,
            f"agent {report.agent_id} retired; deleted: {rows or 'nothing'}",
        )

    _run_on_memory(context, action)


MemoryArgument = Annotated[
    str,
    typer.Argument(
        help="The ID recall shows: a claim's, or a stored turn's (or segment's).",
        show_default=False,
    ),
]


def _forget_summary(result: dict[str, Any]) -> str:
    # The ID is the caller's (an event ID may hold anything): shown escaped.
    lines = [
        (
            f"forgot {result['kind']} {visible(result['id'])}: removed"
            f" {', '.join(result['removed'])}; kept {', '.join(result['kept'])}"
        )
    ]
    if result["kind"] == "evidence" and result["claims_removed"]:
        lines.append(f"claims removed with it: {', '.join(result['claims_removed'])}")
    if result["claims_kept"]:
        lines.append(
            "claims kept (other evidence supports them):"
            f" {', '.join(result['claims_kept'])}"
        )
    return "\n".join(lines)


@app.command()
def forget(
    context: typer.Context,
    agent: AgentOption,
    item_id: MemoryArgument,
    as_json: JsonOption = False,
) -> None:
    """Forget a claim or a stored turn by the ID recall shows; hash-only tombstones keep
    it from coming back (replay, import, a model's remember)."""

    async def action(memory: Any) -> int:
        result = _plain(await memory.forget(agent, item_id))
        return _say(result, as_json, _forget_summary(result))

    _run_on_memory(context, action)


def _lifecycle(
    context: typer.Context, agent: str, claim_id: str, archived: bool, as_json: bool
) -> None:
    async def action(memory: Any) -> int:
        call = memory.archive if archived else memory.unarchive
        result = _plain(await call(agent, claim_id))
        return _say(result, as_json, str(result["note"]))

    _run_on_memory(context, action)


@app.command()
def archive(
    context: typer.Context,
    agent: AgentOption,
    claim_id: ClaimArgument,
    as_json: JsonOption = False,
) -> None:
    """Take one claim out of recall, keeping it locally (undo with ``unarchive``)."""
    _lifecycle(context, agent, claim_id, True, as_json)


@app.command()
def unarchive(
    context: typer.Context,
    agent: AgentOption,
    claim_id: ClaimArgument,
    as_json: JsonOption = False,
) -> None:
    """Bring an archived claim back into recall."""
    _lifecycle(context, agent, claim_id, False, as_json)


@app.command()
def remember(
    context: typer.Context,
    agent: AgentOption,
    text: Annotated[str, typer.Argument(help="The claim, in the user's words.")],
    kind: Annotated[str, typer.Option("--kind", help="Claim kind.")] = "fact",
    as_json: JsonOption = False,
) -> None:
    """Store one claim as the user's own (releases a tombstone of exactly this claim)."""

    async def action(memory: Any) -> int:
        result = _plain(await memory.remember(agent, text, kind=kind, by="user"))
        return _say(
            result, as_json, f"{result['outcome']} {result['claim_id'] or ''}".strip()
        )

    _run_on_memory(context, action)


directives = typer.Typer(help="The user's standing directives.", no_args_is_help=True)
app.add_typer(directives, name="directives")


def _directive_lines(result: Any) -> str:
    items = result if isinstance(result, list) else [result]
    return "\n".join(
        f"{d['directive_id']} {d['status']:7} {d['kind']:14} {visible(d['text'])}"
        for d in items
    )


def _directive_action(context: typer.Context, as_json: bool, call: Any) -> None:
    async def action(memory: Any) -> int:
        result = _plain(await call(memory.directives))
        return _say(result, as_json, _directive_lines(result))

    _run_on_memory(context, action)


@directives.command("list")
def list_directives(
    context: typer.Context,
    agent: AgentOption,
    status: Annotated[
        str | None, typer.Option("--status", help="draft, active or revoked.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Directives, newest first."""
    _directive_action(context, as_json, lambda book: book.list(agent, status=status))


@directives.command("add")
def add_directive(
    context: typer.Context,
    agent: AgentOption,
    text: Annotated[str, typer.Argument(help="The directive.")],
    kind: DirectiveKind = "instruction",
    as_json: JsonOption = False,
) -> None:
    """Create an active directive (the user's own instruction)."""
    _directive_action(
        context, as_json, lambda book: book.create(agent, text, kind=kind)
    )


@directives.command("propose")
def propose_directive(
    context: typer.Context,
    agent: AgentOption,
    text: Annotated[str, typer.Argument(help="The suggested directive.")],
    kind: DirectiveKind = "instruction",
    as_json: JsonOption = False,
) -> None:
    """Record a suggested directive as a draft (it does nothing until approved)."""
    _directive_action(
        context, as_json, lambda book: book.propose(agent, text, kind=kind)
    )


@directives.command("approve")
def approve_directive(
    context: typer.Context,
    agent: AgentOption,
    directive_id: Annotated[str, typer.Argument(help="Directive ID.")],
    as_json: JsonOption = False,
) -> None:
    """Make a draft directive active."""
    _directive_action(context, as_json, lambda book: book.approve(agent, directive_id))


@directives.command("revoke")
def revoke_directive(
    context: typer.Context,
    agent: AgentOption,
    directive_id: Annotated[str, typer.Argument(help="Directive ID.")],
    as_json: JsonOption = False,
) -> None:
    """Revoke a directive."""
    _directive_action(context, as_json, lambda book: book.revoke(agent, directive_id))
