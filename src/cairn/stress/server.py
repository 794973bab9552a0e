"""The ``cairn`` command line with the hashing embedder: how the harness runs real servers.

    python -m cairn.stress.server --data DIR serve --socket PATH
    python -m cairn.stress.server --data DIR ingest FILE --agent A

runs the real command line (every command and option, the same exit codes, crash points
included) with :class:`cairn.testing.HashingEmbedder` injected through the
``CliContext``, so no model is loaded and a trial's vectors are deterministic. The harness
kills these processes and reopens their data directory in its own process with the same
embedder, so what the server stored is read back exactly.
"""

from __future__ import annotations

import sys

__all__ = ["command", "main"]


def command(*args: str) -> list[str]:
    """The argument vector that runs ``cairn ARGS`` with the hashing embedder."""
    return [sys.executable, "-m", "cairn.stress.server", *args]


def main() -> None:
    # Loaded here only: the command line imports the harness (``cairn stress``), and the
    # harness imports this module for :func:`command`.
    from cairn.cli.app import CliContext  # noqa: PLC0415
    from cairn.cli.main import app  # noqa: PLC0415
    from cairn.testing import HashingEmbedder  # noqa: PLC0415

    app(
        args=sys.argv[1:],
        prog_name="cairn",
        obj=CliContext(embedder=HashingEmbedder),
    )


if __name__ == "__main__":
    main()
