"""Agent fences: the current execution identity plus the cancel scopes of live work.

A pass registers its scope under the identity it started with; ``advance`` bumps the epoch
and cancels every scope of the old one. Cancellation is best effort (work may be in a
thread), so the write coordinator re-checks the identity inside the commit transaction too
(tests/runtime/test_fence.py).
"""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING

import attrs
import trio

from cairn.domain.identity import ExecutionIdentity
from cairn.domain.ids import AgentId

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["AgentFence"]


@attrs.define(eq=False)
class AgentFence:
    agent_id: AgentId
    epoch: int
    _scopes: dict[int, set[trio.CancelScope]] = attrs.field(factory=dict, init=False)

    def current(self) -> ExecutionIdentity:
        """A fresh identity for a unit of work starting now."""
        return ExecutionIdentity(self.agent_id, self.epoch, uuid.uuid4().hex)

    def is_current(self, identity: ExecutionIdentity) -> bool:
        return (
            identity.agent_id == self.agent_id and identity.config_epoch == self.epoch
        )

    @contextlib.contextmanager
    def pass_scope(self, identity: ExecutionIdentity) -> Iterator[trio.CancelScope]:
        """A cancel scope registered under ``identity``; cancelled at once if already stale."""
        scope = trio.CancelScope()
        if not self.is_current(identity):
            scope.cancel()
        live = self._scopes.setdefault(identity.config_epoch, set())
        live.add(scope)
        try:
            with scope:
                yield scope
        finally:
            live.discard(scope)

    def advance(self, new_epoch: int, reason: str) -> None:
        """Move to ``new_epoch`` and cancel all work of older epochs."""
        self.epoch = new_epoch
        for epoch in [epoch for epoch in self._scopes if epoch < new_epoch]:
            for scope in self._scopes.pop(epoch):
                scope.cancel(reason=f"epoch advanced: {reason}")
