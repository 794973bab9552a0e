"""Whether an agent's background pipeline can still make progress on its store.

The ingestion and embedding actors retry a failed background write with backoff for as
long as it takes (a full disk that frees, an I/O error that passes), so a wait for them
to settle cannot tell a fault that clears from one that never does. This watch gives it
the rule: a step (``extraction`` or ``embedding``) is *stalled* once its last
:data:`STALL_FAILURES` writes all failed with a storage fault (:func:`is_storage_fault`)
and none of its writes committed in between. A wait gives up on a stall only when the latest of those failures happened
during the wait: a streak left from a fault that has since cleared is ended by the next
retry (at most one backoff cap later), which commits. A one-off fault fails one write and
the retry commits, so it never stalls anything (design/architecture.md §2).
"""

from __future__ import annotations

from typing import Final

import attrs
import trio

from cairn.errors import ClearPendingError, StoreError, VectorIndexError

__all__ = ["STALL_FAILURES", "Stall", "StallWatch", "is_storage_fault"]

STALL_FAILURES: Final = 3
"""Storage failures in a row, with no commit between, that make a step stalled."""


def is_storage_fault(error: BaseException) -> bool:
    """A failure of the store itself (the database full, failing I/O, damaged or
    read-only; a vector file that cannot be written or read), not a refusal that ends by
    itself (a pending clear)."""
    if isinstance(error, ClearPendingError):
        return False
    return isinstance(error, StoreError | OSError | VectorIndexError)


@attrs.frozen
class Stall:
    """A stalled step: which, after how many failures, and the last one's type and
    SQLite's words (never row content)."""

    step: str
    failures: int
    error: str


@attrs.define(eq=False)
class StallWatch:
    """Consecutive storage failures per background step of one agent."""

    limit: int = STALL_FAILURES
    _streaks: dict[str, int] = attrs.field(factory=dict)
    _errors: dict[str, str] = attrs.field(factory=dict)
    # Failures ever recorded, and per step the number of its latest: a waiter gives up
    # only on a stall whose latest failure came after it began.
    _serial: int = 0
    _latest: dict[str, int] = attrs.field(factory=dict)
    _changed: trio.Event = attrs.field(factory=trio.Event)

    def failed(self, step: str, error: BaseException) -> None:
        """A write of ``step`` failed; counted only if the store itself failed."""
        if not is_storage_fault(error):
            return
        self._serial += 1
        self._streaks[step] = self._streaks.get(step, 0) + 1
        self._errors[step] = f"{type(error).__name__}: {error}"[:200]
        self._latest[step] = self._serial
        self._notify()

    def committed(self, step: str) -> None:
        """A write of ``step`` committed: whatever failed before has cleared."""
        if self._streaks.pop(step, 0):
            self._errors.pop(step, None)
            self._notify()

    def mark(self) -> int:
        """Where a wait begins: stalls whose latest failure is after it count."""
        return self._serial

    def stalled(self, since: int = 0) -> Stall | None:
        """A step stalled by a failure after ``since`` (a :meth:`mark`), if any."""
        for step, failures in sorted(self._streaks.items()):
            if failures >= self.limit and self._latest.get(step, 0) > since:
                return Stall(step, failures, self._errors.get(step, "StoreError"))
        return None

    async def wait_stalled(self, since: int) -> Stall:
        """Until a step is stalled by a failure after ``since``."""
        while (stall := self.stalled(since)) is None:
            await self._changed.wait()
        return stall

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()
