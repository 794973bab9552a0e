"""Progress bars for long work: on stderr, only on a terminal, never in ``--json`` mode.

``ingest`` and ``import`` have two phases: reading the file (a bar over its bytes), then
waiting while the agents extract and embed what was stored (:func:`wait_idle_shown`: a
bar over the agents' outstanding work units, advancing as batches settle), so the bar
never sits at 100% while the slow part runs.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Final

import attrs
import trio
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from cairn.api.protocol import MemoryApi
from cairn.cli.terminal import visible
from cairn.errors import CairnError

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator


__all__ = [
    "Bar",
    "PipelineFollower",
    "progress_bar",
    "shows_progress",
    "wait_idle_shown",
]

# How often the pipeline bar asks the agents how much work is left.
PIPELINE_POLL_S: Final = 0.25


def _literal(description: str) -> str:
    """A description (it names a file) as text: never markup, controls made visible."""
    return visible(description)


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

    def describe(self, description: str) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, description=_literal(description))

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
    columns = (
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    console = Console(file=sys.stderr, force_terminal=True)
    with Progress(*columns, console=console, transient=True) as progress:
        bar = Bar(progress, total)
        bar.describe(description)
        yield bar


@attrs.define
class PipelineFollower:
    """Keeps a bar at how much of the agents' background work has settled.

    The work left is each agent's events pending extraction (stored rows) plus its
    outstanding work units (intake requests and embedding jobs queued); the total is the
    most ever seen (work accepted meanwhile raises it), the bar never moves back, and
    its label counts the vectors embedded since the follower started, so a long
    embedding phase is seen moving. Agents not running here count their stored pending
    rows only.
    """

    calls: MemoryApi
    agents: frozenset[str]
    bar: Bar
    label: str
    total: int = 0
    done: int = 0
    _vectors_at_start: int | None = None

    async def read(self) -> None:
        report = await self.calls.status()
        left = vectors = 0
        for entry in report.agents:
            if entry.agent_id not in self.agents:
                continue
            left += entry.events_pending_extraction
            if entry.statistics is not None:
                left += entry.statistics.outstanding_work
                vectors += entry.statistics.vectors_embedded
        if self._vectors_at_start is None:
            self._vectors_at_start = vectors
        self.total = max(self.total, self.done + left)
        self.done = max(self.done, self.total - left)
        embedded = vectors - self._vectors_at_start
        self.bar.describe(f"{self.label} ({embedded} vectors embedded)")
        self.bar.update_to(self.done, self.total)

    async def follow(self, poll_s: float = PIPELINE_POLL_S) -> None:
        """Read every ``poll_s`` until cancelled."""
        while True:
            await self.read()
            await trio.sleep(poll_s)

    def finish(self) -> None:
        """The wait returned: everything accepted has settled."""
        self.bar.update_to(self.total, self.total)


async def wait_idle_shown(
    calls: MemoryApi, agents: Iterable[str], description: str, *, as_json: bool
) -> None:
    """``calls.wait_idle`` for each agent, with a bar following their work on a
    terminal (:class:`PipelineFollower`); without a bar it only waits."""
    agents = list(agents)
    if not shows_progress(as_json):
        for agent in agents:
            await calls.wait_idle(agent)
        return
    failure: Exception | None = None
    with progress_bar(description, None, as_json=as_json) as bar:
        follower = PipelineFollower(calls, frozenset(agents), bar, description)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_follow_quietly, follower)
            try:
                for agent in agents:
                    await calls.wait_idle(agent)
            # Raised as it is after the bar is gone, not wrapped in the nursery's
            # group: callers catch PipelineStalledError and the other typed errors.
            except Exception as error:  # noqa: BLE001
                failure = error
            else:
                follower.finish()
            finally:
                nursery.cancel_scope.cancel()
    if failure is not None:
        raise failure


async def _follow_quietly(follower: PipelineFollower) -> None:
    """The bar is a courtesy: if asking for status fails, the bar stops, the wait
    goes on (and meets the failure itself if it is real)."""
    with contextlib.suppress(CairnError):
        await follower.follow()
