"""``mcp``: serve cairn's tools to an MCP host (Claude Code, Codex, any MCP client) on stdio.

The host starts ``cairn --data DIR mcp [--agent A] [--tools full|none]`` and speaks MCP on
its stdin and stdout; nothing else is written to stdout. Beside a running ``cairn serve
--socket`` the tools' calls go to that server (so hooks, the CLI and this session share
one writer); otherwise this process holds the data directory while the session lasts.
"""

from __future__ import annotations

from typing import Annotated

import typer

from cairn.cli.app import EXIT_OK, CliContext, app, run
from cairn.cli.target import open_target
from cairn.hosts.mcp_tools import DEFAULT_MCP_AGENT, McpTools, McpUnavailableError

__all__: list[str] = []


@app.command()
def mcp(
    context: typer.Context,
    agent: Annotated[
        str,
        typer.Option("--agent", help="The agent a tool call without one works on."),
    ] = DEFAULT_MCP_AGENT,
    tools: Annotated[
        McpTools,
        typer.Option(
            help="full: every tool; none: list no tool (hooks recall and capture)."
        ),
    ] = McpTools.FULL,
) -> None:
    """Serve cairn's tools over MCP on stdio (recall, remember, observe, forget, stats,
    audit)."""
    cli: CliContext = context.obj

    async def body() -> int:
        try:
            # Only this command needs the SDK (~1 s to import): the rest of the CLI, and
            # the hooks' light client, start without it.
            from cairn.hosts.mcp_server import build_mcp_server  # noqa: PLC0415
        except ImportError as error:
            raise McpUnavailableError(
                f"cairn mcp needs the MCP SDK: pip install 'cairn[mcp]' ({error})"
            ) from None
        async with open_target(cli) as target:
            server = build_mcp_server(target.calls, agent=agent, tools=tools)
            await server.run_stdio_async()
        return EXIT_OK

    run(body)
