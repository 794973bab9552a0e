"""One writing process per data directory, embedded runtimes included: ``open_memory`` on a
directory another process holds (a server, a CLI command, another embedding program) is
refused with DataDirectoryInUseError and opens nothing; inside the holding process it
goes ahead; the lock is released when the runtime closes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import trio
from tests.conftest import open_test_memory

from cairn.errors import DataDirectoryInUseError

HOLDER = """
import sys, trio
from cairn import open_memory
from cairn.testing import HashingEmbedder

async def main():
    async with open_memory(sys.argv[1], embedder=HashingEmbedder()):
        print("open", flush=True)
        sys.stdin.readline()

trio.run(main)
"""


async def test_a_directory_another_process_writes_is_refused(data_dir: Path) -> None:
    holder = subprocess.Popen(  # noqa: ASYNC220 - a real second process holds the lock
        [sys.executable, "-c", HOLDER, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        with trio.fail_after(60):
            line = await trio.to_thread.run_sync(holder.stdout.readline)  # noqa: TID251
        assert line.strip() == "open"
        with pytest.raises(DataDirectoryInUseError, match=f"pid {holder.pid}"):
            async with open_test_memory(data_dir):
                pass  # pragma: no cover - refused before it opens
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=60)
        # Closed here, not by the garbage collector in some later test.
        holder.stdin.close()
        if holder.stdout is not None:
            holder.stdout.close()
    # Released with the other runtime: this process may open it now.
    async with open_test_memory(data_dir) as memory:
        assert (await memory.status()).agents == ()
