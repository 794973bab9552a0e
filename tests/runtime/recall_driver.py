"""Recalls once, prints the answer's request ID, and SIGKILLs its own process at once.

Usage: ``python recall_driver.py DATA_DIR``. Nothing runs between the recall returning and
the kill: no maintenance pass, no close, so only what the recall committed survives.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import trio

from cairn import MemoryConfig, Turn, open_memory
from cairn.testing import FixedDomainClock, HashingEmbedder


async def main(data_dir: Path) -> None:
    config = MemoryConfig(
        recall_wait_s=60.0, embed_linger_s=0.001, maintenance_interval_s=3600
    )
    async with open_memory(
        data_dir, config, clock=FixedDomainClock(), embedder=HashingEmbedder()
    ) as memory:
        await memory.ingest(
            "a", [Turn("e1", "s1", "user", "I adopted a grey cat called Miso.")]
        )
        await memory.wait_idle("a")
        answer = await memory.recall("a", "grey cat", session_id="s1", turn_id="t1")
        sys.stdout.write(
            json.dumps({"request_id": answer.request_id, "block": answer.memory_block})
            + "\n"
        )
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    trio.run(main, Path(sys.argv[1]))
