"""Async access to the SQLite file: one writer connection, a small pool of readers.

WAL lets readers run beside the single writer. Each connection is only ever used by one
thread at a time: the writer behind ``Limiters.store_write`` (capacity 1), each reader taken
from a pool channel, so apsw never has to serialise two threads on one connection.

SQLite's errors do not leave this module as apsw exceptions: every transaction, snapshot
and the opening of the file raise the ``StoreError`` family instead
(:mod:`cairn.store.errors`), e.g. :class:`~cairn.errors.ClearPendingError` for the clear
fence's refusal and :class:`~cairn.errors.StorageFullError` for a full disk.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import apsw
import attrs
import trio

from cairn.runtime.private_files import create_private_file
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.store.connection import BUSY_TIMEOUT_MS, open_connection
from cairn.store.errors import store_error, translated
from cairn.store.search import LexicalSearcher

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["Database", "Reader"]

T = TypeVar("T")

logger = logging.getLogger(__name__)


@attrs.define(eq=False)
class Reader:
    """A read connection with its per-connection helpers."""

    connection: apsw.Connection
    lexical: LexicalSearcher


# Checkpoint once the WAL holds this many pages (64 MiB at 4 KiB pages). Much larger than
# SQLite's default of 1000: a big transaction (a clear batch dirties over 1000 scattered
# pages) then no longer triggers a checkpoint and its fsync every time, and pages written
# by many transactions are copied back once (a 60k-claim clear: 13.9 s -> 8.4 s).
CHECKPOINT_PAGES = 16_000
# The WAL file is cut back to this size after a checkpoint.
WAL_SIZE_LIMIT = 64 * 1024 * 1024


@attrs.define(eq=False)
class _WalPages:
    """The WAL size the writer's hook saw at its last commit."""

    pages: int = 0

    def observe(self, _connection: apsw.Connection, _name: str, pages: int) -> int:
        self.pages = pages
        return apsw.SQLITE_OK


def _close(connection: apsw.Connection) -> None:
    """Close ``connection`` whatever the disk says. The last connection checkpoints and
    deletes the WAL as it closes; an I/O error or a full disk there loses nothing (the
    WAL stays, and the next open recovers from it), so it is logged, not raised."""
    try:
        connection.close()
    except apsw.Error as error:
        logger.warning(
            "closing the database: %s; the WAL is kept for the next open",
            store_error(error),
        )
        connection.close(force=True)


def _checkpoint(connection: apsw.Connection, mode: int) -> bool:
    """One checkpoint without waiting for a lock; ``False`` if SQLite answered busy
    (it then copied what it could, like PASSIVE)."""
    connection.set_busy_timeout(0)
    try:
        with translated():
            try:
                connection.wal_checkpoint(mode=mode)
            except apsw.BusyError:
                return False
    finally:
        connection.set_busy_timeout(BUSY_TIMEOUT_MS)
    return True


@attrs.define(eq=False)
class Database:
    path: Path
    limiters: Limiters
    writer: apsw.Connection
    _readers: list[Reader]
    _pool_send: trio.MemorySendChannel[Reader]
    _pool_receive: trio.MemoryReceiveChannel[Reader]
    _wal_pages: _WalPages
    synchronous_full: bool = False
    """Every commit is FULL (``MemoryConfig.synchronous_full``); else only durable ones."""

    @classmethod
    async def open(
        cls,
        path: Path,
        limiters: Limiters,
        *,
        readers: int,
        synchronous_full: bool,
        vfs: str | None = None,
    ) -> Database:
        def connect() -> tuple[apsw.Connection, list[Reader]]:
            with translated():
                return connect_all()

        def connect_all() -> tuple[apsw.Connection, list[Reader]]:
            # Created 0600 before SQLite opens it: SQLite gives the -wal and -shm files
            # the database file's mode (cairn.runtime.private_files).
            create_private_file(path)
            writer = open_connection(path, synchronous_full=synchronous_full, vfs=vfs)
            # SQLite's automatic checkpoint runs inside COMMIT, and apsw holds the GIL
            # through it: a commit of a few hundred scattered pages (a clear batch) then
            # stalled the trio loop for 10-70 ms. The writer checkpoints explicitly
            # instead, after the transaction, as a statement (GIL released while it runs).
            writer.wal_autocheckpoint(0)
            writer.pragma("journal_size_limit", WAL_SIZE_LIMIT)
            writer.set_wal_hook(wal_pages.observe)
            pool = []
            for _ in range(readers):
                connection = open_connection(
                    path, synchronous_full=synchronous_full, vfs=vfs
                )
                pool.append(Reader(connection, LexicalSearcher(connection)))
            return writer, pool

        wal_pages = _WalPages()
        writer, pool = await run_in_thread(connect, limiter=limiters.store_write)
        send, receive = trio.open_memory_channel[Reader](len(pool))
        for reader in pool:
            send.send_nowait(reader)
        return cls(
            path, limiters, writer, pool, send, receive, wal_pages, synchronous_full
        )

    async def write(
        self, function: Callable[[apsw.Connection], T], *, durable: bool = False
    ) -> T:
        """Run ``function`` inside one write transaction on the writer connection.

        With ``durable`` the commit is ``synchronous=FULL`` whatever the connection's
        default: the WAL is synced before the call returns, so a power loss cannot undo
        it (a forget, clear or retire lost that way would bring forgotten text back).
        An apsw error raised inside (or by the commit) arrives as its ``StoreError``.
        """

        def transaction() -> T:
            with translated():
                with self._synchronous(full=durable), self.writer:
                    result = function(self.writer)
                if self._wal_pages.pages >= CHECKPOINT_PAGES:
                    self._wal_pages.pages = 0
                    self.writer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            return result

        return await run_in_thread(
            transaction,
            limiter=self.limiters.store_write,
            background=self.limiters.background,
        )

    async def rewrite_file(self) -> None:
        """Rebuild every page of the file (``VACUUM``), outside any transaction.

        ``secure_delete`` zeroes a deleted row's cell, but not the copies SQLite's b-tree
        rebalancing left earlier in the unused gap of pages the row's cell moved out of:
        a forgotten text can survive there, in the file and, after a checkpoint, in
        nothing else. A rebuilt page holds its live cells only. The rebuilt pages go
        through the WAL; the TRUNCATE checkpoint that follows copies them over the old
        ones. The copy is built in a temporary file, not in memory (the file may be
        large); it holds only rows still stored.
        """

        def vacuum() -> None:
            with translated():
                self.writer.pragma("temp_store", "file")
                try:
                    self.writer.execute("VACUUM").fetchall()
                finally:
                    self.writer.pragma("temp_store", "memory")

        await run_in_thread(
            vacuum,
            limiter=self.limiters.store_write,
            background=self.limiters.background,
        )

    @contextlib.contextmanager
    def _synchronous(self, *, full: bool) -> Iterator[None]:
        """The writer's next commits at FULL inside the block (SQLite refuses to change
        the level inside a transaction, so it is set around one)."""
        if not full or self.synchronous_full:
            yield
            return
        self.writer.pragma("synchronous", "full")
        try:
            yield
        finally:
            self.writer.pragma("synchronous", "normal")

    async def truncate_wal(self, *, quiesce: bool = False) -> bool:
        """Copy the WAL back into the file and cut it to zero bytes (outside any
        transaction); ``False`` when a reader kept it, to be retried later.

        The bulk copy is a PASSIVE checkpoint on a pooled reader connection: it takes no
        write lock, so writes go on beside it. Then TRUNCATE on the writer connection,
        under the write limiter, with no busy wait: it copies only what was committed
        since and truncates, but needs every reader to be past the last commit; a read
        transaction that started earlier makes SQLite answer busy at once, and the
        limiter is never held waiting for readers. With ``quiesce`` the pool's readers
        are all taken first (running reads finish, new ones wait for the truncate only),
        so a steady stream of recalls cannot keep the log forever.
        """
        passive = await self._pool_receive.receive()
        try:
            # No background token: copying pages is I/O, and holding the token would
            # keep the writes this step is meant to run beside waiting.
            await run_in_thread(
                lambda: _checkpoint(passive.connection, apsw.SQLITE_CHECKPOINT_PASSIVE),
                limiter=self.limiters.store_read,
            )
        finally:
            self._pool_send.send_nowait(passive)
        held: list[Reader] = []
        try:
            while quiesce and len(held) < len(self._readers):
                held.append(await self._pool_receive.receive())
            return await run_in_thread(
                lambda: _checkpoint(self.writer, apsw.SQLITE_CHECKPOINT_TRUNCATE),
                limiter=self.limiters.store_write,
                background=self.limiters.background,
            )
        finally:
            for reader in held:
                self._pool_send.send_nowait(reader)

    async def read(self, function: Callable[[Reader], T]) -> T:
        """Run ``function`` on a pooled reader inside one read transaction (a snapshot);
        apsw errors arrive as their ``StoreError``."""
        reader = await self._pool_receive.receive()
        try:

            def snapshot() -> T:
                with translated(), reader.connection:
                    result = function(reader)
                return result

            return await run_in_thread(snapshot, limiter=self.limiters.store_read)
        finally:
            self._pool_send.send_nowait(reader)

    async def aclose(self) -> None:
        def close_all() -> None:
            for reader in self._readers:
                _close(reader.connection)
            _close(self.writer)

        with trio.CancelScope(shield=True):
            await run_in_thread(close_all, limiter=self.limiters.store_write)
