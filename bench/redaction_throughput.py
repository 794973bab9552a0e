"""Throughput of intake redaction (cairn.ingestion.redact); prints JSON.

Usage: ``python bench/redaction_throughput.py``. Texts are the extraction fixture's turns,
alone and joined five at a time (~125 characters), plus the same with a secret planted in
each, so both the clean path and the replacing path are timed, and the look-alikes of
``redaction_corpus.jsonl`` ("I forgot my password", "密码错误"): label words and no
secret, the path where the cheap prefilter lets a text through and the rules find
nothing. Offline; one thread.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from cairn.ingestion.redact import redact

FIXTURE = Path(__file__).with_name("extraction_fixture.jsonl")
CORPUS = Path(__file__).with_name("redaction_corpus.jsonl")
SECRET = " my key is sk-proj-Qx7mN2pL9vR4tY6uI8oP0aS3dF5gH1jK."
SECONDS = 2.0


def _rate(texts: list[str]) -> dict[str, float]:
    done = 0
    start = time.perf_counter()
    while time.perf_counter() - start < SECONDS:
        for text in texts:
            redact(text)
        done += len(texts)
    elapsed = time.perf_counter() - start
    return {
        "texts_per_s": round(done / elapsed),
        "mean_chars": round(sum(map(len, texts)) / len(texts), 1),
        "us_per_text": round(elapsed / done * 1e6, 1),
    }


def main() -> None:
    with FIXTURE.open(encoding="utf-8") as lines:
        turns = [json.loads(line)["text"] for line in lines if line.strip()]
    joined = [" ".join(turns[i : i + 5]) for i in range(0, len(turns), 5)]
    with CORPUS.open(encoding="utf-8") as lines:
        cases = [json.loads(line) for line in lines if line.strip()]
    look_alikes = [case["text"] for case in cases if not case["secrets"]]
    result = {
        "turns": _rate(turns),
        "joined_5": _rate(joined),
        "joined_5_with_secret": _rate([text + SECRET for text in joined]),
        "look_alikes": _rate(look_alikes),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
