"""Maintenance: timed, bounded passes that keep projections and bookkeeping current.

Today a pass publishes the vector projection when it changed (atomically, see
cairn.vectors.publish), flushes buffered audit rows, and settles dirty work. Merge,
supersede-by-contradiction and reflection passes plug in here.
"""

from __future__ import annotations

import collections
import datetime as dt
from typing import TYPE_CHECKING

import attrs
import trio

from cairn.domain.ids import AgentId
from cairn.runtime.actors.embedding import VectorSlot
from cairn.runtime.database import Database
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.store.fts_purge import run_fts_purges
from cairn.store.requests import append_audit
from cairn.vectors.manager import VectorStoreManager

if TYPE_CHECKING:
    import apsw

__all__ = ["AuditBuffer", "MaintenanceActor"]

# Dirty rows settled per pass: bounded so a pass never holds the writer for long.
SETTLE_BATCH = 256


@attrs.define(eq=False)
class AuditBuffer:
    """Audit rows from the recall hot path, written in batches instead of one per recall."""

    # Bounded: if maintenance falls behind, the oldest rows are dropped and counted rather
    # than letting the recall path grow memory without limit.
    rows: collections.deque[tuple[AgentId, dt.datetime, str, str]] = attrs.field(
        factory=lambda: collections.deque(maxlen=10_000)
    )
    dropped: int = 0

    def add(self, agent_id: AgentId, at: dt.datetime, action: str, detail: str) -> None:
        if len(self.rows) == self.rows.maxlen:
            self.dropped += 1
        self.rows.append((agent_id, at, action, detail))

    def take(self) -> list[tuple[AgentId, dt.datetime, str, str]]:
        rows = list(self.rows)
        self.rows.clear()
        return rows


def _settle_dirty(connection: apsw.Connection, agent_id: AgentId) -> int:
    connection.execute(
        "DELETE FROM dirty_work WHERE agent_id = ? AND claim_rowid IN"
        " (SELECT claim_rowid FROM dirty_work WHERE agent_id = ? LIMIT ?)",
        (agent_id, agent_id, SETTLE_BATCH),
    )
    return connection.changes()


@attrs.define(eq=False)
class MaintenanceActor:
    agent_id: AgentId
    database: Database
    limiters: Limiters
    vectors: VectorStoreManager
    slot: VectorSlot
    audit: AuditBuffer
    interval_s: float
    passes: int = 0
    settled: int = 0

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        while True:
            await trio.sleep(self.interval_s)
            await self.run_pass()

    async def run_pass(self) -> None:
        """One bounded pass; also called once more by the supervisor when it stops."""
        agent_id = self.agent_id
        # The manager knows whether the index changed since its last save (a version
        # compare); asking costs nothing, the file is written only then. Only the
        # projection serving now: one that stopped serving was saved when it was released.
        identity = self.slot.identity
        if identity is not None and self.vectors.is_dirty(agent_id, identity):
            await run_in_thread(
                lambda: self.vectors.publish(agent_id, identity),
                limiter=self.limiters.index,
            )
        rows = self.audit.take()
        if rows:
            await self.database.write(lambda connection: append_audit(connection, rows))
        self.settled += await self.database.write(
            lambda connection: _settle_dirty(connection, agent_id)
        )
        # Forgotten text leaves the lexical index pages (cairn.store.fts_purge).
        await self.database.write(run_fts_purges)
        self.passes += 1
