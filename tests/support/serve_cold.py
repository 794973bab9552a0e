"""The ``cairn`` command line with a cold query model: how tests start a server whose
embedder is still loading.

    CAIRN_TEST_LOADED=PATH python tests/support/serve_cold.py --data DIR serve ...

runs the real command line with a hashing embedder (the identity of
``cairn.testing.HashingEmbedder``, so data written with it is served) whose query
embeddings, the warm-up at open first, wait until the file ``PATH`` exists: the test
decides when the model has "loaded". Documents are embedded at once.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ENTRY_POINT = Path(__file__).resolve()
LOADED_ENV = "CAIRN_TEST_LOADED"


def cold_cairn(*args: str) -> list[str]:
    """The command that runs ``cairn ARGS`` with the cold query model."""
    return [sys.executable, str(ENTRY_POINT), *args]


def main() -> None:
    import trio

    from cairn.cli.app import CliContext
    from cairn.cli.main import app
    from cairn.providers.embedding import Vectors
    from cairn.testing import HashingEmbedder

    loaded = trio.Path(os.environ[LOADED_ENV])

    class ColdHashing(HashingEmbedder):
        async def embed_query(self, text: str) -> Vectors:
            # A file from the test's process is the signal: polled by the server's loop.
            while not await loaded.exists():  # noqa: ASYNC110
                await trio.sleep(0.02)
            return await super().embed_query(text)

    app(args=sys.argv[1:], prog_name="cairn", obj=CliContext(embedder=ColdHashing))


if __name__ == "__main__":
    main()
