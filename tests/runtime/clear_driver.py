"""Runs a clear of agent "a" and SIGKILLs its own process at a named step.

Usage: ``python clear_driver.py DATA_DIR STEP DELETED [retire]`` where STEP is a clear step
("claims", "lineage", "vectors", "finish") and DELETED the job's deleted-claims count at
which to die ("-" for the first time the step is reached); ``retire`` runs a retire. The kill happens from the clear
actor's observer, before the step runs: everything committed so far stays committed.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import trio

from cairn import MemoryConfig, open_memory
from cairn.runtime.core import runtime_core
from cairn.store.clear_jobs import ClearJob
from cairn.testing import FixedDomainClock, HashingEmbedder


async def main(data_dir: Path, step: str, deleted: str, operation: str) -> None:
    config = MemoryConfig(
        recall_wait_s=60.0, embed_linger_s=0.001, maintenance_interval_s=3600
    )
    async with open_memory(
        data_dir, config, clock=FixedDomainClock(), embedder=HashingEmbedder()
    ) as memory:
        supervisor = await runtime_core(memory).registry.get("a")
        await supervisor.projection.caught_up.wait()

        def observe(name: str, job: ClearJob) -> None:
            if name == step and (deleted == "-" or job.deleted_claims == int(deleted)):
                sys.stdout.write(f"killing at {name} {job.deleted_claims}\n")
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)

        supervisor.clearing.observer = observe
        if operation == "retire":
            await memory.retire("a")
        else:
            await memory.clear("a")
    sys.stdout.write(f"{operation} finished without reaching the kill point\n")


if __name__ == "__main__":
    operation = sys.argv[4] if len(sys.argv) > 4 else "clear"
    trio.run(main, Path(sys.argv[1]), sys.argv[2], sys.argv[3], operation)
