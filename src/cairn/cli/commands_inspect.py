"""``memories list``, ``memories show`` and ``memories edit``: what the agent remembers,
inspected and corrected by the user.

``list`` filters as ``Memory.memories`` does (in SQL, before the limit); ``show`` is one
memory with the stored turns behind it and its lineage; ``edit`` rewrites one as the user:
a new revision takes its place in recall and the old one stays stored as its history.
``list`` and ``show`` only read: with the embedding provider down or the directory
read-only they read the stored rows and say so (cairn.cli.reading).
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
    stderr_console,
    stdout_console,
)
from cairn.cli.commands_memory import aware_time
from cairn.cli.read_only import StoredInspection
from cairn.cli.reading import Stored, degraded_of, open_live_or_stored
from cairn.cli.target import open_target
from cairn.cli.terminal import shown
from cairn.domain.scope import Scope, ScopeKind
from cairn.errors import InvalidInputError

if TYPE_CHECKING:
    from cairn.api.protocol import MemoryApi
    from cairn.api.reports import MemoryDetail, MemoryItem
    from cairn.cli.target import Target

__all__: list[str] = []

AgentOption = Annotated[
    str, typer.Option("--agent", help="Agent ID.", show_default=False)
]
ClaimArgument = Annotated[
    str, typer.Argument(help="Memory (claim) ID.", show_default=False)
]

memories = typer.Typer(
    help="What the agent remembers: list, show one with its sources and history, edit."
)
app.add_typer(memories, name="memories")


def _plain(value: object) -> Any:
    return msgspec.to_builtins(value)


def _scope_of(text: str | None) -> Scope | None:
    """``agent``, or ``KIND:KEY`` for a session, user or project scope."""
    if text is None:
        return None
    kind, _, key = text.partition(":")
    try:
        return Scope(ScopeKind(kind), key or None)
    except ValueError:
        raise InvalidInputError(
            f"--scope {text!r} is not a scope: agent, or session:ID, user:ID, project:ID"
        ) from None


def _calls(opened: Target | Stored) -> MemoryApi | StoredInspection:
    """Where a read goes: the runtime or server, or the stored rows when none opens."""
    return StoredInspection(opened.data) if isinstance(opened, Stored) else opened.calls


def _line(item: MemoryItem) -> str:
    scope = item.scope if item.scope_key is None else f"{item.scope}:{item.scope_key}"
    return (
        f"{item.id} {item.lifecycle} {item.kind} {item.origin} {shown(scope)}"
        f" {item.created_at[:10]}"
    )


@memories.command("list")
def list_memories(
    context: typer.Context,
    agent: AgentOption,
    kind: Annotated[
        str | None, typer.Option(help="Only this kind (fact, preference, ...).")
    ] = None,
    lifecycle: Annotated[
        str | None,
        typer.Option(help="Only this lifecycle (active, superseded, archived, ...)."),
    ] = None,
    scope: Annotated[
        str | None,
        typer.Option(
            help="Only this scope: agent, or session:ID, user:ID, project:ID."
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(help="Stored at or after this ISO time with offset."),
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Stored before this ISO time with offset.")
    ] = None,
    text: Annotated[
        str | None, typer.Option(help="Only those whose words contain this.")
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag", help="Only memories with this tag (repeat: any of them)."
        ),
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many (1 to 1000).")] = 50,
    as_json: JsonOption = False,
) -> None:
    """The agent's memories, newest stored first, every filter applied before --limit."""
    cli: CliContext = context.obj

    async def body() -> int:
        wanted_scope = _scope_of(scope)
        start = None if since is None else aware_time(since, "--since")
        end = None if until is None else aware_time(until, "--until")
        async with open_live_or_stored(cli, lambda: open_target(cli)) as opened:
            calls = _calls(opened)
            found = await calls.memories(
                agent,
                kind=kind,
                lifecycle=lifecycle,
                scope=wanted_scope,
                since=start,
                until=end,
                text=text,
                tags=tag or (),
                limit=limit,
            )
        degraded = degraded_of(opened)
        if as_json:
            emit_json(
                {"memories": [_plain(item) for item in found], "degraded": degraded}
            )
            return EXIT_OK
        for reason in degraded:
            stderr_console().print(shown(f"degraded: {reason}"))
        # Plain lines, not a table: the IDs are what a user copies into ``show`` and
        # ``edit``, and a table wraps them on a narrow terminal.
        console = stdout_console()
        for item in found:
            console.print(_line(item))
            console.print(f"  {shown(item.text)}")
        if not found:
            console.print("(no memory matches)")
        return EXIT_OK

    run(body)


def _print_detail(detail: MemoryDetail) -> None:
    console = stdout_console()
    item = detail.memory
    console.print(_line(item))
    console.print(f"  {shown(item.text)}")
    console.print(
        f"  confidence {item.confidence:.2f}, stage {item.stage or '-'},"
        f" revision {item.revision}, updated {item.updated_at}"
    )
    if item.evidence_at or item.valid_from or item.valid_until or item.superseded_at:
        console.print(
            f"  evidence {item.evidence_at or '-'}, valid {item.valid_from or '-'}"
            f" to {item.valid_until or '-'}, superseded at {item.superseded_at or '-'}"
        )
    console.print("sources:")
    for source in detail.evidence:
        if source.state == "present":
            console.print(
                f"  {shown(source.event_id or '')} {source.at}"
                f" {shown(source.speaker or source.role or '')}:"
                f" {shown(source.text or '')}"
            )
        else:
            console.print(f"  [{source.state}] {shown(source.event_id or '')}")
    console.print("history:")
    for edge in detail.lineage:
        words = "" if edge.other_text is None else f" {shown(edge.other_text)}"
        state = edge.other_lifecycle or "gone"
        console.print(
            f"  {edge.relation} {edge.other_role} {edge.other_id} ({state},"
            f" {edge.at}){words}"
        )
    if not detail.lineage:
        console.print("  (none)")


@memories.command("show")
def show_memory(
    context: typer.Context,
    agent: AgentOption,
    claim_id: ClaimArgument,
    as_json: JsonOption = False,
) -> None:
    """One memory with the stored turns behind it and its history."""
    cli: CliContext = context.obj

    async def body() -> int:
        async with open_live_or_stored(cli, lambda: open_target(cli)) as opened:
            detail = await _calls(opened).memory(agent, claim_id)
        degraded = degraded_of(opened)
        if as_json:
            emit_json({**_plain(detail), "degraded": degraded})
            return EXIT_OK
        for reason in degraded:
            stderr_console().print(shown(f"degraded: {reason}"))
        _print_detail(detail)
        return EXIT_OK

    run(body)


@memories.command("edit")
def edit_memory(
    context: typer.Context,
    agent: AgentOption,
    claim_id: ClaimArgument,
    text: Annotated[str, typer.Argument(help="The new words.", show_default=False)],
    as_json: JsonOption = False,
) -> None:
    """Rewrite a memory as the user: recall shows the new words, the old stay as its
    history."""
    cli: CliContext = context.obj

    async def body() -> int:
        async with open_target(cli) as target:
            report = await target.calls.edit(agent, claim_id, text)
        if as_json:
            emit_json(_plain(report))
            return EXIT_OK
        console = stdout_console()
        console.print(f"{report.previous_id} -> {report.memory.id}")
        console.print(f"  {shown(report.memory.text)}")
        console.print(report.note)
        return EXIT_OK

    run(body)
