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
    # Claims whose vectors were removed (forgotten; claim rowids are never reused) and the
    # rowid cutoff of the last clear: a commit that raced them must not re-add a vector.
    _removed_claims: set[int] = attrs.field(factory=set)
    _cleared_up_to: int = 0
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
        return target is EmbedTarget.CLAIM and (
            rowid in self._removed_claims or rowid <= self._cleared_up_to
        )

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

    async def remove_claim(self, rowid: int) -> None:
        self._removed_claims.add(rowid)  # first: an embedding in flight checks it
        index = self._index
        if index is None:
            return
        keys = np.asarray([vector_key(EmbedTarget.CLAIM, rowid)], dtype=np.int64)
        await run_in_thread(lambda: index.remove(keys), limiter=self.limiter)

    async def remove_claims_up_to(self, cutoff: int) -> None:
        """A clear's vector phase: every claim vector at or below ``cutoff`` goes."""
        # First: an embedding commit that raced the clear must not re-add a vector.
        self._cleared_up_to = max(self._cleared_up_to, cutoff)
        await self._ready.wait()
        index = self._index
        if index is None:
            return

        last = vector_key(EmbedTarget.CLAIM, cutoff)

        def remove() -> None:
            keys = index.keys()
            cleared = keys[is_claim_key(keys) & (keys <= last)]
            index.remove(np.asarray(cleared, dtype=np.int64))

        await run_in_thread(remove, limiter=self.limiter)
