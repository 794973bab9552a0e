"""``status``: counts, epochs, pending clear jobs per agent; runtime state of live agents.

On a data directory this process cannot write, the stored counts alone, read-only
(cairn.cli.read_only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import typer
from rich.table import Table
from rich.text import Text

from cairn.cli.app import EXIT_OK, CliContext, JsonOption, app, emit_json, run
from cairn.cli.app import stdout_console as console
from cairn.cli.read_only import open_stored, stored_status
from cairn.cli.target import open_target
from cairn.cli.terminal import shown, visible
from cairn.domain.ids import AgentId
from cairn.errors import ReadOnlyDataDirectoryError
from cairn.store.agents import agent_epochs
from cairn.store.clear_jobs import pending_clear_jobs
from cairn.store.embeddings import embeddings_by_identity

if TYPE_CHECKING:
    from cairn.api.status import AgentStatus
    from cairn.cli.target import Target

__all__ = ["read_status"]


def _agent_json(entry: AgentStatus) -> dict[str, Any]:
    """One ``AgentStatus`` in the documented JSON shape (its statistics as ``runtime``)."""
    data = attrs.asdict(entry)
    del data["agent_id"]
    data["runtime"] = data.pop("statistics")
    data["live"] = entry.statistics is not None
    return data


async def read_status(target: Target) -> dict[str, Any]:
    """``Memory.status()`` plus, for every agent, its stored epoch and pending clear jobs.

    Agents the runtime runs (``live``: this process's, or the server's when the status
    comes from a server) also carry ``runtime``, ``query_breaker`` and
    ``vector_identity`` (the projection serving); for the others those are ``null``.
    ``stored_vectors`` counts the stored vectors of each embedding identity.
    """
    status = await target.calls.status()
    epochs, jobs, vectors = await target.read(
        lambda connection: (
            agent_epochs(connection),
            pending_clear_jobs(connection),
            embeddings_by_identity(connection),
        )
    )
    agents: dict[str, Any] = {}
    for agent_status in status.agents:
        agent = agent_status.agent_id
        entry = agents[agent] = _agent_json(agent_status)
        if not entry["live"]:
            entry["epoch"] = epochs.get(AgentId(agent), 0)
        entry["stored_vectors"] = vectors.get(agent, [])
        entry["clear_jobs_pending"] = [
            {k: v for k, v in job.as_json().items() if k != "agent_id"}
            for job in jobs
            if job.agent_id == agent
        ]
    return {
        "data_dir": status.data_dir,
        "embedder": attrs.asdict(status.embedder),
        "read_only": False,
        "agents": agents,
    }


def _print(status: dict[str, Any]) -> None:
    out = console()
    embedder = status["embedder"]
    serving = (
        "not loaded (read-only data directory: stored counts only)"
        if embedder is None
        else f"{visible(embedder['provider'])} {visible(embedder['model'])}"
        f" ({embedder['dimension']} dimensions)"
    )
    out.print(Text(f"data: {visible(status['data_dir'])}\nembedder: {serving}"))
    table = Table(
        "agent",
        "events",
        "pending extraction",
        "claims",
        "directives",
        "embeddings",
        "epoch",
        "clear jobs",
        "live",
    )
    for agent, entry in status["agents"].items():
        table.add_row(
            shown(agent),
            str(entry["events"]),
            str(entry["events_pending_extraction"]),
            str(entry["claims"]),
            str(entry["directives"]),
            str(entry["embeddings"]),
            str(entry["epoch"]),
            str(len(entry["clear_jobs_pending"])),
            "yes" if entry["live"] else "no",
        )
    out.print(table)


@app.command()
def status(context: typer.Context, as_json: JsonOption = False) -> None:
    """Counts, epoch and pending clear jobs per agent; runtime state of live agents."""
    cli: CliContext = context.obj

    async def body() -> int:
        try:
            async with open_target(cli) as target:
                report = await read_status(target)
        except ReadOnlyDataDirectoryError:
            # Nobody can write the directory: its stored counts, read-only.
            async with open_stored(cli) as stored:
                report = await stored_status(stored)
        if as_json:
            emit_json(report)
        else:
            _print(report)
        return EXIT_OK

    run(body)
