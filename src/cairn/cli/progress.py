"""Progress bars for long work: on stderr, only on a terminal, never in ``--json`` mode."""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from cairn.cli.terminal import visible

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["Bar", "progress_bar", "shows_progress"]


def _is_terminal() -> bool:
    return sys.stderr.isatty()


def shows_progress(as_json: bool) -> bool:
    return not as_json and _is_terminal()


class Bar:
    """Advance with :meth:`advance`; a disabled bar ignores every call."""

    def __init__(self, progress: Progress | None, total: float | None) -> None:
        self._progress = progress
        self._task = None if progress is None else progress.add_task("", total=total)

    def advance(self, amount: float = 1) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, amount)

    def update_to(self, completed: float, total: float | None) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=completed, total=total)


@contextlib.contextmanager
def progress_bar(
    description: str, total: float | None, *, as_json: bool
) -> Iterator[Bar]:
    if not shows_progress(as_json):
        yield Bar(None, total)
        return
    # The description names a file: shown as text, never as markup or a format string.
    literal = visible(description).replace("{", "{{").replace("}", "}}")
    columns = (
        TextColumn(literal, markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    console = Console(file=sys.stderr, force_terminal=True)
    with Progress(*columns, console=console, transient=True) as progress:
        yield Bar(progress, total)
