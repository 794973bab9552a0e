"""Junk retained in recall, and valid facts kept, on a labelled English and Chinese corpus.

Every turn of ``bench/evidence_noise.jsonl`` (heartbeats, bare acknowledgements, log lines,
tracebacks, progress output, wordless turns, and valid facts with hard cases that look like
noise) is ingested through the public API, one session per turn so that no turn is found
through another's words, with the hashing embedder. Then each turn's own probe query is
recalled (k = 10): a junk turn is *retained* when its ID comes back, a valid fact is *kept*
when it does. Prints one JSON object: both rates overall, per class and per language, the
same with ``include_noise=True`` where the engine has it, and the intake classifier's
precision and recall for noise where the engine has one (``split`` says which rows were
written after the classifier, as a held-out check).

    python bench/evidence_noise.py [--corpus FILE] [--k 10]

Runs against whatever ``cairn`` is importable, so the same script measures the engine
before the classifier (``PYTHONPATH=<checkout of main>/src``) and after.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import inspect
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

from cairn import MemoryConfig, Turn, open_memory
from cairn.testing import FixedDomainClock, HashingEmbedder

CORPUS = Path(__file__).with_name("evidence_noise.jsonl")
AT = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]


def _rate(hits: list[bool]) -> float | None:
    return None if not hits else round(sum(hits) / len(hits), 4)


def _rates(rows: list[dict[str, Any]], found: dict[str, bool]) -> dict[str, Any]:
    """Found share per class, per language and per (language, class)."""
    groups: dict[str, list[bool]] = collections.defaultdict(list)
    for row in rows:
        hit = found[row["id"]]
        groups[row["label"]].append(hit)
        groups[f"lang:{row['lang']}"].append(hit)
        groups[f"{row['lang']}:{row['label']}"].append(hit)
    return {name: _rate(hits) for name, hits in sorted(groups.items())}


def _classifier(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    try:
        from cairn.domain.evidence import EventKind
        from cairn.ingestion.classify import classify_turn
    except ImportError:
        return None
    report: dict[str, Any] = {}
    for split in ("all", "corpus", "heldout"):
        chosen = [
            r for r in rows if split == "all" or r.get("split", "corpus") == split
        ]
        if not chosen:
            continue
        counts = collections.Counter()
        exact = 0
        misses = []
        for row in chosen:
            got = classify_turn(row["text"], EventKind(row["kind"])).value
            noise, said = row["label"] != "content", got != "content"
            counts[noise, said] += 1
            exact += got == row["label"]
            if got != row["label"]:
                misses.append({"id": row["id"], "label": row["label"], "got": got})
        true_positive = counts[True, True]
        report[split] = {
            "turns": len(chosen),
            "noise_precision": round(
                true_positive / max(1, true_positive + counts[False, True]), 4
            ),
            "noise_recall": round(
                true_positive / max(1, true_positive + counts[True, False]), 4
            ),
            "class_accuracy": round(exact / len(chosen), 4),
            "misses": misses,
        }
    return report


async def measure(rows: list[dict[str, Any]], k: int) -> dict[str, Any]:
    noisy_option = _has_include_noise()
    config = MemoryConfig(recall_wait_s=600.0, budget_bytes=1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        async with open_memory(
            Path(tmp),
            config,
            clock=FixedDomainClock(AT),
            embedder=HashingEmbedder(),
        ) as memory:
            turns = [
                Turn(
                    row["id"],
                    f"s-{row['id']}",
                    row["role"],
                    row["text"],
                    AT,
                    None,
                    row["kind"],
                )
                for row in rows
            ]
            await memory.ingest("bench", turns)
            await memory.wait_idle("bench")

            async def found(**options: Any) -> dict[str, bool]:
                result = {}
                for row in rows:
                    recall = await memory.recall("bench", row["query"], k=k, **options)
                    refs = {
                        ref
                        for item in recall.items
                        for ref in (item.id, *item.source_refs)
                    }
                    result[row["id"]] = row["id"] in refs
                return result

            plain = await found()
            asked = await found(include_noise=True) if noisy_option else None
            status = await memory.status()
            stored_noise = getattr(status.agent("bench"), "events_noise", None)
    junk = [r for r in rows if r["label"] != "content"]
    valid = [r for r in rows if r["label"] == "content"]
    hard = [r for r in valid if r.get("hard")]
    report: dict[str, Any] = {
        "turns": len(rows),
        "junk_turns": len(junk),
        "valid_turns": len(valid),
        "k": k,
        "junk_retained": _rate([plain[r["id"]] for r in junk]),
        "valid_kept": _rate([plain[r["id"]] for r in valid]),
        "hard_cases_kept": _rate([plain[r["id"]] for r in hard]),
        "junk_retained_by": _rates(junk, plain),
        "valid_kept_by": _rates(valid, plain),
        "valid_missed": [r["id"] for r in valid if not plain[r["id"]]],
        "stored_as_noise": stored_noise,
    }
    if asked is not None:
        report["with_include_noise"] = {
            "junk_found": _rate([asked[r["id"]] for r in junk]),
            "valid_kept": _rate([asked[r["id"]] for r in valid]),
        }
    report["classifier"] = _classifier(rows)
    return report


def _has_include_noise() -> bool:
    from cairn import Memory

    return "include_noise" in inspect.signature(Memory.recall).parameters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    report = trio.run(measure, load(args.corpus), args.k)
    json.dump(report, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
