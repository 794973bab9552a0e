"""Forgets (or clears) agent "a" and SIGKILLs its own process at a named scrub step.

Usage: ``python scrub_driver.py DATA_DIR STEP forget|clear`` where STEP is a step of the
runtime's scrubber ("purge", "checkpoint", "settle"): the kill happens from its observer,
before that step runs, so the forget or clear has committed and what came before the step
is done. The secret texts are in tests/runtime/test_scrub_crash.py.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import trio

from cairn import MemoryConfig, Turn, open_memory
from cairn.domain.ids import EventId, SessionId
from cairn.runtime.core import runtime_core
from cairn.testing import FixedDomainClock, HashingEmbedder

# A forget forgets the first; a clear clears both. Agent "b"'s turn stays either way.
SECRETS = (
    "Zanzibarquokka ledgers hide the vexillumtrombone password",
    "The Quillonberry orchard belongs to Marmaladeworks",
)
TURN = "I spend my Sundays gardening."


async def main(data_dir: Path, step: str, operation: str) -> None:
    config = MemoryConfig(
        recall_wait_s=60.0, embed_linger_s=0.001, maintenance_interval_s=3600
    )
    async with open_memory(
        data_dir, config, clock=FixedDomainClock(), embedder=HashingEmbedder()
    ) as memory:
        clock = FixedDomainClock()
        await memory.ingest(
            "b",
            [Turn(EventId("e1"), SessionId("s1"), "user", TURN, clock.now(), "Ana")],
        )
        claims = [await memory.remember("a", text, by="user") for text in SECRETS]
        recall = await memory.recall("a", "Zanzibarquokka Quillonberry", k=5)
        assert "Zanzibarquokka" in recall.memory_block
        await memory.wait_idle("a")
        supervisor = await runtime_core(memory).registry.get("a")
        await supervisor.run_maintenance_pass()  # the projection file is published

        def observe(name: str) -> None:
            if name == step:
                sys.stdout.write(f"killing at {name}\n")
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)

        runtime_core(memory).scrubber.observer = observe
        if operation == "clear":
            await memory.clear("a")
        else:
            assert claims[0].claim_id is not None
            await memory.forget("a", claims[0].claim_id)
        await runtime_core(memory).scrubber.wait_settled()
    sys.stdout.write(f"{operation} finished without reaching {step}\n")


if __name__ == "__main__":
    trio.run(main, Path(sys.argv[1]), sys.argv[2], sys.argv[3])
