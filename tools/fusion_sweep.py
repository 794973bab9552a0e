"""Sweep fusion weights on the LoCoMo benchmark and print one JSON line per setting.

Weights are measured, not assumed (design/recall.md). The first run ingests into DATA;
later settings reuse it (event IDs are idempotent), so each costs only the recalls.

    python tools/fusion_sweep.py --data /tmp/cairn-locomo [FOLDER]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "locomo.py"

SETTINGS: list[list[str]] = [
    ["--lexical-only"],
    [],
    ["--weight", "rrf_k=60"],
    ["--weight", "rrf_k=30"],
    ["--weight", "event_vector=1.5"],
    ["--weight", "claim_lexical=0", "--weight", "claim_vector=0"],
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=None)
    parser.add_argument("--data", required=True, type=Path)
    arguments = parser.parse_args()
    for setting in SETTINGS:
        command = [sys.executable, str(BENCH), "--data", str(arguments.data), *setting]
        if arguments.folder:
            command.insert(2, arguments.folder)
        result = json.loads(
            subprocess.run(command, check=True, capture_output=True, text=True).stdout
        )
        overall = result["overall"]
        print(
            json.dumps(
                {
                    "setting": " ".join(setting) or "defaults",
                    "weights": result["weights"],
                    "recall@10": overall["recall@10"],
                    "hit@10": overall["hit@10"],
                    "recall@20": overall["recall@20"],
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
