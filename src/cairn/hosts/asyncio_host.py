"""cairn inside an asyncio program: the trio runtime as a guest on the host's event loop.

trio-asyncio runs asyncio code inside trio, not the reverse, so an asyncio host embeds cairn
through trio's guest mode (``trio.lowlevel.start_guest_run``): trio schedules its tasks
as callbacks on the asyncio loop and waits for I/O in a helper thread. Both loops share the
host's thread; cairn's blocking work still runs in its own worker threads, so the asyncio
loop is never blocked by cairn.

    async with open_asyncio_memory("/path/to/data") as memory:
        await memory.ingest("agent-1", [cairn.Turn(...)])
        recall = await memory.recall("agent-1", "what does Ana like?")

Each method is an asyncio coroutine that runs the matching :class:`cairn.Memory` call as a
trio task. Cancelling the asyncio caller cancels that trio task (with the same cancellation
guarantees as the embedded API: an ingest commits whole or not at all). For hosts in
another process, use the IPC protocol instead (cairn.ipc).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import trio

from cairn.errors import RuntimeClosedError
from cairn.runtime.memory import Memory, open_memory

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
    from pathlib import Path

    import outcome

    from cairn.api.reports import (
        AttentionItem,
        ClearReport,
        DrainReport,
        EditReport,
        Entity,
        EvidenceItem,
        FeedbackReport,
        IngestReport,
        MaintenanceReport,
        MemoryDetail,
        MemoryItem,
        RecallRecord,
        ReconfigureReport,
        RetireReport,
    )
    from cairn.api.status import StatusReport
    from cairn.clock import DomainClock
    from cairn.config import MemoryConfig
    from cairn.domain.directive import Directive
    from cairn.domain.evidence import Turn
    from cairn.domain.metadata import Metadata
    from cairn.domain.outcomes import (
        Conflict,
        ForgetResult,
        IntakeResult,
        LifecycleResult,
        RememberResult,
    )
    from cairn.domain.scope import RecallContext, Scope
    from cairn.providers.embedding import EmbeddingProvider
    from cairn.retrieval.types import Recall

__all__ = ["AsyncioDirectives", "AsyncioMemory", "open_asyncio_memory"]

T = TypeVar("T")


@attrs.define(eq=False)
class AsyncioMemory:
    """The embedded API with asyncio-native methods; build it with open_asyncio_memory."""

    _loop: asyncio.AbstractEventLoop
    _token: trio.lowlevel.TrioToken
    _memory: Memory
    _nursery: trio.Nursery
    _stop: trio.Event
    _scopes: dict[asyncio.Future[Any], trio.CancelScope] = attrs.field(factory=dict)
    _closing: bool = False

    async def _call(self, function: Callable[[Memory], Awaitable[T]]) -> T:
        if self._closing:
            raise RuntimeClosedError("the memory runtime is closed")
        future: asyncio.Future[T] = self._loop.create_future()
        future.add_done_callback(self._cancel_if_abandoned)
        try:
            self._token.run_sync_soon(self._start, function, future)
        except trio.RunFinishedError:
            future.cancel()
            raise RuntimeClosedError("the memory runtime has stopped") from None
        return await future

    def _start(
        self, function: Callable[[Memory], Awaitable[T]], future: asyncio.Future[T]
    ) -> None:
        # Runs inside trio (via the token), on the host's thread.
        if future.done():
            return
        self._nursery.start_soon(self._run, function, future)

    async def _run(
        self, function: Callable[[Memory], Awaitable[T]], future: asyncio.Future[T]
    ) -> None:
        with trio.CancelScope() as scope:
            self._scopes[future] = scope
            try:
                value = await function(self._memory)
            except trio.Cancelled:
                if not future.done():
                    future.set_exception(
                        RuntimeClosedError("the memory runtime closed")
                    )
                raise
            except Exception as error:  # noqa: BLE001 - handed to the asyncio caller
                if not future.done():
                    future.set_exception(error)
            else:
                if not future.done():
                    future.set_result(value)
            finally:
                self._scopes.pop(future, None)

    def _cancel_if_abandoned(self, future: asyncio.Future[Any]) -> None:
        if future.cancelled() and not self._closing:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._cancel_scope_of, future)

    def _cancel_scope_of(self, future: asyncio.Future[Any]) -> None:
        scope = self._scopes.get(future)
        if scope is not None:
            scope.cancel(reason="the asyncio caller was cancelled")

    def request_close(self) -> None:
        """Refuse new calls and ask the runtime to close (open_asyncio_memory's exit does)."""
        self._closing = True
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self._stop.set)

    # -- the memory API (cairn.api.protocol.MemoryApi), each a Memory call --------------
    @property
    def directives(self) -> AsyncioDirectives:
        """``create``/``propose``/``approve``/``revoke``/``list``, as ``Memory.directives``."""
        return AsyncioDirectives(self)

    async def ingest(self, agent_id: str, turns: Sequence[Turn]) -> IngestReport:
        turns = list(turns)  # the trio task reads it later: a snapshot of the caller's
        return await self._call(lambda memory: memory.ingest(agent_id, turns))

    async def ingest_turn(self, agent_id: str, turn: Turn) -> IntakeResult:
        return await self._call(lambda memory: memory.ingest_turn(agent_id, turn))

    async def ingest_event(self, agent_id: str, event: Turn) -> IntakeResult:
        return await self._call(lambda memory: memory.ingest_event(agent_id, event))

    async def declare_session(
        self,
        agent_id: str,
        session_id: str,
        *,
        subagent: bool = False,
        forked_from: tuple[str, str] | None = None,
    ) -> None:
        await self._call(
            lambda memory: memory.declare_session(
                agent_id, session_id, subagent=subagent, forked_from=forked_from
            )
        )

    async def session_cursor(self, agent_id: str, session_id: str) -> str | None:
        return await self._call(
            lambda memory: memory.session_cursor(agent_id, session_id)
        )

    async def replay_dead_letters(self, agent_id: str) -> int:
        return await self._call(lambda memory: memory.replay_dead_letters(agent_id))

    async def wait_idle(self, agent_id: str | None = None) -> None:
        await self._call(lambda memory: memory.wait_idle(agent_id))

    async def recall(
        self,
        agent_id: str,
        query: str,
        *,
        context: RecallContext | None = None,
        session_id: str | None = None,
        k: int | None = None,
        budget_bytes: int | None = None,
        wait_s: float | None = None,
        query_vector: Iterable[float] | None = None,
        as_of: dt.datetime | None = None,
        turn_id: str | None = None,
        include_noise: bool = False,
        tags: Sequence[str] = (),
        kinds: Sequence[str] = (),
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
    ) -> Recall:
        return await self._call(
            lambda memory: memory.recall(
                agent_id,
                query,
                context=context,
                session_id=session_id,
                k=k,
                budget_bytes=budget_bytes,
                wait_s=wait_s,
                query_vector=query_vector,
                as_of=as_of,
                turn_id=turn_id,
                include_noise=include_noise,
                tags=tags,
                kinds=kinds,
                since=since,
                until=until,
            )
        )

    async def fetch_recall(self, agent_id: str, request_id: str) -> Recall:
        return await self._call(
            lambda memory: memory.fetch_recall(agent_id, request_id)
        )

    async def recalls(
        self, agent_id: str, *, session_id: str | None = None, limit: int = 50
    ) -> list[RecallRecord]:
        return await self._call(
            lambda memory: memory.recalls(agent_id, session_id=session_id, limit=limit)
        )

    async def feedback(
        self,
        agent_id: str,
        request_id: str,
        *,
        used: Sequence[str] = (),
        wrong: Sequence[str] = (),
    ) -> FeedbackReport:
        return await self._call(
            lambda memory: memory.feedback(agent_id, request_id, used=used, wrong=wrong)
        )

    async def maintain(self, agent_id: str) -> MaintenanceReport:
        return await self._call(lambda memory: memory.maintain(agent_id))

    async def attention(
        self, agent_id: str, *, session_id: str | None = None, limit: int = 50
    ) -> list[AttentionItem]:
        return await self._call(
            lambda memory: memory.attention(
                agent_id, session_id=session_id, limit=limit
            )
        )

    async def consume_attention(self, agent_id: str, item_ids: Sequence[int]) -> int:
        return await self._call(
            lambda memory: memory.consume_attention(agent_id, item_ids)
        )

    async def clear(self, agent_id: str) -> ClearReport:
        return await self._call(lambda memory: memory.clear(agent_id))

    async def wait_cleared(self, agent_id: str) -> None:
        await self._call(lambda memory: memory.wait_cleared(agent_id))

    async def remember(
        self,
        agent_id: str,
        text: str,
        *,
        by: str,
        kind: str = "fact",
        scope: Scope | None = None,
        metadata: Metadata | None = None,
    ) -> RememberResult:
        return await self._call(
            lambda memory: memory.remember(
                agent_id, text, kind=kind, scope=scope, by=by, metadata=metadata
            )
        )

    async def forget(self, agent_id: str, item_id: str) -> ForgetResult:
        return await self._call(lambda memory: memory.forget(agent_id, item_id))

    async def conflicts(
        self, agent_id: str, *, include_resolved: bool = False
    ) -> list[Conflict]:
        return await self._call(
            lambda memory: memory.conflicts(agent_id, include_resolved=include_resolved)
        )

    async def resolve_conflict(
        self, agent_id: str, conflict_id: str, *, keep: str
    ) -> Conflict:
        return await self._call(
            lambda memory: memory.resolve_conflict(agent_id, conflict_id, keep=keep)
        )

    async def entities(
        self, agent_id: str, *, name: str | None = None, limit: int = 100
    ) -> list[Entity]:
        return await self._call(
            lambda memory: memory.entities(agent_id, name=name, limit=limit)
        )

    async def evidence(self, agent_id: str, refs: Sequence[str]) -> list[EvidenceItem]:
        return await self._call(lambda memory: memory.evidence(agent_id, refs))

    async def memories(
        self,
        agent_id: str,
        *,
        kind: str | None = None,
        scope: Scope | None = None,
        lifecycle: str | None = None,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        text: str | None = None,
        tags: Sequence[str] = (),
        limit: int = 50,
    ) -> list[MemoryItem]:
        return await self._call(
            lambda memory: memory.memories(
                agent_id,
                kind=kind,
                scope=scope,
                lifecycle=lifecycle,
                since=since,
                until=until,
                text=text,
                tags=tags,
                limit=limit,
            )
        )

    async def memory(self, agent_id: str, claim_id: str) -> MemoryDetail:
        return await self._call(lambda memory: memory.memory(agent_id, claim_id))

    async def edit(self, agent_id: str, claim_id: str, text: str) -> EditReport:
        return await self._call(lambda memory: memory.edit(agent_id, claim_id, text))

    async def archive(self, agent_id: str, claim_id: str) -> LifecycleResult:
        return await self._call(lambda memory: memory.archive(agent_id, claim_id))

    async def unarchive(self, agent_id: str, claim_id: str) -> LifecycleResult:
        return await self._call(lambda memory: memory.unarchive(agent_id, claim_id))

    async def retire(self, agent_id: str) -> RetireReport:
        return await self._call(lambda memory: memory.retire(agent_id))

    async def add_directive(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> str:
        return await self._call(
            lambda memory: memory.add_directive(agent_id, text, kind=kind)
        )

    async def reconfigure(self) -> ReconfigureReport:
        return await self._call(lambda memory: memory.reconfigure())

    async def status(self) -> StatusReport:
        return await self._call(lambda memory: memory.status())

    async def drain(self, timeout_s: float | None = None) -> DrainReport:
        return await self._call(lambda memory: memory.drain(timeout_s))

    async def resume(self) -> None:
        await self._call(lambda memory: memory.resume())


@attrs.frozen
class AsyncioDirectives:
    """``memory.directives`` of the asyncio adapter: the embedded facade's methods."""

    memory: AsyncioMemory

    async def create(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive:
        """Create an active directive. Call only on an explicit user action."""
        return await self.memory._call(  # noqa: SLF001 - the adapter's own runner
            lambda memory: memory.directives.create(agent_id, text, kind=kind)
        )

    async def propose(
        self, agent_id: str, text: str, *, kind: str = "instruction"
    ) -> Directive:
        """Record a suggested directive as a draft; it has no effect until approved."""
        return await self.memory._call(  # noqa: SLF001
            lambda memory: memory.directives.propose(agent_id, text, kind=kind)
        )

    async def approve(self, agent_id: str, directive_id: str) -> Directive:
        return await self.memory._call(  # noqa: SLF001
            lambda memory: memory.directives.approve(agent_id, directive_id)
        )

    async def revoke(self, agent_id: str, directive_id: str) -> Directive:
        return await self.memory._call(  # noqa: SLF001
            lambda memory: memory.directives.revoke(agent_id, directive_id)
        )

    async def list(
        self, agent_id: str, *, status: str | None = None
    ) -> list[Directive]:
        """Directives of the agent, ``updated_at DESC, id ASC`` (optionally one status)."""
        return await self.memory._call(  # noqa: SLF001
            lambda memory: memory.directives.list(agent_id, status=status)
        )


@contextlib.asynccontextmanager
async def open_asyncio_memory(
    path: str | Path,
    config: MemoryConfig | None = None,
    *,
    clock: DomainClock | None = None,
    embedder: EmbeddingProvider | None = None,
) -> AsyncIterator[AsyncioMemory]:
    """Start cairn as a trio guest on the running asyncio loop; close it on exit.

    Closing drains accepted work as the embedded ``open_memory`` does. Only one trio run
    may be active per thread, so open one of these per asyncio loop.
    """
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[AsyncioMemory] = loop.create_future()
    finished: asyncio.Future[outcome.Outcome[None]] = loop.create_future()

    async def trio_main() -> None:
        async with (
            open_memory(path, config, clock=clock, embedder=embedder) as memory,
            trio.open_nursery() as nursery,
        ):
            stop = trio.Event()
            ready.set_result(
                AsyncioMemory(
                    loop, trio.lowlevel.current_trio_token(), memory, nursery, stop
                )
            )
            await stop.wait()
            nursery.cancel_scope.cancel(reason="asyncio host closed the memory")

    def done(result: outcome.Outcome[None]) -> None:
        if not finished.done():
            finished.set_result(result)

    trio.lowlevel.start_guest_run(
        trio_main,
        run_sync_soon_threadsafe=loop.call_soon_threadsafe,
        done_callback=done,
        # asyncio owns signal handling (and its wakeup fd) on the main thread.
        host_uses_signal_set_wakeup_fd=True,
    )
    started: set[asyncio.Future[Any]] = {ready, finished}
    await asyncio.wait(started, return_when=asyncio.FIRST_COMPLETED)
    if not ready.done():
        ready.cancel()
        (await finished).unwrap()  # raises why the runtime did not start
        raise RuntimeClosedError("the memory runtime stopped before it started")
    adapter = ready.result()
    try:
        yield adapter
    finally:
        adapter.request_close()
        (await asyncio.shield(finished)).unwrap()
