"""One agent's contributions: a durable record of every recall, one per host turn.

Every recall answer is recorded through the agent's write coordinator before it is handed
back (:class:`~cairn.runtime.writes.RecordRecall`): the ID-only manifest, and the answer
itself for a later fetch. A crash right after a recall returned never loses its record.

A recall that names the host's turn (``RecallPlan.turn_id``) contributes once to it: a
second recall for the same agent, session and turn returns the recorded contribution (the
same request ID and blocks) without retrieving, counting or auditing again, unless a
forget, clear or suppression committed since. Recalls for one turn are serialised here, so
concurrent ones compute once; one still pending is waited for, not started again.
"""

from __future__ import annotations

import collections
import contextlib
import logging
from typing import TYPE_CHECKING

import attrs
import msgspec
import trio

from cairn.api.reports import AttentionItem, AttentionKind, RecallRecord
from cairn.domain.ids import AgentId
from cairn.errors import StoreError
from cairn.retrieval.suppress import hidden_events
from cairn.retrieval.types import Manifest, Recall, RecallStatus
from cairn.runtime.database import Database
from cairn.runtime.mailbox import Reply
from cairn.runtime.writes import CompleteRecall, RecordRecall, WriteQueue
from cairn.serde.recall import recall_from_bytes, recall_to_bytes
from cairn.store.attention import open_notices
from cairn.store.evidence import load_events
from cairn.store.recall_records import list_records, turn_contribution

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    import apsw

    from cairn.runtime.recall import RecallPlan

__all__ = ["Contributions", "encode_manifest", "read_attention", "read_records"]

logger = logging.getLogger(__name__)

# Snapshot epochs of computed recalls whose answer is not recorded yet. A caller that gave
# up leaves its entry behind: bounded, the oldest go (that answer's text is then not kept,
# the safe side).
_EPOCHS_KEPT = 4096

TurnKey = tuple[str | None, str]
_manifest_decoder = msgspec.json.Decoder(Manifest)


def encode_manifest(manifest: Manifest | None) -> str | None:
    return None if manifest is None else msgspec.json.encode(manifest).decode()


def read_records(
    connection: apsw.Connection,
    agent_id: AgentId,
    *,
    session_id: str | None,
    limit: int,
) -> list[RecallRecord]:
    """The agent's recall records, newest first (a reader thread's work)."""
    return [
        RecallRecord(
            request_id=row.request_id,
            status=row.status,
            at=row.created_at,
            session_id=row.session_id,
            turn_id=row.turn_id,
            manifest=None
            if row.manifest is None
            else _manifest_decoder.decode(row.manifest),
        )
        for row in list_records(
            connection, agent_id, session_id=session_id, limit=limit
        )
    ]


def read_attention(
    connection: apsw.Connection,
    agent_id: AgentId,
    *,
    session_id: str | None,
    limit: int,
) -> list[AttentionItem]:
    """Unconsumed notices with their events loaded as recall loads them (owner-checked,
    withdrawn, cleared and forgotten-claim sources left out): a notice whose event does
    not load is not shown."""
    notices = open_notices(connection, agent_id, session_id=session_id, limit=limit)
    rowids = [n.event_rowid for n in notices if n.event_rowid is not None]
    events = load_events(connection, agent_id, rowids)
    hidden = hidden_events(connection, agent_id, events)
    items = []
    for notice in notices:
        event = None
        if notice.event_rowid is not None:
            event = events.get(notice.event_rowid)
            if event is None or event.rowid in hidden:
                continue
        items.append(
            AttentionItem(
                item_id=notice.item_id,
                kind=AttentionKind(notice.kind),
                first_at=notice.created_at,
                latest_at=notice.updated_at,
                count=notice.count,
                session_id=notice.session_id,
                request_id=notice.request_id,
                event_id=None if event is None else str(event.event_id),
                text=None if event is None else event.text,
            )
        )
    return items


@attrs.define(eq=False)
class _TurnGate:
    lock: trio.Lock = attrs.field(factory=trio.Lock)
    users: int = 0


@attrs.define(eq=False)
class Contributions:
    agent_id: AgentId
    database: Database
    writes: WriteQueue
    # The agent's pending recalls (request ID → the work's reply), owned by the supervisor.
    late: dict[str, Reply[Recall]]
    keep: int
    records_failed: int = 0
    _epochs: collections.OrderedDict[str, int] = attrs.field(
        factory=collections.OrderedDict
    )
    _turns: dict[TurnKey, _TurnGate] = attrs.field(factory=dict)

    def computed(self, request_id: str, snapshot_epoch: int) -> None:
        """A recall was computed on a snapshot of this forget epoch."""
        self._epochs[request_id] = snapshot_epoch
        while len(self._epochs) > _EPOCHS_KEPT:
            self._epochs.popitem(last=False)

    async def contribute(
        self,
        plan: RecallPlan,
        wait_s: float,
        answer: Callable[[RecallPlan, float], Awaitable[Recall]],
    ) -> Recall:
        """The turn's recorded contribution, or ``answer``'s, recorded before it returns."""
        turn_id = plan.turn_id
        if turn_id is None:
            return await self._record(plan, await answer(plan, wait_s))
        key = (plan.context.session_id, turn_id)
        async with self._gate(key):
            reused = await self._reuse(key, wait_s)
            if reused is not None:
                return reused
            return await self._record(plan, await answer(plan, wait_s))

    async def complete(
        self,
        request_id: str,
        recall: Recall | None,
        snapshot_epoch: int | None = None,
    ) -> bool:
        """A pending recall's late result (``None``: its work failed), its record
        completed and its notice added in one transaction; ``False`` if not stored."""
        self._epochs.pop(request_id, None)
        return await self.writes.commit(
            CompleteRecall(
                request_id,
                "failed" if recall is None else recall.status.value,
                None if recall is None else recall_to_bytes(recall),
                None if recall is None else encode_manifest(recall.manifest),
                snapshot_epoch,
                keep=self.keep,
            )
        )

    async def _record(self, plan: RecallPlan, recall: Recall) -> Recall:
        epoch = self._epochs.pop(recall.request_id, None)
        pending = recall.status is RecallStatus.PENDING
        request = RecordRecall(
            recall.request_id,
            plan.context.session_id,
            plan.turn_id,
            recall.status.value,
            encode_manifest(recall.manifest),
            None if pending else recall_to_bytes(recall),
            None if pending else epoch,
            keep=self.keep,
        )
        try:
            await self.writes.commit(request)
        except StoreError as error:
            # A full or failing disk refuses writes but recall keeps serving (reads
            # work): the answer goes out unrecorded, counted and logged.
            self.records_failed += 1
            logger.warning(
                "recall record of agent %s not written: %s",
                self.agent_id,
                type(error).__name__,
            )
        return recall

    async def _reuse(self, key: TurnKey, wait_s: float) -> Recall | None:
        agent_id = self.agent_id
        session_id, turn_id = key
        found = await self.database.read(
            lambda reader: turn_contribution(
                reader.connection, agent_id, session_id, turn_id
            )
        )
        if found is None or not found.current:
            return None
        if found.result is not None:
            return recall_from_bytes(found.result)
        reply = self.late.get(found.request_id)
        if reply is None:
            return None  # failed, refused or dropped: the turn gets a new one
        with trio.move_on_after(wait_s):
            return await reply.wait()
        return Recall(RecallStatus.PENDING, found.request_id)

    @contextlib.asynccontextmanager
    async def _gate(self, key: TurnKey) -> AsyncIterator[None]:
        gate = self._turns.setdefault(key, _TurnGate())
        gate.users += 1
        try:
            async with gate.lock:
                yield
        finally:
            gate.users -= 1
            if not gate.users:
                del self._turns[key]
