"""An asyncio program that embeds cairn (trio guest mode on the asyncio loop).

    python examples/asyncio_host.py /tmp/cairn-example

The asyncio side stays responsive: a heartbeat task keeps ticking while cairn ingests,
extracts and recalls in the same thread's loop and in its worker threads.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import cairn
from cairn.hosts.asyncio_host import open_asyncio_memory

if TYPE_CHECKING:
    from cairn.providers.embedding import EmbeddingProvider


async def main(data_dir: Path, embedder: EmbeddingProvider | None = None) -> list[str]:
    """Ingest a short conversation and answer a question; returns the recalled texts."""
    beats = 0

    async def heartbeat() -> None:
        nonlocal beats
        while True:
            beats += 1
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(heartbeat())
    async with open_asyncio_memory(data_dir, embedder=embedder) as memory:
        await memory.ingest(
            "example",
            [
                cairn.Turn("t1", "s1", "user", "I love oolong tea.", speaker="Mei"),
                cairn.Turn(
                    "t2", "s1", "user", "I moved to Lisbon in May.", speaker="Mei"
                ),
            ],
        )
        await memory.wait_idle("example")
        recall = await memory.recall("example", "What does Mei drink?", wait_s=30.0)
    ticker.cancel()
    print(f"asyncio heartbeats while cairn worked: {beats}")
    return [item.text for item in recall.items]


if __name__ == "__main__":
    for text in asyncio.run(
        main(Path(sys.argv[1] if len(sys.argv) > 1 else "cairn-data"))
    ):
        print(text)
