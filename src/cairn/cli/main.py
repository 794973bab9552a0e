"""The ``cairn`` command line: the typer app with every command group registered.

Exit codes: 0 success; 1 an unexpected failure, a failing provider check, or problems
``doctor`` did not repair; 2 bad usage, input or configuration (nothing stored); 3 some
input lines were rejected (the rest is stored); 4 another cairn process holds the data
directory and the command cannot go through it (nothing done); 130 interrupted.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

# Importing a command module registers its commands on the app.
from cairn.cli import (  # noqa: F401
    commands_config,
    commands_conflicts,
    commands_contributions,
    commands_entities,
    commands_feedback,
    commands_forgetting,
    commands_hooks,
    commands_inspect,
    commands_ipc,
    commands_maintain,
    commands_mcp,
    commands_memory,
    commands_providers,
    commands_status,
    commands_stress,
    commands_transfer,
    commands_upkeep,
)
from cairn.cli.app import app, default_data_dir

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["app", "default_data_dir", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        app(
            args=None if argv is None else list(argv),
            prog_name="cairn",
            standalone_mode=True,
        )
    except SystemExit as exit_:
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
