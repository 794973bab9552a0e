"""``cairn install <host>`` and ``cairn uninstall <host>`` (design/hooks.md).

``cairn hook <host> <event>`` itself never reaches typer: the console script dispatches
it to cairn.hooks before the CLI is imported (cairn.entry).
"""

from __future__ import annotations

import difflib
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from cairn.cli.app import app
from cairn.cli.terminal import visible
from cairn.hooks.install import Change, install, uninstall


def _cairn_command() -> str:
    found = shutil.which("cairn")
    return found or str(Path(sys.executable).with_name("cairn"))


def _show(changes: list[Change], *, dry_run: bool) -> None:
    for change in changes:
        if not change.changed:
            typer.echo(f"{change.path}: unchanged")
            continue
        if dry_run:
            diff = difflib.unified_diff(
                (change.before or "").splitlines(keepends=True),
                (change.after or "").splitlines(keepends=True),
                fromfile=str(change.path),
                tofile=str(change.path),
            )
            typer.echo("".join(diff), nl=False)
        else:
            typer.echo(f"{change.path}: written")


HostArg = Annotated[str, typer.Argument(help="claude-code or codex")]


@app.command("install")
def install_command(
    host: HostArg,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the change only.")
    ] = False,
    agent: Annotated[
        str | None, typer.Option(help="Agent ID (default: the host's).")
    ] = None,
) -> None:
    """Write the host's hook and MCP configuration (cairn mcp --tools none)."""
    try:
        changes = install(Path.home(), host, _cairn_command(), agent, dry_run=dry_run)
    except ValueError as error:
        typer.echo(f"cairn: {visible(str(error))}", err=True)
        raise typer.Exit(2) from None
    _show(changes, dry_run=dry_run)


@app.command("uninstall")
def uninstall_command(
    host: HostArg,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the change only.")
    ] = False,
) -> None:
    """Remove exactly the hook and MCP configuration ``cairn install`` wrote."""
    try:
        changes = uninstall(Path.home(), host, _cairn_command(), dry_run=dry_run)
    except ValueError as error:
        typer.echo(f"cairn: {visible(str(error))}", err=True)
        raise typer.Exit(2) from None
    _show(changes, dry_run=dry_run)
