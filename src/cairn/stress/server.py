"""``python -m cairn.stress.server --data DIR serve --socket PATH``: the real command line
(every command and option, the same exit codes) with the deterministic hashing embedder,
so the harness's servers start in a moment and their vectors can be recomputed."""

from __future__ import annotations

import sys

from cairn.cli.app import CliContext
from cairn.cli.main import app
from cairn.testing import HashingEmbedder


def main() -> None:
    app(args=sys.argv[1:], prog_name="cairn", obj=CliContext(embedder=HashingEmbedder))


if __name__ == "__main__":
    main()
