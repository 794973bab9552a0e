"""Forgotten plaintext leaves the disk: the FTS purge, then a TRUNCATE checkpoint.

A forget, clear or retire deletes rows in its transaction, but their text survives in three
places: the tokens in the contentless FTS5 segments (until ``optimize`` rewrites them),
older copies of every touched page in the WAL (until a checkpoint copies the file's pages
back and truncates the log), and copies b-tree rebalancing left earlier in the unused gap
of pages (``secure_delete`` does not zero those; a rebuild of the file does). Both requests are durable rows written by those
transactions (cairn.store.fts_purge); this runtime-wide :class:`Scrubber` settles them:

* at open, before any agent starts, so a crash leaves nothing behind for long;
* right after any agent's write that left one owed (the write coordinator probes the two
  tables inside every transaction and wakes the scrubber after the commit), not at a
  timed pass;
* once more when the runtime closes.

Order: the purge first (through the :class:`SharedWriter`: the FTS tables and the WAL
belong to no agent), because its own rewrite goes through the WAL; then the file's
rebuild (:meth:`Database.rewrite_file`) and the checkpoint
(:meth:`Database.truncate_wal`, never inside a transaction, in threads under the store
limiters); then the owed row is deleted, unless a later purge marked it again. A reader
in the way makes the checkpoint busy: it stays owed and is retried after a bounded
backoff, the readers of this runtime quiesced from the third attempt on.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs
import trio

from cairn.errors import StoreError
from cairn.runtime.actors.write_coordinator import SharedWrite, SharedWriter
from cairn.runtime.backoff import Backoff
from cairn.runtime.database import Database
from cairn.runtime.fairness import Share, current_share
from cairn.store.fts_purge import (
    checkpoint_generation,
    purges_pending,
    run_fts_purges,
    scrub_owed,
    settle_checkpoint,
)

if TYPE_CHECKING:
    import datetime as dt

    import apsw

__all__ = ["Scrubber"]

logger = logging.getLogger("cairn.runtime")

# Busy checkpoints are retried after BUSY_RETRY_S * 2^(n-1), at most BUSY_RETRY_CAP_S.
BUSY_RETRY_S = 0.05
BUSY_RETRY_CAP_S = 5.0
# From this many busy attempts in a row on, the pool's readers are quiesced first.
QUIESCE_AFTER = 2
# Its own owner at the background limiter: it takes turns with the agents.
SCRUB_SHARE = Share("(scrub)")


def _settle(connection: apsw.Connection, _now: dt.datetime, *, generation: int) -> bool:
    return settle_checkpoint(connection, generation)


@attrs.define(eq=False)
class Scrubber:
    database: Database
    shared: SharedWriter
    # Called with the step's name ("purge", "checkpoint", "settle") before it runs: lets
    # tests crash the process at a precise boundary (tests/runtime/test_scrub_crash.py).
    # Never set in production.
    observer: Callable[[str], None] | None = None
    # Attempts made, checkpoints settled, and busy answers in a row.
    attempts: int = 0
    scrubs: int = 0
    busy: int = 0
    _wake_send: trio.MemorySendChannel[None] = attrs.field(init=False)
    _wake_receive: trio.MemoryReceiveChannel[None] = attrs.field(init=False)
    _lock: trio.Lock = attrs.field(factory=trio.Lock)
    _attempted: trio.Event = attrs.field(factory=trio.Event)
    _failure: Backoff = attrs.field(
        factory=lambda: Backoff("removing forgotten text from the disk")
    )

    def __attrs_post_init__(self) -> None:
        self._wake_send, self._wake_receive = trio.open_memory_channel[None](1)

    def wake(self) -> None:
        """Something is owed (called after a commit; never blocks, wakes coalesce)."""
        with contextlib.suppress(trio.WouldBlock, trio.ClosedResourceError):
            self._wake_send.send_nowait(None)

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Settle what is owed whenever woken; busy or failing attempts back off."""
        current_share.set(SCRUB_SHARE)
        task_status.started()
        self.wake()  # whatever the open-time attempt left owed
        async for _ in self._wake_receive:
            while True:
                delay = await self.attempt()
                if delay is None:
                    break
                await trio.sleep(delay)

    async def attempt(self) -> float | None:
        """One attempt: ``None`` when nothing is owed any more, else the delay before the
        next one (a busy checkpoint, or a store error logged once per streak)."""
        try:
            settled = await self.scrub(quiesce=self.busy >= QUIESCE_AFTER)
        except (OSError, StoreError) as error:
            return self._failure.failed(error)
        finally:
            self.attempts += 1
            attempted, self._attempted = self._attempted, trio.Event()
            attempted.set()
        self._failure.succeeded()
        if settled:
            self.busy = 0
            return None
        self.busy += 1
        logger.debug("WAL checkpoint busy (%d in a row); retrying", self.busy)
        return float(min(BUSY_RETRY_CAP_S, BUSY_RETRY_S * 2.0 ** (self.busy - 1)))

    async def scrub(self, *, quiesce: bool = False) -> bool:
        """Purge, checkpoint, settle, until nothing is owed (``True``); ``False`` when a
        reader kept the WAL (it stays owed)."""
        async with self._lock:
            while True:
                pending, generation = await self.database.read(
                    lambda reader: (
                        purges_pending(reader.connection),
                        checkpoint_generation(reader.connection),
                    )
                )
                if pending:
                    self._observe("purge")
                    await self.shared.commit(
                        SharedWrite(run_fts_purges, "FTS purge of forgotten rows")
                    )
                    generation = await self.database.read(
                        lambda reader: checkpoint_generation(reader.connection)
                    )
                if generation is None:
                    return True
                self._observe("checkpoint")
                # Copies of forgotten rows in pages' unused gaps leave with the rebuild.
                try:
                    await self.database.rewrite_file()
                except StoreError:
                    # E.g. no room for the copy: the WAL's old frames still go now; the
                    # rebuild stays owed and the attempt backs off.
                    await self.database.truncate_wal(quiesce=quiesce)
                    raise
                if not await self.database.truncate_wal(quiesce=quiesce):
                    return False
                self._observe("settle")
                # Not settled if a purge marked it again meanwhile: then once more.
                await self.shared.commit(
                    SharedWrite(
                        functools.partial(_settle, generation=generation),
                        "WAL checkpoint settled",
                    )
                )
                self.scrubs += 1

    async def wait_settled(self) -> None:
        """Until nothing is owed as stored (a drain waits for this)."""
        while True:
            attempted = self._attempted
            if not await self.database.read(
                lambda reader: scrub_owed(reader.connection)
            ):
                return
            self.wake()
            await attempted.wait()

    async def wait_attempts(self, count: int) -> None:
        """Until ``count`` attempts have been made in all (without waking anything)."""
        while self.attempts < count:
            await self._attempted.wait()

    def _observe(self, step: str) -> None:
        if self.observer is not None:
            self.observer(step)
