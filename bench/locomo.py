"""Retrieval benchmark on LoCoMo-format conversations.

One agent per conversation; every turn is ingested as an event with its ``dia_id`` as ID and
its session date as ``at``; each question (categories 1-4) is recalled; ranked items are
expanded to their ``source_refs`` in order and cut at k distinct event IDs. Prints one JSON
object: recall@k and hit@k (k = 5, 10, 20) per category and overall, ingest time, recall
latency p50/p95.

    python bench/locomo.py [FOLDER] [--conversations N] [--embedder local|hashing|none]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
import trio

from cairn import MemoryConfig, Turn, open_memory
from cairn.testing import FixedDomainClock, HashingEmbedder

KS = (5, 10, 20)
CATEGORIES = (1, 2, 3, 4)
DEFAULT_FOLDER = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev"


def session_time(text: str) -> dt.datetime:
    """'1:56 pm on 8 May, 2023' -> aware datetime (UTC)."""
    parsed = dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return parsed.replace(tzinfo=dt.UTC)


def conversation_turns(data: dict[str, Any]) -> list[Turn]:
    turns = []
    sessions = sorted(
        (int(m.group(1)), key)
        for key in data
        if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(data[key], list)
    )
    for number, key in sessions:
        at = session_time(data[f"{key}_date_time"])
        for index, raw in enumerate(data[key]):
            text = raw["text"]
            if raw.get("blip_caption"):
                text = f"{text} (shared a photo: {raw['blip_caption']})"
            turns.append(
                Turn(
                    raw["dia_id"],
                    f"session-{number}",
                    "user",
                    text,
                    at + dt.timedelta(seconds=index),
                    raw["speaker"],
                )
            )
    return turns


def evidence_ids(question: dict[str, Any]) -> set[str]:
    ids: set[str] = set()
    for entry in question.get("evidence", []):
        ids.update(part for part in re.split(r"[;,\s]+", entry) if part)
    return ids


def ranked_events(items: Any, k: int) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        for ref in item.source_refs:
            seen.setdefault(ref, None)
    return list(seen)[:k]


async def run(
    folder: Path,
    conversations: int | None,
    embedder_name: str,
    lexical_only: bool,
    weights: dict[str, float],
    data_dir: Path | None,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    files = sorted(folder.glob("*.json"))[:conversations]
    scores: dict[int, dict[str, list[float]]] = {
        c: {f"{m}@{k}": [] for k in KS for m in ("recall", "hit")} for c in CATEGORIES
    }
    latencies: list[float] = []
    ingest_s = 0.0
    turns_total = 0
    embedder = {"local": None, "hashing": HashingEmbedder()}[embedder_name]
    config = MemoryConfig(recall_wait_s=600.0, budget_bytes=1_000_000)
    if lexical_only:
        weights = {**weights, "claim_vector": 0.0, "event_vector": 0.0}
    rrf_k = weights.pop("rrf_k", None)
    config = attrs.evolve(
        config, **{f"weight_{name}": value for name, value in weights.items()}
    )
    if rrf_k is not None:
        config = attrs.evolve(config, rrf_k=int(rrf_k))
    config = attrs.evolve(config, **(settings or {}))
    with tempfile.TemporaryDirectory(prefix="cairn-locomo-") as scratch:
        directory = data_dir or Path(scratch)
        clock = FixedDomainClock(dt.datetime(2024, 1, 1, tzinfo=dt.UTC))
        async with open_memory(
            directory, config, clock=clock, embedder=embedder
        ) as memory:
            for path in files:
                data = json.loads(path.read_text(encoding="utf-8"))
                agent = path.stem
                turns = conversation_turns(data)
                turns_total += len(turns)
                started = time.perf_counter()
                await memory.ingest(agent, turns)
                await memory.wait_idle(agent)
                ingest_s += time.perf_counter() - started
                for question in data["qa"]:
                    category = question.get("category")
                    if category not in CATEGORIES:
                        continue
                    gold = evidence_ids(question)
                    if not gold:
                        continue
                    started = time.perf_counter()
                    recall = await memory.recall(agent, question["question"], k=60)
                    latencies.append(time.perf_counter() - started)
                    for k in KS:
                        top = set(ranked_events(recall.items, k))
                        found = len(gold & top)
                        scores[category][f"recall@{k}"].append(found / len(gold))
                        scores[category][f"hit@{k}"].append(1.0 if found else 0.0)

    def summarise(values: dict[str, list[float]]) -> dict[str, float]:
        return {name: round(statistics.fmean(v), 4) for name, v in values.items() if v}

    overall: dict[str, list[float]] = {}
    for category_scores in scores.values():
        for name, values in category_scores.items():
            overall.setdefault(name, []).extend(values)
    latencies_ms = sorted(1000 * x for x in latencies)
    return {
        "conversations": [p.stem for p in files],
        "embedder": embedder_name,
        "lexical_only": lexical_only,
        "weights": config.fusion_weights() | {"rrf_k": config.rrf_k},
        "list_session_cap": config.list_session_cap,
        "questions": len(latencies),
        "overall": summarise(overall),
        "per_category": {
            str(c): summarise(v) | {"n": len(v["hit@5"])} for c, v in scores.items()
        },
        "ingest_seconds": round(ingest_s, 2),
        "turns": turns_total,
        "recall_latency_ms": {
            "p50": round(latencies_ms[len(latencies_ms) // 2], 2),
            "p95": round(latencies_ms[int(len(latencies_ms) * 0.95)], 2),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER)
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--embedder", choices=["local", "hashing"], default="local")
    parser.add_argument(
        "--lexical-only", action="store_true", help="fusion without vectors"
    )
    parser.add_argument(
        "--weight",
        action="append",
        default=[],
        metavar="LIST=W",
        help="fusion weight, e.g. event_vector=1.5 (lists: claim_lexical, event_lexical,"
        " claim_vector, event_vector)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a MemoryConfig field, e.g. list_session_cap=3",
    )
    parser.add_argument(
        "--without-analysis",
        action="store_true",
        help="ablation: no query-analysis lists and no session coverage",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="keep the memory here (a second run re-ingests nothing: IDs are idempotent)",
    )
    arguments = parser.parse_args()
    weights = {
        name: float(value) for name, value in (w.split("=") for w in arguments.weight)
    }
    settings: dict[str, Any] = {
        name: json.loads(value) for name, value in (s.split("=") for s in arguments.set)
    }
    if arguments.without_analysis:
        weights.update(
            entity_lexical=0.0,
            entity_vector=0.0,
            entity_mention=0.0,
            entity_graph=0.0,
            current_state=0.0,
            time_window=0.0,
        )
        settings.update(list_session_cap=None, off_focus_weight=1.0)
    result = trio.run(
        run,
        arguments.folder,
        arguments.conversations,
        arguments.embedder,
        arguments.lexical_only,
        weights,
        arguments.data,
        settings,
    )
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
