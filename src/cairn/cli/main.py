"""The ``cairn`` command line.

Exit codes: 0 success; 1 an unexpected failure, or `providers check` found a provider
failing; 2 bad usage, input or configuration (nothing stored); 3 ingest finished but some
lines were rejected (the rest is stored).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from cairn.cli import commands, forgetting
from cairn.errors import CairnError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["default_data_dir", "main"]


def default_data_dir() -> Path:
    """``$CAIRN_DATA``, else ``$XDG_DATA_HOME/cairn``, else ``~/.local/share/cairn``."""
    if explicit := os.environ.get("CAIRN_DATA"):
        return Path(explicit)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "cairn"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cairn", description="Long-term memory for AI agents."
    )
    parser.add_argument("--data", type=Path, default=None, help="data directory")
    sub = parser.add_subparsers(dest="command", required=True)

    ingest = sub.add_parser("ingest", help="ingest turns from a JSONL file")
    ingest.add_argument("--agent", required=True)
    ingest.add_argument("file", type=Path)
    ingest.add_argument("--json", action="store_true")

    recall = sub.add_parser("recall", help="recall memory for a query")
    recall.add_argument("--agent", required=True)
    recall.add_argument("--session", default=None)
    recall.add_argument("--k", type=int, default=10)
    recall.add_argument(
        "--budget", type=int, default=None, help="budget in UTF-8 bytes"
    )
    recall.add_argument(
        "--wait", type=float, default=30.0, help="wait budget in seconds"
    )
    recall.add_argument("--json", action="store_true")
    recall.add_argument("--queries", type=Path, default=None, help="JSONL of queries")
    recall.add_argument("query", nargs="?")

    status = sub.add_parser("status", help="counts per agent")
    status.add_argument("--json", action="store_true")

    sub.add_parser("demo", help="ingest a shipped conversation and recall from it")

    providers = sub.add_parser("providers", help="the configured model providers")
    providers.add_argument("action", choices=["check"])
    providers.add_argument("--json", action="store_true")
    forgetting.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    data_dir = arguments.data or default_data_dir()
    try:
        return trio.run(commands.dispatch, arguments, data_dir)
    except CairnError as error:
        print(f"cairn: {error}", file=sys.stderr)
        return 2
    except BaseExceptionGroup as group:
        matched, rest = group.split(CairnError)
        if matched is None or rest is not None:
            raise
        for leaf in matched.exceptions:
            print(f"cairn: {leaf}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`cairn … | head`): not an error of ours. Point stdout at
        # devnull so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
