"""Embedding: batches embed jobs, commits blobs under the fence, then upserts vectors.

Warm-up first makes the vector projection agree with the embeddings table (rebuilding it
from blobs, never calling the embedder for that) and then embeds whatever has no vector
yet, so work lost in a crash between commit and embedding is redone.

Vectors the store refuses (a full disk) are stored again with backoff, from the table of
what has no vector yet, until it takes them; every refusal and recovery is reported to
the agent's stall watch (cairn.runtime.stall_watch), so a wait for idle gives up on a
store that stays broken instead of waiting forever.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING

import attrs
import numpy as np
import trio

from cairn import crashpoints
from cairn.domain.ids import AgentId
from cairn.errors import StaleResultError, StoreError, VectorIndexError
from cairn.runtime.backoff import Backoff
from cairn.runtime.database import Database, Reader
from cairn.runtime.fairness import Share, current_share
from cairn.runtime.fence import AgentFence
from cairn.runtime.mailbox import WorkCounter
from cairn.runtime.messages import EmbedJob
from cairn.runtime.projection import Projection
from cairn.runtime.providers import ActiveEmbedder
from cairn.runtime.stall_watch import StallWatch, is_storage_fault
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.runtime.writes import StoreEmbeddings, WriteQueue
from cairn.store.embeddings import (
    count_embeddings,
    count_missing,
    embedding_digest,
    iter_embeddings,
    missing_targets,
)
from cairn.store.evidence import load_events
from cairn.vectors.codec import encode_vector
from cairn.vectors.identity import EmbeddingIdentity
from cairn.vectors.keys import EmbedTarget, vector_key
from cairn.vectors.manager import VectorStoreManager

if TYPE_CHECKING:
    from cairn.providers.embedding import EmbeddingProvider, Vectors

__all__ = ["EmbeddingActor"]

logger = logging.getLogger(__name__)

# The step this actor's writes are reported under (cairn.runtime.stall_watch).
STEP = "embedding"


@attrs.define(eq=False)
class EmbeddingActor:
    agent_id: AgentId
    database: Database
    limiters: Limiters
    fence: AgentFence
    active: ActiveEmbedder
    vectors: VectorStoreManager
    projection: Projection
    jobs_receive: trio.MemoryReceiveChannel[EmbedJob]
    writes: WriteQueue
    work: WorkCounter
    batch_size: int
    linger_s: float
    slice_bytes: int = 8_000
    stall: StallWatch = attrs.field(factory=StallWatch)
    embedded: int = 0
    stale: int = 0
    failed: int = 0
    restarts: int = 0
    deferred: int = 0
    retry: Backoff = attrs.field(factory=lambda: Backoff("vector warm-up"))
    store_retry: Backoff = attrs.field(factory=lambda: Backoff("storing vectors"))
    # The store's refusal of the last batch's vectors, until a retry stores them.
    _store_error: StoreError | None = None
    _deferring: bool = False
    _serving: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    _served_identity: EmbeddingIdentity | None = None

    def restart(self) -> None:
        """Drop what is in flight and warm up again with the embedder now active."""
        self._serving.cancel(reason="embedding identity changed")

    def defer(self) -> None:
        """Stop calling the provider for good (the agent is stopping).

        The call in flight is cancelled, not awaited (a hung provider must not hold up a
        stop), and later jobs settle without a vector: the evidence and claims are
        committed, so the next start's warm-up sweep embeds them.
        """
        self._deferring = True
        self._serving.cancel(reason="agent stopping")

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        # Whose turn this actor's background work takes (cairn.runtime.fairness).
        current_share.set(Share(self.agent_id))
        async with self.jobs_receive, self.writes:
            task_status.started()
            while not self._deferring:
                with self._serving:
                    if await self._warmed_up():
                        await self._serve()
                        return
                    continue
                # A switch cancelled this identity's service; whatever it dropped has no
                # vector of the new identity, so the next warm-up's sweep finds it.
                self.restarts += 1
                self._serving = trio.CancelScope()
            async for _job in self.jobs_receive:
                self.deferred += 1
                self.work.done(1)

    async def _warmed_up(self) -> bool:
        """Warm up; on an I/O failure (too many open files, a full disk, a damaged
        table) recall goes lexical and the warm-up is retried with backoff, never the
        end of the agent (tests/runtime/test_faults.py)."""
        try:
            await self._warm_up()
        except (OSError, StoreError, VectorIndexError) as error:
            self.projection.mark_unavailable()
            self.stall.failed(STEP, error)
            delay = self.retry.failed(error)
            await trio.sleep(delay)
            return False
        self.retry.succeeded()
        self.stall.committed(STEP)
        return True

    async def _serve(self) -> None:
        while True:
            batch: list[EmbedJob] = []
            try:
                try:
                    batch.append(await self.jobs_receive.receive())
                except trio.EndOfChannel:
                    return
                closed = False
                with trio.move_on_after(self.linger_s):
                    try:
                        while len(batch) < self.batch_size:
                            batch.append(await self.jobs_receive.receive())
                    except trio.EndOfChannel:
                        closed = True
                stale_before = self.stale
                await self._embed(batch)
                if self.stale != stale_before:
                    # The batch's evidence is committed but its vectors were refused
                    # (the epoch moved on): sweep for whatever has no vector now.
                    await self._embed_missing()
                await self._store_refused()
                if closed:
                    return
            finally:
                # Counted even when cancelled: a received job is settled either way.
                self.work.done(len(batch))

    async def _store_refused(self) -> None:
        """While the store refuses vectors (a full disk), sweep what has no vector again
        after a backoff; the batch stays counted meanwhile, so a wait for idle waits
        through a fault that clears (and its stall watch ends one that does not)."""
        error = self._store_error
        while error is not None:
            await trio.sleep(self.store_retry.failed(error))
            self._store_error = None
            await self._embed_missing()
            error = self._store_error
        self.store_retry.succeeded()

    async def _warm_up(self) -> None:
        agent_id, identity = self.agent_id, self.active.identity
        generation, caught_up = self.active.generation, self.projection.caught_up
        # Only the serving identity keeps a projection: another identity's file would
        # keep vectors a forget or clear deleted (switching back rebuilds from blobs).
        await run_in_thread(
            lambda: self.vectors.discard_others(agent_id, identity),
            limiter=self.limiters.index,
        )
        self._served_identity = identity
        index = await run_in_thread(
            lambda: self.vectors.get(agent_id, identity), limiter=self.limiters.index
        )
        stored = await self.database.read(
            lambda reader: count_embeddings(reader.connection, agent_id, identity)
        )
        if len(index) != stored:
            # Coverage check: the file lags or leads the table; the table is the authority.
            rows = await self.database.read(
                lambda reader: [
                    (vector_key(target, rowid), blob)
                    for target, rowid, blob in iter_embeddings(
                        reader.connection, agent_id, identity
                    )
                ]
            )
            index = await run_in_thread(
                lambda: self.vectors.rebuild(agent_id, identity, rows),
                limiter=self.limiters.index,
            )
        backlog = await self.database.read(
            lambda reader: count_missing(reader.connection, agent_id, identity)
        )
        # A switch may have landed while that read finished: never install a projection
        # of an identity that is no longer active.
        await trio.lowlevel.checkpoint_if_cancelled()
        self.projection.install(index, identity, backlog=backlog > 0)
        await self._embed_missing()
        if self.active.generation == generation:
            self.projection.settle_backlog(caught_up)

    async def _embed_missing(self) -> None:
        """Embed, batch by batch, everything that has no vector of the current identity."""
        while True:
            missing = await self.database.read(
                functools.partial(self._missing_jobs, identity=self.active.identity)
            )
            if not missing:
                return
            if not await self._embed(missing):
                return

    def _missing_jobs(
        self, reader: Reader, *, identity: EmbeddingIdentity
    ) -> list[EmbedJob]:
        agent_id, connection = self.agent_id, reader.connection
        missing = missing_targets(connection, agent_id, identity, self.batch_size)
        events = load_events(
            connection,
            agent_id,
            [rowid for target, rowid, _ in missing if target is EmbedTarget.EVENT],
        )
        jobs = []
        for target, rowid, text in missing:
            if text is not None:
                jobs.append(EmbedJob(target, rowid, text))
            elif rowid in events:
                jobs.append(EmbedJob(target, rowid, events[rowid].embedding_text()))
        return jobs

    async def _embed_in_slices(
        self, embedder: EmbeddingProvider, batch: list[EmbedJob]
    ) -> Vectors:
        """One call per slice of at most ``slice_bytes`` of text (at least one text):
        each call holds a background token, and other agents take their turns between
        slices, so a large intake delays them by one slice, not a whole batch."""
        slices: list[list[str]] = [[]]
        size = 0
        for job in batch:
            length = len(job.text.encode())
            if slices[-1] and size + length > self.slice_bytes:
                slices.append([])
                size = 0
            slices[-1].append(job.text)
            size += length
        parts = [await embedder.embed_documents(texts) for texts in slices]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    async def _embed(self, batch: list[EmbedJob]) -> bool:
        """Embed, commit and index one batch; False if it failed or went stale."""
        # Snapshot together, with no checkpoint between: a switch replaces the embedder and
        # advances the epoch together, so these two always belong to each other.
        identity = self.fence.current()
        embedder = self.active.provider
        embedding_identity = embedder.identity
        completed = False
        self._store_error = None
        with self.fence.pass_scope(identity):
            try:
                vectors = await self._embed_in_slices(embedder, batch)
            except Exception:
                # A failed batch is not lost: the next warm-up finds it without vectors.
                self.failed += len(batch)
                logger.exception("embedding a batch of %d failed", len(batch))
                return False
            rows = tuple(
                (job.target, job.rowid, encode_vector(vector))
                for job, vector in zip(batch, vectors, strict=True)
            )
            request = StoreEmbeddings(
                embedding_identity=embedding_identity,
                rows=rows,
                digests=tuple(embedding_digest(job.text) for job in batch),
                identity=identity,
            )
            # Once sent, seen through to the projection: a restart (an import's backlog)
            # that cancelled the wait for this answer would let the commit land between
            # the next warm-up's coverage check and its sweep, its vectors stored in the
            # table and never in the projection.
            with trio.CancelScope(shield=True):
                stored = await self._commit(request, len(batch))
                if stored is None:
                    return False
                # Only what was stored, and nothing removed since (a forget or clear
                # that landed after this commit): the projection never holds a vector
                # its table does not.
                keep = [
                    position
                    for position, job in enumerate(batch)
                    if (job.target, job.rowid) in stored
                    and not self.projection.was_removed(job.target, job.rowid)
                ]
                keys = np.array(
                    [vector_key(batch[i].target, batch[i].rowid) for i in keep],
                    dtype=np.int64,
                )
                self.stall.committed(STEP)
                await self.projection.upsert(embedding_identity, keys, vectors[keep])
            self.embedded += len(batch)
            completed = True
        return completed

    async def _commit(
        self, request: StoreEmbeddings, size: int
    ) -> set[tuple[EmbedTarget, int]] | None:
        """The pairs the commit stored, or None if it was refused (stale, or the store
        failed: the evidence stays without vectors for a later sweep)."""
        try:
            stored_pairs = await self.writes.commit(request)
            crashpoints.reach("embedding.after_commit")
        except StaleResultError:
            self.stale += size
            return None
        except StoreError as error:
            # E.g. a full disk: the evidence is committed without vectors; the serving
            # loop sweeps for it again after a backoff (and so does the next warm-up).
            # Never the end of the agent.
            self.failed += size
            self.stall.failed(STEP, error)
            if is_storage_fault(error):
                self._store_error = error
            logger.warning(
                "storing %d vectors of agent %s failed: %s",
                size,
                self.agent_id,
                type(error).__name__,
            )
            return None
        return set(stored_pairs)
