"""``status``: counts, epochs, pending clear jobs per agent; runtime state of live agents;
whether the configured embedding provider answers.

When no runtime can open (a data directory this process cannot write, an embedding
provider that is down with no dimension configured), the stored counts alone, read-only
(cairn.cli.reading)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import trio
import typer
from rich.table import Table
from rich.text import Text

from cairn.cli.app import EXIT_OK, CliContext, JsonOption, app, emit_json, run
from cairn.cli.app import stdout_console as console
from cairn.cli.read_only import stored_status
from cairn.cli.reading import Stored, degraded_of, open_live_or_stored
from cairn.cli.target import open_target
from cairn.cli.terminal import shown, visible
from cairn.domain.ids import AgentId
from cairn.providers.settings import load_embedding_settings
from cairn.runtime.providers import SharedHttpClient, embedder_reachability
from cairn.runtime.threads import run_in_thread
from cairn.store.agents import agent_epochs
from cairn.store.clear_jobs import pending_clear_jobs
from cairn.store.embeddings import embeddings_by_identity

if TYPE_CHECKING:
    from cairn.api.status import AgentStatus
    from cairn.cli.target import Target

__all__ = ["probe_embedder", "read_status"]


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


async def probe_embedder(cli: CliContext) -> tuple[bool | None, str | None]:
    """Whether the HTTP embedder the data directory's configuration selects answers
    (one request), and if not why; ``(None, None)`` for the local model, which is in
    the process that runs it and is never loaded just to say so.

    The configuration read is this process's (``cairn.toml`` of the data directory and
    this environment): beside a server started with another environment the answer is
    about this one's."""
    settings = await run_in_thread(
        lambda: load_embedding_settings(cli.data), limiter=trio.CapacityLimiter(1)
    )
    # An embedder given to the context (tests) is what serves, not the configured one.
    if settings.provider == "local" or cli.embedder is not None:
        return None, None
    http = SharedHttpClient()
    try:
        error = await embedder_reachability(settings, http)
    finally:
        await http.aclose()
    return error is None, error


def _embedder_line(status: dict[str, Any]) -> str:
    embedder = status["embedder"]
    if embedder is None:
        serving = "not loaded (stored counts only)"
    else:
        serving = (
            f"{visible(embedder['provider'])} {visible(embedder['model'])}"
            f" ({embedder['dimension']} dimensions)"
        )
    if status["embedder_reachable"] is False:
        serving += f"; provider unreachable: {visible(status['embedder_error'])}"
    elif status["embedder_reachable"]:
        serving += "; provider reachable"
    return serving


def _print(status: dict[str, Any]) -> None:
    out = console()
    out.print(
        Text(f"data: {visible(status['data_dir'])}\nembedder: {_embedder_line(status)}")
    )
    for line in status["degraded"]:
        out.print(Text(f"degraded: {visible(line)}"))
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
        async with open_live_or_stored(cli, lambda: open_target(cli)) as opened:
            if isinstance(opened, Stored):
                report = await stored_status(opened.data)
            else:
                report = await read_status(opened)
        reachable: bool | None = False
        error = opened.embedder_error if isinstance(opened, Stored) else None
        if error is None:  # not known to be down yet: ask it
            reachable, error = await probe_embedder(cli)
        report.update(
            embedder_reachable=reachable,
            embedder_error=error,
            degraded=degraded_of(opened),
        )
        if as_json:
            emit_json(report)
        else:
            _print(report)
        return EXIT_OK

    run(body)
