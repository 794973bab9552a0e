"""One writer per agent, as a structure: nothing but the write coordinator module calls
``Database.write`` (every mutation of an agent's data is a typed request to that agent's
coordinator, cairn.runtime.writes; the few writes to structures all agents share go
through the SharedWriter beside it, in the same module)."""

from __future__ import annotations

import ast
from pathlib import Path

import cairn

ROOT = Path(cairn.__file__).parent
WRITER_MODULE = ROOT / "runtime" / "actors" / "write_coordinator.py"


def _writes_to_a_database(path: Path) -> list[int]:
    """Lines calling ``<something database>.write(...)``: the Database's write door."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "write"
        and ast.unparse(node.func.value).split(".")[-1].split("(")[0]
        in {"database", "_database", "db"}
    ]


def test_only_the_write_coordinator_calls_database_write() -> None:
    offenders = {
        str(path.relative_to(ROOT)): lines
        for path in ROOT.rglob("*.py")
        if path != WRITER_MODULE and (lines := _writes_to_a_database(path))
    }
    assert offenders == {}


def test_the_check_sees_the_writer_itself() -> None:
    # The check is not vacuous: it finds the coordinator's own calls.
    assert _writes_to_a_database(WRITER_MODULE)
