"""The ``cairn`` console script: ``cairn hook ...`` runs the light hook entry point
(cairn.hooks, no typer, no runtime) before anything else is imported; every other
command goes to the typer CLI (cairn.cli.main)."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "hook":
        from cairn.hooks.run import main as hook_main  # noqa: PLC0415

        return hook_main(sys.argv[2:])
    from cairn.cli.main import main as cli_main  # noqa: PLC0415

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
