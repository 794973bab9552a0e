"""The hook spool: turns captured while no server could take them, kept until one can.

One file per captured envelope under ``DATA_DIR/hooks/spool/``, written as a sibling
temporary file, fsynced, renamed into place and the directory fsynced: a file either
holds a whole envelope or is not there. Files are named by capture time and content hash,
so they drain in capture order. The next hook call that reaches a server ingests them
oldest first and removes each one only after the server answered; a crash between the
two leaves the file, and ingesting it again is a duplicate (the messages' IDs are
stable), so nothing is lost and nothing is stored twice. A starting ``cairn serve``
drains the spool too (cairn.hooks.replay). A file the server refuses as bad input moves
to ``rejected/``, so one bad file never blocks the ones after it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from typing import TYPE_CHECKING

import msgspec

from cairn.hooks.envelope import TurnEnvelope

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = ["Spool", "spool_of"]

_SUFFIX = ".json"


def spool_of(data_dir: Path) -> Spool:
    """The hook spool of ``data_dir``."""
    return Spool(data_dir / "hooks" / "spool")


class Spool:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def put(self, envelope: TurnEnvelope) -> Path:
        """Store ``envelope`` durably; the path of its file."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        body = msgspec.json.encode(envelope)
        digest = hashlib.sha256(body).hexdigest()[:24]
        name = f"{time.time_ns():020d}-{digest}{_SUFFIX}"
        final = self.directory / name
        temporary = self.directory / f".{name}.tmp"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(descriptor, body)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        temporary.replace(final)
        directory = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        return final

    def pending(self) -> Iterator[tuple[Path, TurnEnvelope | None]]:
        """Spooled files oldest first, each with its envelope (None when unreadable:
        kept, so a human can look at it, and skipped)."""
        if not self.directory.is_dir():
            return
        for path in sorted(self.directory.glob(f"*{_SUFFIX}")):
            try:
                envelope = msgspec.json.decode(path.read_bytes(), type=TurnEnvelope)
            except (OSError, msgspec.DecodeError, msgspec.ValidationError):
                envelope = None
            yield path, envelope

    def remove(self, path: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    def reject(self, path: Path) -> Path:
        """Move ``path`` aside to ``rejected/`` (kept for a human, never retried)."""
        rejected = self.directory / "rejected"
        rejected.mkdir(exist_ok=True, mode=0o700)
        target = rejected / path.name
        path.replace(target)
        return target

    def count(self) -> int:
        if not self.directory.is_dir():
            return 0
        return sum(1 for _ in self.directory.glob(f"*{_SUFFIX}"))
