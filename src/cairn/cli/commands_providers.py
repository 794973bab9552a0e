"""``providers check``: try the configured embedder end to end."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import trio
import typer
from rich.table import Table
from rich.text import Text

from cairn.cli.app import (
    EXIT_FAILED,
    EXIT_OK,
    CliContext,
    JsonOption,
    app,
    emit_json,
    run,
    stdout_console,
)
from cairn.errors import ProviderContractError, ProviderError
from cairn.providers.settings import load_embedding_settings
from cairn.runtime.providers import open_embedder
from cairn.runtime.threads import Limiters, run_in_thread

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from cairn.providers.embedding import Vectors

__all__ = ["check_providers", "providers"]

providers = typer.Typer(help="The configured model providers.", no_args_is_help=True)
app.add_typer(providers, name="providers")


async def check_providers(data_dir: Path) -> dict[str, Any]:
    """Identity, a warm-up and a warm query, a small batch: timings or the failure."""
    limiters = Limiters()
    settings = await run_in_thread(
        lambda: load_embedding_settings(data_dir), limiter=limiters.store_write
    )
    report: dict[str, Any] = {"source": settings.source, "provider": settings.provider}
    try:
        async with open_embedder(settings, limiters) as embedder:
            identity = embedder.identity
            report["identity"] = attrs.asdict(identity)
            timings = {}
            calls: list[tuple[str, Callable[[], Awaitable[Vectors]]]] = [
                ("warm_up_ms", lambda: embedder.embed_query("cairn providers check")),
                ("query_ms", lambda: embedder.embed_query("what does the user like?")),
                ("batch_of_2_ms", lambda: embedder.embed_documents(["one", "two"])),
            ]
            for name, call in calls:
                started = trio.current_time()
                vectors = await call()
                timings[name] = round((trio.current_time() - started) * 1000, 1)
                if vectors.shape[-1] != identity.dimension:
                    raise ProviderContractError(
                        f"vectors have {vectors.shape[-1]} dimensions, not {identity.dimension}"
                    )
            report.update(timings, status="ok")
    except ProviderError as error:
        report.update(status="failed", error=str(error))
    return report


@providers.command("check")
def check(context: typer.Context, as_json: JsonOption = False) -> None:
    """Try the configured embedder: identity, warm-up, a query, a small batch."""
    cli: CliContext = context.obj

    async def body() -> int:
        report = await check_providers(cli.data)
        if as_json:
            emit_json(report)
        else:
            table = Table("", "", show_header=False, box=None)
            for key, value in report.items():
                table.add_row(key, Text(str(value)))
            stdout_console().print(table)
        return EXIT_OK if report["status"] == "ok" else EXIT_FAILED

    run(body)
