"""Score the built-in rule extractor against a labelled fixture; print JSON.

Usage: ``python bench/extraction_score.py [FIXTURE]`` (default: the
``extraction_fixture.jsonl`` next to this script).

Each fixture line is ``{"id", "role", "speaker", "text", "at", "timezone"?, "expected": [
{"kind", "contains": [...], "valid_from"?: "YYYY-MM-DD", "recurrence"?: "..."}]}``; ``timezone`` defaults to UTC.

Matching, per turn and one-to-one: a predicted claim matches an expected one when the
kinds are compatible and every ``contains`` word occurs in the claim text (case-insensitive).
``fact`` and ``state`` are treated as compatible (whether "I live in X now" is a fact or a
state change is a labelling judgement, and both carry the same subject/predicate); the
strict-kind F1 is reported too. Temporal accuracy counts matched claims whose expected
``valid_from`` equals the claim's ``valid_from`` as a local date in the turn's zone;
recurrence accuracy counts matched claims whose expected ``recurrence`` (the start of
``Recurrence.describe()``, e.g. ``"every Monday 09:00"``) is what the claim repeats on.
Throughput runs the extractor over ~100-character turns built from the fixture's user
texts, in batches of 20 (the ingestion batch size).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from cairn.domain.evidence import Role
from cairn.domain.ids import EventId, SessionId
from cairn.ingestion.extract import ExtractionInput, RuleExtractor
from cairn.ingestion.extract_common import split_sentences

if TYPE_CHECKING:
    from cairn.domain.claim import ClaimDraft

_CJK = re.compile(r"[\u3400-\u9fff]")
_COMPATIBLE = {"fact": "fact-or-state", "state": "fact-or-state"}
_BATCH = 20
_THROUGHPUT_TURNS = 10_000


def _load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def _input(row: dict[str, Any], event_id: str | None = None) -> ExtractionInput:
    return ExtractionInput(
        event_id=EventId(event_id or row["id"]),
        role=Role(row["role"]),
        text=row["text"],
        occurred_at=dt.datetime.fromisoformat(row["at"]),
        speaker=row.get("speaker"),
        session_id=SessionId("bench"),
    )


def _kinds_match(expected: str, predicted: str, *, strict: bool) -> bool:
    if strict:
        return expected == predicted
    return _COMPATIBLE.get(expected, expected) == _COMPATIBLE.get(predicted, predicted)


def _contains(expected: dict[str, Any], draft: ClaimDraft) -> bool:
    text = draft.text.lower()
    return all(word.lower() in text for word in expected["contains"])


def _match(
    expected: list[dict[str, Any]], drafts: list[ClaimDraft], *, strict: bool
) -> list[tuple[int, int]]:
    """Greedy one-to-one pairs ``(expected index, draft index)``."""
    pairs: list[tuple[int, int]] = []
    used: set[int] = set()
    for expected_index, wanted in enumerate(expected):
        for draft_index, draft in enumerate(drafts):
            if draft_index in used:
                continue
            if _kinds_match(
                wanted["kind"], draft.kind.value, strict=strict
            ) and _contains(wanted, draft):
                pairs.append((expected_index, draft_index))
                used.add(draft_index)
                break
    return pairs


def _prf(true_positive: int, predicted: int, expected: int) -> dict[str, float | int]:
    precision = true_positive / predicted if predicted else 1.0
    recall = true_positive / expected if expected else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
        "tp": true_positive,
        "predicted": predicted,
        "expected": expected,
    }


def _local_date(moment: dt.datetime | None, zone: str) -> str | None:
    return (
        None if moment is None else moment.astimezone(ZoneInfo(zone)).date().isoformat()
    )


def _set_of(row_id: str) -> str:
    """Which part of the fixture a row belongs to: ``dev`` (the rules were written
    against it), ``held-out-1`` (``h-``) or ``held-out-2`` (``x-``, labelled without
    running the extractor)."""
    if row_id.startswith("x-"):
        return "held-out-2"
    if row_id.startswith("h-"):
        return "held-out-1"
    return "dev"


def _score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    extractor = RuleExtractor()
    counts: Counter[str] = Counter()
    false_positives: list[dict[str, str]] = []
    misses: list[dict[str, Any]] = []
    temporal_total = temporal_correct = 0
    recurrence_total = recurrence_correct = 0
    strict_tp = 0
    for row in rows:
        zone = row.get("timezone", "UTC")
        drafts = extractor.extract([_input(row)], timezone=zone)
        expected = row["expected"]
        language = "zh" if _CJK.search(row["text"]) else "en"
        pairs = _match(expected, drafts, strict=False)
        strict_tp += len(_match(expected, drafts, strict=True))
        matched_expected = {index for index, _ in pairs}
        matched_drafts = {index for _, index in pairs}
        for scope in ("all", language, f"set-{_set_of(row['id'])}"):
            counts[f"{scope}:tp"] += len(pairs)
            counts[f"{scope}:pred"] += len(drafts)
            counts[f"{scope}:exp"] += len(expected)
        for _, draft_index in pairs:
            counts[f"kind:{drafts[draft_index].kind.value}:tp_pred"] += 1
        for expected_index, _ in pairs:
            counts[f"kind:{expected[expected_index]['kind']}:tp_exp"] += 1
        for draft in drafts:
            counts[f"kind:{draft.kind.value}:pred"] += 1
        for wanted in expected:
            counts[f"kind:{wanted['kind']}:exp"] += 1
        for expected_index, draft_index in pairs:
            wanted_recurrence = expected[expected_index].get("recurrence")
            if wanted_recurrence is not None:
                recurrence = drafts[draft_index].recurrence
                recurrence_total += 1
                recurrence_correct += recurrence is not None and (
                    recurrence.describe().startswith(wanted_recurrence)
                )
        for expected_index, draft_index in pairs:
            wanted_from = expected[expected_index].get("valid_from")
            if wanted_from is None:
                continue
            temporal = drafts[draft_index].temporal
            got = _local_date(temporal.valid_from if temporal else None, zone)
            temporal_total += 1
            temporal_correct += got == wanted_from
        false_positives.extend(
            {"id": row["id"], "kind": draft.kind.value, "text": draft.text}
            for index, draft in enumerate(drafts)
            if index not in matched_drafts
        )
        misses.extend(
            {"id": row["id"], "kind": wanted["kind"], "contains": wanted["contains"]}
            for index, wanted in enumerate(expected)
            if index not in matched_expected
        )
    kinds = sorted({name.split(":")[1] for name in counts if name.startswith("kind:")})
    return {
        "turns": len(rows),
        "overall": _prf(counts["all:tp"], counts["all:pred"], counts["all:exp"]),
        "overall_strict_kind_f1": _prf(
            strict_tp, counts["all:pred"], counts["all:exp"]
        )["f1"],
        "by_language": {
            language: _prf(
                counts[f"{language}:tp"],
                counts[f"{language}:pred"],
                counts[f"{language}:exp"],
            )
            for language in ("en", "zh")
        },
        "by_set": {
            name: _prf(
                counts[f"set-{name}:tp"],
                counts[f"set-{name}:pred"],
                counts[f"set-{name}:exp"],
            )
            for name in ("dev", "held-out-1", "held-out-2")
        },
        "by_kind": {
            kind: {
                "precision": round(
                    counts[f"kind:{kind}:tp_pred"] / counts[f"kind:{kind}:pred"], 3
                )
                if counts[f"kind:{kind}:pred"]
                else None,
                "recall": round(
                    counts[f"kind:{kind}:tp_exp"] / counts[f"kind:{kind}:exp"], 3
                )
                if counts[f"kind:{kind}:exp"]
                else None,
                "predicted": counts[f"kind:{kind}:pred"],
                "expected": counts[f"kind:{kind}:exp"],
            }
            for kind in kinds
        },
        "temporal_accuracy": {
            "accuracy": round(temporal_correct / temporal_total, 3)
            if temporal_total
            else None,
            "correct": temporal_correct,
            "checked": temporal_total,
        },
        "recurrence_accuracy": {
            "accuracy": round(recurrence_correct / recurrence_total, 3)
            if recurrence_total
            else None,
            "correct": recurrence_correct,
            "checked": recurrence_total,
        },
        "false_positives": false_positives,
        "misses": misses,
    }


def _turns_of(users: list[dict[str, Any]], language: str) -> list[dict[str, Any]]:
    """~100-character turns joined from consecutive fixture texts of one language."""
    texts = [
        row for row in users if bool(_CJK.search(row["text"])) == (language == "zh")
    ]
    turns: list[dict[str, Any]] = []
    current: list[str] = []
    for row in texts * 3:
        current.append(row["text"])
        joined = " ".join(current) if language == "en" else "".join(current)
        if len(joined) >= 100:
            turns.append({**row, "text": joined})
            current = []
    return turns


def _run(turns: list[dict[str, Any]]) -> dict[str, float | int]:
    inputs = [
        _input(turns[index % len(turns)], f"t{index}")
        for index in range(_THROUGHPUT_TURNS)
    ]
    extractor = RuleExtractor()
    started, cpu_started = time.perf_counter(), time.process_time()
    for offset in range(0, len(inputs), _BATCH):
        extractor.extract(inputs[offset : offset + _BATCH])
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    return {
        "turns_per_s": round(len(inputs) / elapsed),
        # CPU time of this process: steadier than wall time on a shared machine.
        "turns_per_cpu_s": round(len(inputs) / cpu),
        "mean_chars_per_turn": round(
            sum(len(item.text) for item in inputs) / len(inputs), 1
        ),
        "mean_sentences_per_turn": round(
            sum(len(list(split_sentences(item.text))) for item in inputs) / len(inputs),
            1,
        ),
    }


def _throughput(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Turns per second on ~100-character user turns, extracted in batches of 20.

    The turns are joined from the fixture's user texts, so nearly every sentence holds a
    claim: denser than conversation, where most sentences yield nothing.
    """
    users = [row for row in rows if row["role"] == "user"]
    by_language = {language: _turns_of(users, language) for language in ("en", "zh")}
    report: dict[str, Any] = _run(by_language["en"] + by_language["zh"])
    report["turns"] = _THROUGHPUT_TURNS
    for language, turns in by_language.items():
        report[language] = _run(turns)
    return report


def main(argv: list[str]) -> None:
    default = Path(__file__).with_name("extraction_fixture.jsonl")
    rows = _load(Path(argv[1]) if len(argv) > 1 else default)
    report = _score(rows)
    report["throughput"] = _throughput(rows)
    print(json.dumps(report, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main(sys.argv)
