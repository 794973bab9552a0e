"""``serve`` and ``drain``: run the IPC server, and ask a running one to settle its work."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import attrs
import typer

from cairn.cli.app import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    CliContext,
    JsonOption,
    app,
    emit_json,
    run,
)
from cairn.errors import CairnError, DrainTimeoutError, InvalidInputError
from cairn.ipc import open_unix_client
from cairn.ipc.serve import request_drain, run_server
from cairn.ipc.server import ServerLimits

__all__ = ["drain", "reconfigure", "serve"]


@app.command()
def serve(
    context: typer.Context,
    stdio: Annotated[
        bool, typer.Option("--stdio", help="Frames on stdin/stdout (logs on stderr).")
    ] = False,
    socket: Annotated[
        Path | None, typer.Option("--socket", help="Serve a Unix socket at this path.")
    ] = None,
    max_in_flight: Annotated[
        int | None, typer.Option(help="Requests in flight per connection.")
    ] = None,
    max_frame_bytes: Annotated[
        int | None, typer.Option(help="Largest accepted frame body.")
    ] = None,
) -> None:
    """Serve the IPC protocol (design/ipc.md) until end of input or a signal."""
    cli: CliContext = context.obj
    try:
        if stdio == (socket is not None):
            raise InvalidInputError(
                "serve needs exactly one of --stdio or --socket PATH"
            )
        limits = ServerLimits()
        try:
            if max_in_flight is not None:
                limits = attrs.evolve(limits, max_in_flight=max_in_flight)
            if max_frame_bytes is not None:
                limits = attrs.evolve(limits, max_frame_bytes=max_frame_bytes)
        except ValueError as error:
            raise InvalidInputError(f"serve: {error}") from None
        # The server runs its own trio loop: it owns stdio and the signal handlers.
        code = run_server(cli.data, socket_path=socket, limits=limits)
    except CairnError as error:
        print(f"cairn: {error}", file=sys.stderr)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    raise typer.Exit(code)


@app.command()
def drain(
    socket: Annotated[
        Path, typer.Option("--socket", help="The running server's socket.")
    ],
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Seconds to wait for the drain.")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Accept writes again.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Make a running server stop accepting writes and settle accepted work (exit 1 if it
    does not within the timeout; it stays drained); ``--resume`` re-arms it.

    The report is JSON with or without ``--json``: it is small and read by scripts.
    """
    del as_json

    async def body() -> int:
        try:
            report = await request_drain(socket, timeout_s=timeout, resume=resume)
        except DrainTimeoutError as error:
            emit_json({"drained": False, "error": str(error)})
            return EXIT_FAILED
        emit_json(report)
        return EXIT_OK

    run(body)


@app.command()
def reconfigure(
    socket: Annotated[
        Path, typer.Option("--socket", help="The running server's socket.")
    ],
) -> None:
    """Make a running server re-read its provider configuration (cairn.toml and its
    environment) and switch live: ``{"changed", "embedder"}``. A new embedding identity
    re-embeds in the background; recall says ``reindexing`` meanwhile. Always JSON."""

    async def body() -> int:
        async with open_unix_client(socket) as client:
            report = await client.reconfigure()
        emit_json(
            {"changed": report.changed, "embedder": attrs.asdict(report.embedder)}
        )
        return EXIT_OK

    run(body)
