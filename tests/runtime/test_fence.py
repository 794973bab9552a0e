"""Fences: advancing an epoch cancels live passes of the old one, and a result carrying an
old identity is refused inside the commit transaction even if cancellation never reached it."""

from __future__ import annotations

import pytest
import trio
from tests.helpers import turn

from cairn import Memory
from cairn.domain.claim import ClaimDraft, ClaimKind, SourceSpan
from cairn.domain.ids import AgentId, EventId
from cairn.errors import StaleResultError
from cairn.ingestion.validate import ValidatedBatch
from cairn.runtime.core import runtime_core
from cairn.runtime.fence import AgentFence
from cairn.runtime.writes import CommitBatch
from cairn.store.agents import advance_epoch
from cairn.store.batches import Lease
from cairn.store.evidence import load_events


async def test_advance_cancels_old_scopes_with_a_reason() -> None:
    fence = AgentFence(AgentId("a"), 0)
    old = fence.current()
    reached_end = False
    async with trio.open_nursery() as nursery:

        async def work() -> None:
            nonlocal reached_end
            with fence.pass_scope(old) as scope:
                await trio.sleep_forever()
            assert scope.cancelled_caught
            reached_end = True

        nursery.start_soon(work)
        await trio.testing.wait_all_tasks_blocked()
        fence.advance(1, "config switch")
    assert reached_end
    # Work that starts with a stale identity is cancelled at its first checkpoint.
    with fence.pass_scope(old) as scope:
        await trio.lowlevel.checkpoint()
    assert scope.cancelled_caught
    assert fence.is_current(fence.current())


async def test_stale_identity_is_refused_at_commit(memory: Memory) -> None:
    await memory.ingest("agent-a", [turn("e1", "I love sailing.")])
    await memory.wait_idle("agent-a")
    supervisor = await runtime_core(memory).registry.get("agent-a")
    stale_identity = supervisor.fence.current()
    await runtime_core(memory).database.write(
        lambda connection: advance_epoch(connection, AgentId("agent-a"))
    )

    def events(reader):
        rowid = reader.connection.execute(
            "SELECT rowid FROM events WHERE event_id = 'e1'"
        ).fetchone()[0]
        return list(
            load_events(reader.connection, AgentId("agent-a"), [rowid]).values()
        )

    batch = await runtime_core(memory).database.read(events)
    draft = ClaimDraft(
        ClaimKind.FACT, "Ana owns a red sailboat", (SourceSpan(EventId("e1"), 0, 6),)
    )
    # The identity is checked first, inside the transaction: the lease is never reached.
    lease = Lease(999, "token", 0.0, 1, "flush", tuple(batch))
    request = CommitBatch(
        lease=lease, batch=ValidatedBatch((draft,), (), (), 0), identity=stale_identity
    )
    with pytest.raises(StaleResultError):
        await supervisor.commit(request)
    texts = await runtime_core(memory).database.read(
        lambda reader: [
            r[0] for r in reader.connection.execute("SELECT text FROM claims")
        ]
    )
    assert "Ana owns a red sailboat" not in texts
