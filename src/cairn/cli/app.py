"""The typer application, its shared options and the glue every command uses.

Each command group lives in its own ``commands_*`` module and registers itself on
:data:`app` when imported; :mod:`cairn.cli.main` imports them all. A command body is an
``async`` function run by :func:`run`, which maps cairn's typed errors to exit code 2 (4
when another process holds the data directory).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import attrs
import trio
import typer
from rich.console import Console
from typer.core import TyperGroup

from cairn.cli.logs import command_logging, log_level
from cairn.cli.terminal import visible
from cairn.clock import DomainClock
from cairn.config import MemoryConfig
from cairn.domain.characters import json_escape
from cairn.errors import CairnError, DataDirectoryInUseError, SocketInUseError
from cairn.ipc.directory import Occupant, claim_data_directory
from cairn.providers.embedding import EmbeddingProvider
from cairn.runtime.memory import open_memory
from cairn.runtime.threads import run_in_thread

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable

    from cairn.runtime.memory import Memory

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_IN_USE",
    "EXIT_OK",
    "EXIT_REJECTED",
    "EXIT_STOPPED",
    "CliContext",
    "JsonOption",
    "app",
    "default_data_dir",
    "emit_json",
    "exit_code_for",
    "run",
    "stderr_console",
    "stdout_console",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_REJECTED = 3
EXIT_IN_USE = 4
EXIT_STOPPED = 5
EXIT_INTERRUPTED = 130

EXIT_CODES = (
    "Exit codes: 0 success; 1 unexpected failure, a failing provider check, or doctor"
    " found problems it did not repair; 2 bad usage, input or configuration (nothing"
    " stored); 3 some input lines were rejected (the rest is stored); 4 another cairn"
    " process holds the data directory and the command cannot go through it, or a live"
    " server listens on the socket path asked for (nothing done); 5 ingest stopped"
    " partway on a storage failure such as a full disk (the lines before the reported"
    " line are stored; run it again once the fault is cleared); 130 interrupted."
)

# The app-level options, each taking one value, that a command also accepts after its
# name: ``cairn recall --data D ...`` is ``cairn --data D recall ...``.
GLOBAL_OPTIONS: Final = ("--data",)


def hoist_global_options(args: list[str], commands: Collection[str]) -> list[str]:
    """``args`` with every global option after the command name moved before it.

    Only the tokens before ``--`` are looked at (after it every token is an argument),
    and the command name is the first token naming a command that is not the value of
    a global option. A later occurrence still wins, as it would in place.
    """
    hoisted: list[str] = []
    rest: list[str] = []
    position = None
    index = 0
    while index < len(args):
        token = args[index]
        if position is None:
            if token in GLOBAL_OPTIONS and index + 1 < len(args):
                hoisted += args[index : index + 2]
                index += 2
                continue
            if token in commands:
                position = len(hoisted)
            hoisted.append(token)
            index += 1
            continue
        if token == "--":  # noqa: S105 - the end of options, not a secret
            rest += args[index:]
            break
        name = token.split("=", 1)[0]
        if name in GLOBAL_OPTIONS and "=" in token:
            hoisted.insert(position, token)
            position += 1
        elif token in GLOBAL_OPTIONS and index + 1 < len(args):
            hoisted[position:position] = args[index : index + 2]
            position += 2
            index += 2
            continue
        else:
            rest.append(token)
        index += 1
    return hoisted + rest


class CairnGroup(TyperGroup):
    """The top-level group: global options are accepted after the command too."""

    # ``ctx`` is the click context of typer's own copy of click (a private module).
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args, self.commands))

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """As typer's, but a usage error is one line, ``cairn: <what is wrong> (see
        cairn <command> --help)``, exit 2, like every other error."""
        standalone = standalone_mode
        try:
            code = super().main(
                args,
                prog_name,
                complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
        except typer.Abort:
            print("cairn: aborted", file=sys.stderr)
            code = EXIT_FAILED
        except Exception as error:
            if not _is_click_error(error) or not standalone:
                raise
            code = _show_click_error(error)
        if not standalone:
            return code
        sys.exit(code if isinstance(code, int) else EXIT_OK)


def _is_click_error(error: Exception) -> bool:
    # typer ships its own copy of click; its exception classes are found through it.
    return any(kind.__name__ == "ClickException" for kind in type(error).__mro__)


def _show_click_error(error: Any) -> int:
    """Print a click error (a usage error: a missing or unknown option, a bad value)
    as one line; the exit code (2 for usage errors)."""
    if type(error).__name__ == "NoArgsIsHelpError":
        error.show()  # ``cairn`` alone: the help, as typer shows it
        return int(error.exit_code)
    context = getattr(error, "ctx", None)
    path = getattr(context, "command_path", "cairn") if context else "cairn"
    message = " ".join(str(error.format_message()).split())
    print(f"cairn: {visible(message)} (see {path} --help)", file=sys.stderr)
    return int(error.exit_code)


app = typer.Typer(
    cls=CairnGroup,
    name="cairn",
    help="Long-term memory for AI agents.",
    epilog=EXIT_CODES,
    no_args_is_help=True,
    add_completion=False,
    # A traceback must never print local variables: they may hold turn text or secrets.
    pretty_exceptions_show_locals=False,
    pretty_exceptions_short=True,
)

JsonOption = Annotated[
    bool, typer.Option("--json", help="Machine-readable JSON on stdout.")
]


def default_data_dir() -> Path:
    """``$CAIRN_DATA``, else ``$XDG_DATA_HOME/cairn``, else ``~/.local/share/cairn``."""
    if explicit := os.environ.get("CAIRN_DATA"):
        return Path(explicit)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "cairn"


@attrs.define
class CliContext:
    """What every command needs: the data directory and how to open the memory there.

    Tests pass their own (``CliRunner.invoke(app, ..., obj=CliContext(...))``) with a fast
    deterministic embedder and a fixed clock; the command line uses the configured ones.
    Commands that work on memory go through ``cairn.cli.target.open_target`` (to a
    running server, or a runtime of their own); :meth:`open` is for those that need the
    runtime itself.
    """

    data_dir: Path | None = None
    config: MemoryConfig | None = None
    clock: DomainClock | None = None
    embedder: Callable[[], EmbeddingProvider] | None = None
    # The command running, as a refused process reads it ("cairn ingest").
    command: str = "cairn"

    @property
    def data(self) -> Path:
        return self.data_dir or default_data_dir()

    @contextlib.asynccontextmanager
    async def open(self, data_dir: Path | None = None) -> AsyncIterator[Memory]:
        """The runtime on the data directory, holding its lock meanwhile; refused
        (DataDirectoryInUseError) if a server or another command holds it."""
        path = data_dir or self.data
        claimed = await run_in_thread(
            lambda: claim_data_directory(path, role="command", command=self.command),
            limiter=trio.CapacityLimiter(1),
        )
        if isinstance(claimed, Occupant):
            raise claimed.refusal(self.command)
        with claimed:
            async with self.open_runtime(path) as memory:
                yield memory

    @contextlib.asynccontextmanager
    async def open_runtime(self, data_dir: Path | None = None) -> AsyncIterator[Memory]:
        """The runtime, for a caller that already holds the directory's lock."""
        async with open_memory(
            data_dir or self.data,
            self.config,
            clock=self.clock,
            embedder=None if self.embedder is None else self.embedder(),
        ) as memory:
            yield memory


@app.callback()
def _options(
    context: typer.Context,
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            help="Data directory (default $CAIRN_DATA, else $XDG_DATA_HOME/cairn).",
            show_default=False,
        ),
    ] = None,
) -> None:
    if not isinstance(context.obj, CliContext):
        context.obj = CliContext()
    if data is not None:
        context.obj.data_dir = data
    if context.invoked_subcommand:
        context.obj.command = f"cairn {context.invoked_subcommand}"


def stdout_console() -> Console:
    """A console on stdout that reads no str as rich markup or ``:emoji:`` codes; stored
    text still goes through ``cairn.cli.terminal`` (``shown``, ``visible``) first."""
    # Built per call, so output follows whatever sys.stdout is now (tests redirect it).
    return Console(
        file=sys.stdout, highlight=False, soft_wrap=True, markup=False, emoji=False
    )


def stderr_console() -> Console:
    return Console(
        file=sys.stderr, highlight=False, soft_wrap=True, markup=False, emoji=False
    )


def emit_json(data: Any) -> None:
    """One JSON document on one line of stdout.

    Text stays readable UTF-8, but controls json.dumps leaves raw (DEL, C1), bidi controls,
    zero-width, tag and variation selector characters are written as ``\\uXXXX``
    (``cairn.domain.characters.json_escape``): a JSON reader decodes the exact text, a
    terminal never receives them raw.
    """
    document = json.dumps(data, ensure_ascii=False, default=str)
    sys.stdout.write(json_escape(document) + "\n")
    sys.stdout.flush()


def _cairn_errors(error: BaseException) -> list[CairnError] | None:
    """The typed errors ``error`` consists of, or None if anything else is in it."""
    if isinstance(error, CairnError):
        return [error]
    if isinstance(error, BaseExceptionGroup):
        matched, rest = error.split(CairnError)
        if matched is not None and rest is None:
            leaves: list[CairnError] = []
            for leaf in matched.exceptions:
                leaves.extend(_cairn_errors(leaf) or [])
            return leaves
    return None


def exit_code_for(errors: list[CairnError]) -> int:
    """4 if another process holds the data directory or the socket path, else 2."""
    in_use = (DataDirectoryInUseError, SocketInUseError)
    if any(isinstance(error, in_use) for error in errors):
        return EXIT_IN_USE
    return EXIT_BAD_INPUT


def run(body: Callable[[], Awaitable[int]]) -> None:
    """Run an async command body under trio; exit with its code, or 2 on a typed error
    (4 for DataDirectoryInUseError).

    Anything else propagates: typer prints the traceback (without locals) and exits 1.
    """
    try:
        with command_logging(log_level()):
            code = trio.run(body)
    except (CairnError, BaseExceptionGroup) as error:
        leaves = _cairn_errors(error)
        if leaves is None:
            raise
        for leaf in leaves:
            print(f"cairn: {visible(str(leaf))}", file=sys.stderr)
        raise typer.Exit(exit_code_for(leaves)) from None
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except BrokenPipeError:
        # The reader went away (`cairn … | head`): not an error of ours. Point stdout at
        # devnull so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(EXIT_OK) from None
    if code:
        raise typer.Exit(code)
