"""Forgetting and privacy, tried as a user would: one check per finding; prints JSON.

Usage: ``python bench/forgetting_findings.py``. Each check drives the public embedded API
only (``remember``, ``ingest``, ``recall``, ``forget``, ``clear``, export and import), with
the deterministic hashing embedder and fresh data directories, and reports ``true`` when
the promise holds. It uses nothing newer than the API of earlier versions, so the same
script scores an older checkout (``PYTHONPATH=<older>/src python bench/...``): the before
and after of a change. The tests (tests/runtime/test_forget_evidence.py and
test_redaction_paths.py) pin each promise; this is the user's view of them.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from pathlib import Path
from typing import Any

import trio

from cairn import MemoryConfig, Turn, open_memory
from cairn.domain.ids import EventId, SessionId
from cairn.domain.scope import Scope
from cairn.runtime.transfer import export_memory, import_memory
from cairn.testing import FixedDomainClock, HashingEmbedder

AT = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
SECRETS = {
    "My password for the VPN is hunter2-Ravi!99": "hunter2",
    "export OPENAI_API_KEY=sk-proj-Qx7mN2pL9vR4tY6uI8oP0aS3dF5gH1jK": "Qx7mN2",
    "DATABASE_PASSWORD=Pr0dDbPass2024": "Pr0dDbPass",
    '{"password": "s3cr3tP@ss"}': "s3cr3tP",
    "the password for the wifi is correcthorse7": "correcthorse7",
    "wifi密码 abc12345": "abc12345",
    "my PIN is 0912": "0912",
}


def _turn(event_id: str, text: str) -> Turn:
    return Turn(EventId(event_id), SessionId("s1"), "user", text, AT, "Ana")


def _open(directory: str) -> Any:
    return open_memory(
        Path(directory),
        MemoryConfig(),
        clock=FixedDomainClock(),
        embedder=HashingEmbedder(),
    )


async def _forget_a_recalled_turn(memory: Any) -> bool:
    frog = "I keep my spare house key under the ceramic frog."
    await memory.ingest("a", [_turn("f1", frog), _turn("f2", "Nobody would look.")])
    await memory.wait_idle("a")
    shown = await memory.recall("a", "spare house key", k=5)
    item = next(i for i in shown.items if "frog" in i.text)
    try:
        await memory.forget("a", item.id)
    except Exception:  # noqa: BLE001 - an older version refuses a turn's ID
        return False
    after = await memory.recall("a", "ceramic frog spare house", k=10)
    return "frog" not in after.memory_block


async def _scopes(memory: Any) -> bool:
    text = "The review meeting moved to Thursday."
    session = await memory.remember("a", text, scope=Scope.session("s1"), by="user")
    agent = await memory.remember("a", text, by="user")
    return bool(session.claim_id != agent.claim_id)


async def _near_copies(memory: Any) -> bool:
    stored = await memory.remember(
        "a", "The locker code is behind the blue door.", by="user"
    )
    await memory.forget("a", stored.claim_id)
    variants = (
        "The locker code is behind the blue door!",
        "Note: the locker code is behind the blue door.",
        "The locker\u200b code is behind the blue door.",
    )
    outcomes = [(await memory.remember("a", v, by="model")).outcome for v in variants]
    return all(outcome.value == "suppressed" for outcome in outcomes)


async def _import_after_forget(memory: Any, directory: str) -> bool:
    await memory.ingest("b", [_turn("k1", "My boat is called Zephyrine Marlowe.")])
    await memory.wait_idle("b")
    path = Path(directory) / "export.jsonl"
    with path.open("w", encoding="utf-8") as sink:
        await export_memory(memory, sink, "b")
    try:
        await memory.forget("b", "k1")
    except Exception:  # noqa: BLE001 - an older version: forget what it can
        shown = await memory.recall("b", "boat Zephyrine", k=5)
        for item in shown.items:
            if item.kind != "evidence":
                await memory.forget("b", item.id)
    await import_memory(memory, path)
    after = await memory.recall("b", "boat Zephyrine Marlowe", k=5)
    return "Zephyrine" not in after.memory_block


async def _clear(memory: Any) -> bool:
    await memory.ingest("c", [_turn("c1", "I live in Lisbon and love ramen.")])
    await memory.wait_idle("c")
    await memory.clear("c")
    return not (await memory.recall("c", "Lisbon ramen", k=5)).items


async def _secrets(memory: Any) -> dict[str, bool]:
    turns = [_turn(f"p{i}", text) for i, text in enumerate(SECRETS)]
    await memory.ingest("d", turns)
    await memory.remember(
        "d",
        "the user's OpenAI key is sk-proj-Zz7mN2pL9vR4tY6uI8oP0aS3dF5gH1jK",
        by="model",
    )
    await memory.wait_idle("d")
    shown = await memory.recall("d", "password key PIN wifi 密码", k=20)
    block = shown.memory_block
    held = {text: value not in block for text, value in SECRETS.items()}
    held["a model's remember of an OpenAI key"] = "Zz7mN2" not in block
    return held


async def _run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        async with _open(directory) as memory:
            results: dict[str, Any] = {
                "forget a recalled turn by its item ID": await _forget_a_recalled_turn(
                    memory
                ),
                "the same text in two scopes is two memories": await _scopes(memory),
                "a model's near-copies of a forgotten claim stay out": await _near_copies(
                    memory
                ),
                "an import of an older export does not resurrect": (
                    await _import_after_forget(memory, directory)
                ),
                "a clear leaves nothing of the agent to recall": await _clear(memory),
                "secrets never reach the memory block": await _secrets(memory),
            }
    secrets = results["secrets never reach the memory block"]
    flat = [v for k, v in results.items() if isinstance(v, bool)] + list(
        secrets.values()
    )
    results["held"] = f"{sum(flat)}/{len(flat)}"
    return results


def main() -> None:
    print(json.dumps(trio.run(_run), ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
