"""``serve``, ``drain`` and ``reconfigure``: run the IPC server, and ask a running one to
settle its work or re-read its configuration (found by ``--socket`` or through the data
directory's ``server.json``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import attrs
import trio
import typer

from cairn.cli.app import (
    EXIT_FAILED,
    EXIT_OK,
    CliContext,
    JsonOption,
    app,
    emit_json,
    exit_code_for,
    run,
)
from cairn.cli.terminal import visible
from cairn.errors import CairnError, DrainTimeoutError, InvalidInputError
from cairn.ipc import open_unix_client
from cairn.ipc.directory import LOCK_NAME, Occupant, claim_data_directory
from cairn.ipc.serve import request_drain, run_server
from cairn.ipc.server import ServerLimits
from cairn.runtime.threads import run_in_thread

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
    max_connections: Annotated[
        int | None,
        typer.Option(
            help="Socket connections served at once (default 256; fewer if the"
            " descriptor limit needs it); more are refused."
        ),
    ] = None,
    idle_timeout: Annotated[
        float | None,
        typer.Option(
            help="Close a socket connection idle this many seconds (default 300;"
            " 0: never)."
        ),
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
            if max_connections is not None:
                limits = attrs.evolve(limits, max_connections=max_connections)
            if idle_timeout is not None:
                # 0 turns the idle timeout off; a negative one fails the validator.
                limits = attrs.evolve(limits, idle_timeout_s=idle_timeout or None)
        except ValueError as error:
            raise InvalidInputError(f"serve: {error}") from None
        # The server runs its own trio loop: it owns stdio and the signal handlers.
        code = run_server(
            cli.data,
            socket_path=socket,
            limits=limits,
            embedder=None if cli.embedder is None else cli.embedder(),
        )
    except CairnError as error:
        print(f"cairn: {visible(str(error))}", file=sys.stderr)
        raise typer.Exit(exit_code_for([error])) from None
    raise typer.Exit(code)


async def _server_socket(cli: CliContext, socket: Path | None) -> Path:
    """``--socket``, else the socket of the server holding the data directory."""
    if socket is not None:
        return socket
    data_dir = cli.data
    no_server = InvalidInputError(
        f"no cairn server holds {data_dir}; give --socket PATH"
    )
    files = trio.CapacityLimiter(1)
    if not await run_in_thread((data_dir / LOCK_NAME).exists, limiter=files):
        raise no_server  # nothing ever ran there: do not create the directory
    claimed = await run_in_thread(
        lambda: claim_data_directory(data_dir, role="command", command=cli.command),
        limiter=files,
    )
    if isinstance(claimed, Occupant):
        if claimed.socket is not None:
            return claimed.socket
        raise claimed.refusal()
    claimed.release()
    raise no_server


SocketOption = Annotated[
    Path | None,
    typer.Option(
        "--socket",
        help="The running server's socket (default: the server of --data).",
        show_default=False,
    ),
]


@app.command()
def drain(
    context: typer.Context,
    socket: SocketOption = None,
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
    cli: CliContext = context.obj

    async def body() -> int:
        path = await _server_socket(cli, socket)
        try:
            report = await request_drain(path, timeout_s=timeout, resume=resume)
        except DrainTimeoutError as error:
            emit_json({"drained": False, "error": str(error)})
            return EXIT_FAILED
        emit_json(report)
        return EXIT_OK

    run(body)


@app.command()
def reconfigure(context: typer.Context, socket: SocketOption = None) -> None:
    """Make a running server re-read its provider configuration (cairn.toml and its
    environment) and switch live: ``{"changed", "embedder"}``. A new embedding identity
    re-embeds in the background; recall says ``reindexing`` meanwhile. Always JSON."""

    cli: CliContext = context.obj

    async def body() -> int:
        async with open_unix_client(await _server_socket(cli, socket)) as client:
            report = await client.reconfigure()
        emit_json(
            {"changed": report.changed, "embedder": attrs.asdict(report.embedder)}
        )
        return EXIT_OK

    run(body)
