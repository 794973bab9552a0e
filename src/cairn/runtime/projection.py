"""An agent's live vector projection: the one object that changes what recall searches.

The index itself is rebuildable (from the embeddings table); what this object adds is the
bookkeeping that keeps it honest while work races: which identity it serves, whether a
backlog is still being embedded, and which claims were removed since (a forget or clear)
so that an embedding commit that raced them never puts their vectors back
(tests/runtime/test_forget.py). Every mutation goes through a method here; readers take
:attr:`index` and :attr:`identity` as a pair.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import numpy as np
import trio

from cairn.runtime.threads import run_in_thread
from cairn.vectors.identity import EmbeddingIdentity
from cairn.vectors.index import ExactVectorIndex
from cairn.vectors.keys import EmbedTarget, is_claim_key, vector_key

if TYPE_CHECKING:
    from collections.abc import Iterable

    import numpy.typing as npt


__all__ = ["Projection"]


@attrs.define(eq=False)
class Projection:
    """The agent's vector projection and its identity, or ``None`` while unavailable."""

    limiter: trio.CapacityLimiter
    _index: ExactVectorIndex | None = None
    _identity: EmbeddingIdentity | None = None
    # True while a backlog of evidence is being (re-)embedded for the current identity,
    # e.g. after the embedding model changed: recall says `reindexing` meanwhile.
    _reindexing: bool = False
    _caught_up: trio.Event = attrs.field(factory=trio.Event)
    _ready: trio.Event = attrs.field(factory=trio.Event)
    # Claims and turns whose vectors were removed (forgotten; neither rowid is ever reused)
    # and the rowid cutoffs of the last clear: a commit that raced them must not re-add a
    # vector.
    _removed_claims: set[int] = attrs.field(factory=set)
    _removed_events: set[int] = attrs.field(factory=set)
    _cleared_up_to: int = 0
    _events_cleared_up_to: int = 0
    # The last failure to save the projection's file, if the latest attempt failed: the
    # projection in memory still serves (it holds exactly the committed blobs), the file
    # is rebuilt from the table at the next start.
    save_error: str | None = None

    # -- reading ------------------------------------------------------------------------
    @property
    def index(self) -> ExactVectorIndex | None:
        return self._index

    @property
    def identity(self) -> EmbeddingIdentity | None:
        return self._identity

    @property
    def reindexing(self) -> bool:
        return self._reindexing

    @property
    def caught_up(self) -> trio.Event:
        """Set once the current identity's backlog is embedded (replaced on a switch)."""
        return self._caught_up

    async def wait_ready(self) -> None:
        """Until the first warm-up installed a projection (or gave up on one)."""
        await self._ready.wait()

    def was_removed(self, target: EmbedTarget, rowid: int) -> bool:
        if target is EmbedTarget.CLAIM:
            return rowid in self._removed_claims or rowid <= self._cleared_up_to
        return rowid in self._removed_events or rowid <= self._events_cleared_up_to

    def __len__(self) -> int:
        return 0 if self._index is None else len(self._index)

    # -- the embedding actor's -----------------------------------------------------------
    def install(
        self, index: ExactVectorIndex, identity: EmbeddingIdentity, *, backlog: bool
    ) -> None:
        self._index = index
        self._identity = identity
        self._reindexing = backlog
        self._ready.set()

    def mark_unavailable(self) -> None:
        """Warm-up failed: recall goes lexical (``vector_unavailable``) until a retry."""
        self._index = None
        self._identity = None
        self._ready.set()

    def settle_backlog(self, caught_up: trio.Event) -> None:
        self._reindexing = False
        caught_up.set()

    async def upsert(
        self,
        identity: EmbeddingIdentity,
        keys: npt.NDArray[np.int64],
        vectors: npt.NDArray[np.float32],
    ) -> None:
        """Add vectors of ``identity``; nothing if the projection serves another one now."""
        index = self._index
        if index is None or self._identity != identity or not len(keys):
            return
        await run_in_thread(lambda: index.upsert(keys, vectors), limiter=self.limiter)

    # -- switching, forgetting, clearing, retiring -----------------------------------------
    def retire(self) -> None:
        """Stop serving the current projection at once (the embedding identity changed)."""
        self._index = None
        self._identity = None
        self._reindexing = True
        self._caught_up = trio.Event()

    def expect_backlog(self) -> None:
        """Rows without vectors arrived (an import): keep serving, but say
        ``reindexing`` and let ``caught_up`` wait until the sweep has embedded them."""
        self._reindexing = True
        self._caught_up = trio.Event()

    def drop(self) -> None:
        """The agent is being retired: nothing is served from here on."""
        self._index = None

    async def remove(
        self,
        claims: Iterable[int] = (),
        events: Iterable[int] = (),
        *,
        stale: Iterable[int] = (),
    ) -> None:
        """Forgotten claims' and turns' vectors go for good; ``stale`` turns' vectors go
        until they are embedded again (they were embedded with a forgotten context)."""
        claims, events, stale = list(claims), list(events), list(stale)
        # First: an embedding in flight checks these.
        self._removed_claims.update(claims)
        self._removed_events.update(events)
        index = self._index
        if index is None:
            return
        keys = np.asarray(
            [vector_key(EmbedTarget.CLAIM, rowid) for rowid in claims]
            + [vector_key(EmbedTarget.EVENT, rowid) for rowid in [*events, *stale]],
            dtype=np.int64,
        )
        if len(keys):
            await run_in_thread(lambda: index.remove(keys), limiter=self.limiter)

    async def remove_cleared(self, claim_cutoff: int, event_cutoff: int | None) -> None:
        """A clear's vector phase: every claim vector at or below ``claim_cutoff`` goes,
        and every turn's at or below ``event_cutoff`` (``None``: turns were kept)."""
        # First: an embedding commit that raced the clear must not re-add a vector.
        self._cleared_up_to = max(self._cleared_up_to, claim_cutoff)
        if event_cutoff is not None:
            self._events_cleared_up_to = max(self._events_cleared_up_to, event_cutoff)
        await self._ready.wait()
        index = self._index
        if index is None:
            return

        last_claim = vector_key(EmbedTarget.CLAIM, claim_cutoff)
        last_event = (
            None
            if event_cutoff is None
            else vector_key(EmbedTarget.EVENT, event_cutoff)
        )

        def remove() -> None:
            keys = index.keys()
            claim_keys = is_claim_key(keys)
            cleared = claim_keys & (keys <= last_claim)
            if last_event is not None:
                cleared |= ~claim_keys & (keys <= last_event)
            index.remove(np.asarray(keys[cleared], dtype=np.int64))

        await run_in_thread(remove, limiter=self.limiter)
