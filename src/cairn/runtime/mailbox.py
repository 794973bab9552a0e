"""Small coordination primitives shared by actors."""

from __future__ import annotations

from typing import Generic, TypeVar

import attrs
import trio

__all__ = ["Reply", "WorkCounter"]

T = TypeVar("T")


@attrs.define(eq=False)
class Reply(Generic[T]):
    """A one-shot reply slot: the replier sets a value or an error, the caller waits."""

    _event: trio.Event = attrs.field(factory=trio.Event, init=False)
    _value: T | None = attrs.field(default=None, init=False)
    _error: BaseException | None = attrs.field(default=None, init=False)

    @property
    def done(self) -> bool:
        return self._event.is_set()

    def set(self, value: T) -> None:
        self._value = value
        self._event.set()

    def fail(self, error: BaseException) -> None:
        self._error = error
        self._event.set()

    async def wait(self) -> T:
        await self._event.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


@attrs.define(eq=False)
class WorkCounter:
    """Outstanding units of owned work; ``wait_zero`` returns once all have settled."""

    outstanding: int = 0
    _idle: trio.Event = attrs.field(factory=trio.Event, init=False)

    def __attrs_post_init__(self) -> None:
        self._idle.set()

    def add(self, count: int = 1) -> None:
        if count <= 0:
            return
        if self.outstanding == 0:
            self._idle = trio.Event()
        self.outstanding += count

    def done(self, count: int = 1) -> None:
        self.outstanding = max(0, self.outstanding - count)
        if self.outstanding == 0:
            self._idle.set()

    async def wait_zero(self) -> None:
        while self.outstanding:
            await self._idle.wait()
        await trio.lowlevel.checkpoint()
