"""The ``cairn`` command line on a disk that fills up once every line is stored.

    python tests/cli/full_disk_cairn.py --data DIR ingest --agent A FILE --json

runs the real command line with the hashing embedder, every SQLite file of the runtime
opened through the fault VFS (cairn.stress.vfs). The first wait for idle, which
``cairn ingest`` makes after every line of the file is stored, first arms a persistent
``SQLITE_FULL`` on every write: a disk that filled up while the background extraction
was about to commit. Nothing else is changed; the exit code and output are the command's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import apsw

ENTRY_POINT = Path(__file__).resolve()


def full_disk_cairn(*args: str) -> list[str]:
    """The command that runs ``cairn ARGS`` on a disk full from its first wait for idle."""
    return [sys.executable, str(ENTRY_POINT), *args]


def main() -> None:
    from cairn.cli.app import CliContext
    from cairn.cli.main import app
    from cairn.config import MemoryConfig
    from cairn.runtime.memory import Memory
    from cairn.stress.vfs import Call, FaultPlan, FaultVFS
    from cairn.testing import HashingEmbedder

    vfs = FaultVFS("cairn-full-disk")
    waiting = Memory.wait_idle

    async def wait_idle(memory: Memory, agent_id: str | None = None) -> None:
        vfs.arm(FaultPlan.on(Call.WRITE, None, persistent=True, error=apsw.SQLITE_FULL))
        await waiting(memory, agent_id)

    Memory.wait_idle = wait_idle  # type: ignore[method-assign]
    app(
        args=sys.argv[1:],
        prog_name="cairn",
        obj=CliContext(config=MemoryConfig(vfs=vfs.name), embedder=HashingEmbedder),
    )


if __name__ == "__main__":
    main()
