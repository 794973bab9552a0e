"""``providers check``: try the configured embedder and text provider end to end."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    stdout_console,
)
from cairn.cli.terminal import shown
from cairn.errors import ProviderError
from cairn.providers.check import check_embedder, check_text_provider
from cairn.providers.settings import load_embedding_settings, load_text_settings
from cairn.runtime.providers import (
    SharedHttpClient,
    build_embedder,
    build_text_provider,
)
from cairn.runtime.threads import Limiters, run_in_thread

if TYPE_CHECKING:
    from pathlib import Path


__all__ = ["check_providers", "providers"]

providers = typer.Typer(help="The configured model providers.", no_args_is_help=True)
app.add_typer(providers, name="providers")


async def check_providers(data_dir: Path) -> dict[str, Any]:
    """Try the configured embedder and text provider over one HTTP client, as the runtime
    would build them: identity, warm-up and warm latency, or the typed failure."""
    limiters = Limiters()
    embedding_settings, text_settings = await run_in_thread(
        lambda: (load_embedding_settings(data_dir), load_text_settings(data_dir)),
        limiter=limiters.store_write,
    )
    http = SharedHttpClient()
    try:
        try:
            embedder = await build_embedder(embedding_settings, limiters, http)
        except ProviderError as error:  # dimension discovery could not reach it
            embedding: dict[str, Any] = {
                "kind": "embedding",
                "provider": embedding_settings.provider,
                "model": embedding_settings.model,
                "ok": False,
                "error": {"type": type(error).__name__, "message": str(error)},
            }
        else:
            embedding = await check_embedder(embedder)
        text = await check_text_provider(build_text_provider(text_settings, http))
    finally:
        await http.aclose()
    ok = bool(embedding["ok"]) and bool(text["ok"])
    return {
        "status": "ok" if ok else "failed",
        "source": embedding_settings.source,
        "embedding": embedding,
        "text": text,
    }


@providers.command("check")
def check(context: typer.Context, as_json: JsonOption = False) -> None:
    """Try the configured embedder and text provider: identity and latency, or why not."""
    cli: CliContext = context.obj

    async def body() -> int:
        report = await check_providers(cli.data)
        if as_json:
            emit_json(report)
        else:
            table = Table("", "", show_header=False, box=None)
            for key, value in report.items():
                if isinstance(value, dict):
                    for inner, detail in value.items():
                        table.add_row(f"{key}.{inner}", shown(str(detail)))
                else:
                    table.add_row(key, shown(str(value)))
            stdout_console().print(table)
        return EXIT_OK if report["status"] == "ok" else EXIT_FAILED

    run(body)
