"""The command a client runs to get a private stdio server of its own."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["serve_command"]


def serve_command(data_dir: str | Path) -> list[str]:
    """The command that serves ``data_dir`` on stdio with this Python."""
    return [sys.executable, "-m", "cairn", "--data", str(data_dir), "serve", "--stdio"]
