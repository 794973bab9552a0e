"""``stress``: the stress and fault harness (``cairn.stress``) as an operator command."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Annotated

import trio
import typer
from rich.table import Table

from cairn.cli.app import (
    EXIT_FAILED,
    EXIT_OK,
    CliContext,
    JsonOption,
    app,
    emit_json,
    run,
    stderr_console,
    stdout_console,
)
from cairn.cli.terminal import shown
from cairn.errors import InvalidInputError
from cairn.stress.harness import MODES, run_stress
from cairn.stress.profiles import PROFILES

if TYPE_CHECKING:
    from pathlib import Path

    from cairn.stress.report import StressReport

# A real memory lives in a data directory with this file; the harness never works there.
DATABASE_NAME = "cairn.db"


def _print(report: StressReport) -> None:
    console = stdout_console()
    table = Table("mode", "trials", "calls", "seconds", "violations")
    for mode in report.modes:
        table.add_row(
            mode.mode,
            str(mode.trials),
            str(mode.operations),
            f"{mode.seconds:.1f}",
            str(len(mode.violations)),
        )
    console.print(table)
    for mode in report.modes:
        for figure, value in sorted(mode.figures.items()):
            console.print(shown(f"{mode.mode}: {figure}: {value:g}"))
    for violation in report.violations:
        console.print(
            shown(
                f"VIOLATION {violation.invariant} in {violation.mode} (trial seed"
                f" {violation.seed}): {violation.message}"
            )
        )
        for line in violation.history:
            console.print(shown(f"    {line}"))
    console.print(
        f"seed {report.seed}, profile {report.profile}: "
        + ("every invariant held" if report.ok else "violations found")
        + f" (replay: cairn --data DIR stress --seed {report.seed}"
        f" --profile {report.profile})"
    )


@app.command()
def stress(
    context: typer.Context,
    seed: Annotated[
        int | None,
        typer.Option(help="Seed of every trial (default: a random one, printed)."),
    ] = None,
    profile: Annotated[
        str, typer.Option(help="quick (under a minute), ci, or long.")
    ] = "quick",
    mode: Annotated[
        list[str] | None,
        typer.Option(
            "--mode", help=f"Run only this mode (repeatable): {', '.join(MODES)}."
        ),
    ] = None,
    trial: Annotated[
        int | None,
        typer.Option(
            help="Run only this trial of the workload, socket or schedules mode (a replay)."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Hunt lost, resurrected and leaked memory under concurrency, crashes and faults.

    Works in the data directory given by --data, which must not hold a memory: every
    trial gets a fresh directory inside it, kept only when it found a violation.
    Exit 0 when every invariant held, 1 when one did not (the report names the seed
    and the shortest history that shows it).
    """
    cli: CliContext = context.obj
    chosen = PROFILES.get(profile)
    modes = tuple(mode or MODES)
    unknown = [name for name in modes if name not in MODES]

    async def body() -> int:
        if chosen is None:
            raise InvalidInputError(
                f"no stress profile {profile!r}; choose one of {', '.join(PROFILES)}"
            )
        if unknown:
            raise InvalidInputError(
                f"no stress mode {', '.join(unknown)}; choose from {', '.join(MODES)}"
            )
        root: Path = cli.data
        if await trio.Path(root / DATABASE_NAME).exists():
            raise InvalidInputError(
                f"{root} holds a cairn memory; give the stress harness a directory of"
                " its own (it creates and removes trial directories there)"
            )
        used_seed = secrets.randbits(31) if seed is None else seed
        progress = stderr_console()
        progress.print(f"cairn stress: seed {used_seed}, profile {chosen.name}")
        await trio.Path(root).mkdir(parents=True, exist_ok=True)
        report = await run_stress(
            root / f"stress-{chosen.name}-{used_seed}",
            used_seed,
            chosen,
            modes=modes,
            trial=trial,
            progress=lambda line: progress.print(shown(line)),
        )
        if as_json:
            emit_json(report.as_json())
        else:
            _print(report)
        return EXIT_OK if report.ok else EXIT_FAILED

    run(body)
