"""What a command's log records look like on stderr: one line each, never a traceback.

The runtime logs what it survives (a provider retried, a batch that failed and stays
queued for a later sweep); a command's output must stay readable, and its one fatal error
is the ``cairn: ...`` line of :func:`cairn.cli.app.run`. So while a command body runs,
records at ``$CAIRN_LOG_LEVEL`` (default ``error``) and above print as
``cairn: <level>: <message>``, an exception reduced to its type and message on the same
line. ``CAIRN_LOG_LEVEL=warning`` (or ``info``, ``debug``) shows more.

``cairn serve`` configures its own logging (cairn.ipc.serve) and is not affected.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import TYPE_CHECKING, Final

from cairn.cli.terminal import visible
from cairn.errors import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["LOG_LEVELS", "command_logging", "log_level"]

LOG_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
DEFAULT_LEVEL: Final = "error"


class OneLineFormatter(logging.Formatter):
    """``cairn: <level>: <message>``; an exception as ``(Type: message)``, no traceback."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            message += f" ({type(error).__name__}: {error})"
        return f"cairn: {record.levelname.lower()}: {visible(message)}"


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record arrives (tests swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.setStream(sys.stderr)
        super().emit(record)


def log_level(environ: Mapping[str, str] | None = None) -> int:
    """The level ``$CAIRN_LOG_LEVEL`` names (default ``error``)."""
    environ = os.environ if environ is None else environ
    name = (
        environ.get("CAIRN_LOG_LEVEL", DEFAULT_LEVEL).strip().lower() or DEFAULT_LEVEL
    )
    if name not in LOG_LEVELS:
        raise ConfigurationError(
            f"CAIRN_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, not {name!r}",
            source="CAIRN_LOG_LEVEL",
        )
    return LOG_LEVELS[name]


@contextlib.contextmanager
def command_logging(level: int) -> Iterator[None]:
    """Records at ``level`` and above as one line each on stderr, while the block runs."""
    root = logging.getLogger()
    handler = _StderrHandler()
    handler.setLevel(level)
    handler.setFormatter(OneLineFormatter())
    previous = root.level
    root.addHandler(handler)
    root.setLevel(min(level, previous) if previous else level)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
