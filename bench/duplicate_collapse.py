"""Duplicate collapse on LoCoMo: claims per distinct fact before and after maintenance.

    python bench/duplicate_collapse.py [FOLDER] [--conversations N] [--sample N] [--seed S]

One agent per conversation (bench/locomo.py's loading), the rule extractor and the hashing
embedder; every turn is ingested and extracted, then maintenance runs until no dirty claim
is left (phase ``as_ingested``). Then every turn a claim was learned from is said again,
a day later in a session of its own, with "really" after its first "I" (phase
``restated``: near-duplicates the conversation itself rarely holds), and maintenance
settles again. Prints one JSON object, per phase:

- ``before`` / ``after``: claims recall can show (active, and superseded ones as
  history), distinct facts and claims per distinct fact, by
  two measures of "the same fact": ``exact`` (the tombstone normal form of the text, per
  scope: what intake already deduplicates) and ``core`` (the merge rule's core tokens as a
  multiset, per scope and kind family: word order, intensifiers and light verbs aside);
- ``merges``, ``maintenance_passes``: merges done in the phase, passes it took;

``kept_apart``: claims still sharing their core words after maintenance; and
``sample``: up to ``--sample`` merged pairs (survivor text, absorbed text), drawn with
  ``--seed``, for a precision check by reading them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import DEFAULT_FOLDER, conversation_turns

from cairn import MemoryConfig, Turn, open_memory
from cairn.maintenance.duplicates import wording
from cairn.runtime.core import runtime_core
from cairn.store.tombstones import normal_form
from cairn.testing import FixedDomainClock, HashingEmbedder

_FAMILY = {"state": "fact"}
_FIRST_I = re.compile(r"\bI\s+(?!really\b)")


def _claims(connection: Any, agent: str) -> dict[int, tuple[str, str, str, str | None]]:
    return {
        int(rowid): (str(text), str(kind), str(scope), scope_key)
        for rowid, text, kind, scope, scope_key in connection.execute(
            "SELECT rowid, text, kind, scope, scope_key FROM claims"
            " WHERE agent_id = ? AND lifecycle IN ('active', 'superseded')",
            (agent,),
        )
    }


def _core_groups(
    claims: dict[int, tuple[str, str, str, str | None]],
) -> dict[tuple[object, ...], list[str]]:
    groups: dict[tuple[object, ...], list[str]] = {}
    for text, kind, scope, key in claims.values():
        core = tuple(sorted(wording(text).core))
        groups.setdefault((scope, key, _FAMILY.get(kind, kind), core), []).append(text)
    return groups


def _collapse(claims: dict[int, tuple[str, str, str, str | None]]) -> dict[str, Any]:
    exact = {(scope, key, normal_form(text)) for text, _, scope, key in claims.values()}
    core = _core_groups(claims)
    count = len(claims)
    return {
        "claims": count,
        "distinct_exact": len(exact),
        "distinct_core": len(core),
        "claims_per_fact_exact": round(count / len(exact), 4) if exact else None,
        "claims_per_fact_core": round(count / len(core), 4) if core else None,
    }


def _restated(turns: list[Turn], cited: set[str]) -> list[Turn]:
    """Each turn a claim was learned from, said again a day after the conversation in a
    session of its own with "really" after its first "I" (turns without one are left
    out): a restatement the extractor turns into a near-duplicate claim."""
    if not turns:
        return []
    later = max(t.at for t in turns if t.at is not None) + dt.timedelta(days=1)
    again = []
    for index, original in enumerate(t for t in turns if t.event_id in cited):
        text, changed = _FIRST_I.subn("I really ", original.text, count=1)
        if changed:
            again.append(
                attrs.evolve(
                    original,
                    event_id=f"{original.event_id}-again",
                    session_id="restated",
                    text=text,
                    at=later + dt.timedelta(seconds=index),
                )
            )
    return again


async def _settle(memory: Any, agent: str) -> int:
    """Maintenance passes until no dirty claim is left; returns how many."""
    core = runtime_core(memory)
    supervisor = await core.registry.get(agent)
    passes = 0
    while await core.database.read(
        lambda reader: reader.connection.execute(
            "SELECT count(*) FROM dirty_work WHERE agent_id = ?", (agent,)
        ).fetchone()[0]
    ):
        await supervisor.run_maintenance_pass()
        passes += 1
    return passes


def _merged_pairs(connection: Any, agent: str) -> set[tuple[int, int]]:
    return {
        (int(s), int(a))
        for s, a in connection.execute(
            "SELECT survivor_rowid, absorbed_rowid FROM claim_merges WHERE agent_id = ?",
            (agent,),
        )
    }


def _cited(connection: Any, agent: str) -> set[str]:
    return {
        str(row[0])
        for row in connection.execute(
            "SELECT DISTINCT e.event_id FROM claims c JOIN claim_sources s"
            " ON s.claim_rowid = c.rowid JOIN events e ON e.rowid = s.event_rowid"
            " WHERE c.agent_id = ? AND c.lifecycle = 'active'",
            (agent,),
        )
    }


async def run(
    folder: Path, conversations: int | None, sample: int, seed: int
) -> dict[str, Any]:
    files = sorted(folder.glob("*.json"))[:conversations]
    config = MemoryConfig(maintenance_interval_s=3600.0, recall_wait_s=60.0)
    phases = ("as_ingested", "restated")
    measured: dict[str, dict[str, dict[int, Any]]] = {
        phase: {"before": {}, "after": {}} for phase in phases
    }
    texts: dict[int, str] = {}
    pairs: dict[str, list[tuple[str, str]]] = {phase: [] for phase in phases}
    passes = dict.fromkeys(phases, 0)
    started = time.perf_counter()
    settle_s = 0.0
    with tempfile.TemporaryDirectory(prefix="cairn-collapse-") as scratch:
        clock = FixedDomainClock(dt.datetime(2024, 1, 1, tzinfo=dt.UTC))
        async with open_memory(
            Path(scratch), config, clock=clock, embedder=HashingEmbedder()
        ) as memory:
            database = runtime_core(memory).database
            for path in files:
                agent = path.stem
                turns = conversation_turns(json.loads(path.read_text(encoding="utf-8")))
                batch = turns
                for phase in phases:
                    if phase == "restated":
                        batch = _restated(
                            turns,
                            await database.read(
                                lambda reader, agent=agent: _cited(
                                    reader.connection, agent
                                )
                            ),
                        )
                    await memory.ingest(agent, batch)
                    await memory.wait_idle(agent)
                    claims, known = await database.read(
                        lambda reader, agent=agent: (
                            _claims(reader.connection, agent),
                            _merged_pairs(reader.connection, agent),
                        )
                    )
                    texts |= {rowid: row[0] for rowid, row in claims.items()}
                    measured[phase]["before"] |= claims
                    settling = time.perf_counter()
                    passes[phase] += await _settle(memory, agent)
                    settle_s += time.perf_counter() - settling
                    left, merged = await database.read(
                        lambda reader, agent=agent: (
                            _claims(reader.connection, agent),
                            _merged_pairs(reader.connection, agent),
                        )
                    )
                    measured[phase]["after"] |= left
                    pairs[phase].extend(
                        (texts[s], texts[a])
                        for s, a in sorted(merged - known)
                        if s in texts and a in texts
                    )
    shuffled = [(phase, pair) for phase in phases for pair in pairs[phase]]
    random.Random(seed).shuffle(shuffled)
    return {
        "conversations": [path.stem for path in files],
        "extractor": "rules",
        "embedder": "hashing",
        **{
            phase: {
                "before": _collapse(measured[phase]["before"]),
                "after": _collapse(measured[phase]["after"]),
                "merges": len(pairs[phase]),
                "maintenance_passes": passes[phase],
            }
            for phase in phases
        },
        "seconds": {
            "total": round(time.perf_counter() - started, 1),
            "maintenance": round(settle_s, 1),
        },
        "sample": [
            {"phase": phase, "survivor": s, "absorbed": a}
            for phase, (s, a) in shuffled[:sample]
        ],
        # Claims still sharing their core words after maintenance: what the rule kept
        # apart (a different time, trust or attribute), for reading.
        "kept_apart": [
            group
            for group in _core_groups(measured["restated"]["after"]).values()
            if len(group) > 1
        ][:sample],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER)
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--sample", type=int, default=30)
    parser.add_argument("--seed", type=int, default=14)
    arguments = parser.parse_args()
    result = trio.run(
        run, arguments.folder, arguments.conversations, arguments.sample, arguments.seed
    )
    json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
