"""Score intake redaction against a labelled corpus; print JSON.

Usage: ``python bench/redaction_score.py [--corpus PATH] [--module PATH]``. The corpus
(default: ``redaction_corpus.jsonl`` next to this script) has one JSON object a line:
``{"text", "secrets": [substrings that must disappear], "kind": "<kind>" | "none",
"lang": "en" | "zh"}``. ``--module`` scores another redaction module file (anything
with ``redact(text) -> .text``), e.g. an older version::

    git show 919c9e7:src/cairn/ingestion/redact.py > /tmp/redact_before.py
    python bench/redaction_score.py --module /tmp/redact_before.py

A secret case is caught when every listed substring is gone from the output and a
marker is there. A marker is on a secret when the span it replaced overlaps one of the
case's listed secrets (spans are recovered by aligning the output with the input).
Per marker kind: precision = markers on a secret / markers of that kind. Per case
kind: recall = caught / cases. A look-alike (``"secrets": []``) is a false positive when
its text changes at all.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).with_name("redaction_corpus.jsonl")
_MARKER = re.compile(r"\[REDACTED:([a-z_]+)\]")


def _load_redact(module_path: str | None) -> Any:
    if module_path is None:
        from cairn.ingestion.redact import redact

        return redact
    spec = importlib.util.spec_from_file_location("redact_under_test", module_path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {module_path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.redact


def _marker_spans(original: str, output: str) -> list[tuple[str, int, int]] | None:
    """Each marker's kind and the span of ``original`` it replaced, or None when the
    output cannot be aligned with the input."""
    pieces = _MARKER.split(output)
    literals, kinds = pieces[0::2], pieces[1::2]
    if not kinds:
        return []
    pattern = re.escape(literals[0]) + "".join(
        "(.+?)" + re.escape(literal) for literal in literals[1:]
    )
    match = re.fullmatch(pattern, original, re.DOTALL)
    if match is None:
        return None
    return [
        (kind, match.start(index + 1), match.end(index + 1))
        for index, kind in enumerate(kinds)
    ]


def _secret_spans(text: str, secrets: list[str]) -> list[tuple[int, int]]:
    spans = []
    for secret in secrets:
        start = text.find(secret)
        while start != -1:
            spans.append((start, start + len(secret)))
            start = text.find(secret, start + 1)
    return spans


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def score(cases: list[dict[str, Any]], redact: Any) -> dict[str, Any]:
    per_kind: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"cases": 0, "caught": 0, "missed": []}
    )
    per_lang: Counter[str] = Counter()
    per_lang_caught: Counter[str] = Counter()
    markers: Counter[str] = Counter()
    markers_on_secret: Counter[str] = Counter()
    false_positives = []
    unaligned = 0
    for case in cases:
        text, secrets = case["text"], case["secrets"]
        output = redact(text).text
        spans = _marker_spans(text, output)
        if spans is None:
            unaligned += 1
            spans = [(kind, 0, len(text)) for kind in _MARKER.findall(output)]
        wanted = _secret_spans(text, secrets)
        for kind, start, end in spans:
            markers[kind] += 1
            if any(start < b and a < end for a, b in wanted):
                markers_on_secret[kind] += 1
        if not secrets:
            if output != text:
                false_positives.append({"text": text, "output": output})
            continue
        entry = per_kind[case["kind"]]
        entry["cases"] += 1
        per_lang[case["lang"]] += 1
        if spans and all(secret not in output for secret in secrets):
            entry["caught"] += 1
            per_lang_caught[case["lang"]] += 1
        else:
            entry["missed"].append({"text": text, "output": output})
    positives = sum(entry["cases"] for entry in per_kind.values())
    caught = sum(entry["caught"] for entry in per_kind.values())
    look_alikes = sum(1 for case in cases if not case["secrets"])
    return {
        "cases": len(cases),
        "secret_cases": positives,
        "look_alikes": look_alikes,
        "overall": {
            "recall": _ratio(caught, positives),
            "precision": _ratio(sum(markers_on_secret.values()), sum(markers.values())),
            "caught": caught,
            "missed": positives - caught,
            "false_positives": len(false_positives),
            "false_positive_rate": _ratio(len(false_positives), look_alikes),
        },
        "recall_by_lang": {
            lang: _ratio(per_lang_caught[lang], per_lang[lang])
            for lang in sorted(per_lang)
        },
        "by_kind": {
            kind: {
                "cases": entry["cases"],
                "caught": entry["caught"],
                "recall": _ratio(entry["caught"], entry["cases"]),
                "missed": entry["missed"],
            }
            for kind, entry in sorted(per_kind.items())
        },
        "by_marker_kind": {
            kind: {
                "markers": markers[kind],
                "on_secret": markers_on_secret[kind],
                "precision": _ratio(markers_on_secret[kind], markers[kind]),
            }
            for kind in sorted(markers)
        },
        "false_positives": false_positives,
        "unaligned_outputs": unaligned,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--module", help="score this redaction module file instead")
    args = parser.parse_args()
    with Path(args.corpus).open(encoding="utf-8") as lines:
        cases = [json.loads(line) for line in lines if line.strip()]
    print(
        json.dumps(
            score(cases, _load_redact(args.module)), indent=2, ensure_ascii=False
        )
    )


if __name__ == "__main__":
    main()
