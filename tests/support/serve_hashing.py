"""The ``cairn`` command line with the hashing embedder: how tests start real servers.

    python tests/support/serve_hashing.py --data DIR serve --socket PATH

runs the real command line (every command and option, the same exit codes) with
``cairn.testing.HashingEmbedder`` injected through the ``CliContext``, so no model is
loaded. Production code never imports ``cairn.testing``; this test-owned entry point is
the only way a served process gets the test embedder (tests/test_boundaries.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

ENTRY_POINT = Path(__file__).resolve()


def hashing_cairn(*args: str) -> list[str]:
    """The command that runs ``cairn ARGS`` with the hashing embedder."""
    return [sys.executable, str(ENTRY_POINT), *args]


def main() -> None:
    from cairn.cli.app import CliContext
    from cairn.cli.main import app
    from cairn.testing import HashingEmbedder

    app(
        args=sys.argv[1:],
        prog_name="cairn",
        obj=CliContext(embedder=HashingEmbedder),
    )


if __name__ == "__main__":
    main()
