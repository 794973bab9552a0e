"""Fair shares of background capacity between agents.

The machine's background capacity (threads doing writes, extraction and document
embedding; ``cores - 1`` of them) is one pool for every agent. A plain FIFO limiter lets an
agent with a large intake hold several places in the queue at once (its writer, its
extractor and its embedder each wait for a token), so a small agent waits behind all of
them. :class:`FairLimiter` queues waiters per owner and grants a freed token to the
owners in turn, and interactive work (a user's own write: an ingest, a remember, a
directive) before bulk work (extraction, embedding, clear batches, maintenance): one
agent's large job delays another's step by at most one slice of it
(tests/runtime/test_fairness.py, bench/fair_share.py, bench/clear_interleave.py).

Who is asking is read from :data:`current_share`, a context variable each actor sets when
it starts (and the write coordinator sets per request), so code far below (the embedded
model's thread runner) needs no extra argument.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import enum
from typing import TYPE_CHECKING

import attrs
import trio

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["FairLimiter", "Priority", "Share", "current_share"]


class Priority(enum.IntEnum):
    INTERACTIVE = 0
    BULK = 1


@attrs.frozen
class Share:
    """Whose work this is, and how urgent."""

    owner: str
    priority: Priority = Priority.BULK


current_share: contextvars.ContextVar[Share] = contextvars.ContextVar(
    "cairn_share",
    default=Share(""),  # noqa: B039 - a frozen record, never mutated
)


@attrs.define(eq=False)
class _Waiter:
    granted: trio.Event = attrs.field(factory=trio.Event)


@attrs.define(eq=False)
class FairLimiter:
    total_tokens: int
    _free: int = attrs.field(init=False)
    # priority -> owner -> waiters, owners in the order they are to be served.
    _queues: dict[
        Priority, collections.OrderedDict[str, collections.deque[_Waiter]]
    ] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        if self.total_tokens < 1:
            raise ValueError("a limiter needs at least one token")
        self._free = self.total_tokens
        self._queues = {priority: collections.OrderedDict() for priority in Priority}

    @property
    def waiting(self) -> int:
        return sum(len(q) for queue in self._queues.values() for q in queue.values())

    @contextlib.asynccontextmanager
    async def slot(self, share: Share | None = None) -> AsyncIterator[None]:
        """Hold one token for the body; waits its owner's turn if none is free."""
        await self._acquire(current_share.get() if share is None else share)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, share: Share) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._free and not self.waiting:
            # Taken with no checkpoint after it that could raise: a cancel here would
            # leak the token (trio's own limiter orders it the same way).
            self._free -= 1
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        waiter = _Waiter()
        queue = self._queues[share.priority].setdefault(
            share.owner, collections.deque()
        )
        queue.append(waiter)
        try:
            await waiter.granted.wait()
        except BaseException:
            if waiter.granted.is_set():
                self._release()  # granted as it was cancelled: pass the token on
            else:
                queue.remove(waiter)
                if not queue:
                    self._queues[share.priority].pop(share.owner, None)
            raise

    def _release(self) -> None:
        for priority in Priority:
            owners = self._queues[priority]
            if not owners:
                continue
            owner, queue = next(iter(owners.items()))
            waiter = queue.popleft()
            # The owner served goes to the back of the line: owners take turns.
            owners.pop(owner)
            if queue:
                owners[owner] = queue
            waiter.granted.set()  # the token passes straight to it
            return
        self._free += 1
