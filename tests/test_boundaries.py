"""Dependency direction between subpackages (STYLE.md §1), checked on the import graph:
domain imports nothing of cairn; store never imports trio; lower layers never import
runtime, ipc or cli."""

from __future__ import annotations

import ast
from pathlib import Path

import cairn

ROOT = Path(cairn.__file__).parent

# layer -> cairn subpackages it may import (besides itself and the top-level leaf modules)
ALLOWED = {
    "domain": set(),
    # The public API's Protocols and reports: types only (recall's from retrieval.types).
    "api": {"domain", "entities", "retrieval"},
    "serde": {"domain", "entities", "retrieval"},
    "store": {"domain", "entities", "vectors"},
    "vectors": {"domain"},
    "providers": {"domain", "vectors"},
    "ingestion": {"domain"},
    # Entity rules read turns; query analysis reads questions (with ingestion's times).
    "entities": {"domain"},
    "query": {"domain", "entities", "ingestion"},
    "retrieval": {"domain", "entities", "query", "store", "vectors"},
    # Passes plan on a snapshot and apply in a transaction: synchronous, like store.
    "maintenance": {"domain", "entities", "store", "vectors", "ingestion", "retrieval"},
    "runtime": {
        "maintenance",
        "entities",
        "query",
        "api",
        "domain",
        "serde",
        "store",
        "vectors",
        "providers",
        "ingestion",
        "retrieval",
    },
    "testing": {"domain", "providers", "vectors"},
    # ipc serves the runtime. Tests inject their embedder through their own entry point
    # (tests/support/serve_hashing.py): no production layer imports cairn.testing.
    # A starting server drains the hook spool (cairn.hooks.replay).
    "ipc": {
        "api",
        "domain",
        "entities",
        "runtime",
        "retrieval",
        "store",
        "providers",
        "hooks",
    },
    # The hook process is an IPC client; only the spool drain reaches the runtime.
    "hooks": {"domain", "ipc", "runtime"},
    "hosts": {
        "api",
        "domain",
        "entities",
        "runtime",
        "retrieval",
        "store",
        "providers",
    },
    "cli": {
        "api",
        "domain",
        "entities",
        "serde",
        "runtime",
        "retrieval",
        "store",
        "providers",
        "ipc",
        "hosts",
        "hooks",
        "stress",
    },
    # The stress harness drives every surface (embedded, socket clients, real server
    # processes) and checks the data directory underneath, with the testing embedder.
    "stress": {
        "api",
        "domain",
        "entities",
        "serde",
        "runtime",
        "retrieval",
        "store",
        "providers",
        "vectors",
        "ipc",
        "testing",
        # Its server processes run the real command line with the testing embedder.
        "cli",
    },
    "data": set(),
}
# configuration reads cairn.toml into config's classes and imports nothing else of cairn.
LEAVES = {"errors", "clock", "config", "configuration", "crashpoints"}
# The argument bounds import only errors: the domain's metadata validates against them.
LEAF_MODULES = {"cairn.api.bounds"}
# Read by mypy only (its body is under TYPE_CHECKING): it names every surface of the API
# to check each against the Protocols, so it imports upwards on purpose.
TYPE_CHECKS_ONLY = {Path("api/conformance.py")}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_layers_only_import_downwards() -> None:
    problems = []
    for layer, allowed in ALLOWED.items():
        for path in (ROOT / layer).rglob("*.py"):
            if path.relative_to(ROOT) in TYPE_CHECKS_ONLY:
                continue
            for name in _imports(path):
                parts = name.split(".")
                if parts[0] == "trio" and layer in {
                    "store",
                    "domain",
                    "vectors",
                    "maintenance",
                }:
                    problems.append(f"{path.relative_to(ROOT)} imports trio")
                if parts[0] != "cairn" or len(parts) < 2:
                    continue
                target = parts[1]
                if name in LEAF_MODULES or target in LEAVES:
                    continue
                if target == layer or target in allowed:
                    continue
                problems.append(f"{path.relative_to(ROOT)} imports {name}")
    assert problems == []
