"""One exact vector index per (agent, embedding identity), persisted under one root.

Layout: ``root/<agent dir>/<identity key>.vec``. Agent directories are derived from the
agent ID but can never escape ``root``: the readable part keeps only ``[A-Za-z0-9_-]`` and a
SHA-256 prefix of the full ID keeps distinct IDs apart, so ``..``, ``/`` or ``:`` in an ID
only ever change a name inside ``root``.

A file that cannot be used (corrupt, or built by another identity) is renamed to
``<name>.quarantine-<n>`` and replaced by an empty index, recorded in :attr:`quarantined`:
recall degrades to lexical (``vector_unavailable``) until the caller rebuilds from the
SQLite ``embeddings`` table with :meth:`VectorStoreManager.rebuild`. The file is kept, not
deleted, so the damage can be inspected.

Thread-safety: manager methods are writer operations and the caller runs at most one at a
time (the single-writer contract of :class:`~cairn.vectors.index.ExactVectorIndex`). Index
objects returned by :meth:`get` may be searched from any thread meanwhile. :meth:`rebuild`
swaps in a new index object: readers holding the old one keep a consistent, stale view.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

import attrs
import numpy as np

from cairn.errors import (
    InvalidInputError,
    RuntimeClosedError,
    VectorIdentityMismatchError,
    VectorIndexCorruptError,
)
from cairn.vectors.codec import decode_vectors
from cairn.vectors.index import ExactVectorIndex
from cairn.vectors.publish import (
    fsync_directory,
    load_index,
    save_index,
    staging_prefix,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from cairn.vectors.identity import EmbeddingIdentity
    from cairn.vectors.index import Storage

__all__ = [
    "QuarantineRecord",
    "StoreStatistics",
    "VectorStoreManager",
    "agent_directory_name",
]

FILE_SUFFIX: Final = ".vec"
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")
_READABLE_CHARS: Final = 48
_HASH_HEX_CHARS: Final = 16


def agent_directory_name(agent_id: str) -> str:
    """A directory name for ``agent_id`` that is safe, stable and distinct per ID.

    ``<readable part>-<sha256 prefix>``: the readable part replaces every character outside
    ``[A-Za-z0-9_-]`` with ``_`` (so never ``.`` or ``/``) and is cut to 48 characters; the
    hash of the full ID separates IDs that sanitise alike (``a.b`` and ``a:b``).
    """
    if not agent_id:
        raise InvalidInputError("agent id must be a non-empty string")
    readable = _UNSAFE.sub("_", agent_id)[:_READABLE_CHARS]
    digest = hashlib.sha256(agent_id.encode("utf-8")).hexdigest()[:_HASH_HEX_CHARS]
    return f"{readable}-{digest}"


@attrs.frozen
class QuarantineRecord:
    """A vector file set aside because it could not be used."""

    agent_id: str
    identity_key: str
    quarantined_to: Path
    reason: Literal["corrupt", "identity_mismatch"]
    detail: str


@attrs.frozen
class StoreStatistics:
    """Indexes held in memory, how many have unpublished writes, totals, quarantines."""

    loaded: int
    dirty: int
    live_vectors: int
    bytes: int
    quarantined: int


@attrs.define
class _Entry:
    index: ExactVectorIndex
    saved_version: int


class VectorStoreManager:
    """Holds and persists one :class:`ExactVectorIndex` per (agent ID, embedding identity)."""

    def __init__(self, root: Path, *, storage: Storage = "f16") -> None:
        self._root = Path(root)
        self._storage: Storage = storage
        self._entries: dict[tuple[str, EmbeddingIdentity], _Entry] = {}
        self._quarantined: list[QuarantineRecord] = []
        self._closed = False

    @property
    def root(self) -> Path:
        return self._root

    @property
    def quarantined(self) -> tuple[QuarantineRecord, ...]:
        """Every file quarantined since this manager was created, oldest first."""
        return tuple(self._quarantined)

    def agent_dir(self, agent_id: str) -> Path:
        return self._root / agent_directory_name(agent_id)

    def path_for(self, agent_id: str, identity: EmbeddingIdentity) -> Path:
        return self.agent_dir(agent_id) / f"{identity.key()}{FILE_SUFFIX}"

    def get(self, agent_id: str, identity: EmbeddingIdentity) -> ExactVectorIndex:
        """The agent's index for ``identity``: in memory, else loaded, else empty.

        A corrupt or foreign file is quarantined and an empty index returned; check
        :attr:`quarantined` to report ``vector_unavailable`` and schedule a rebuild.
        """
        self._check_open()
        entry = self._entries.get((agent_id, identity))
        if entry is None:
            entry = self._load(agent_id, identity)
            self._entries[agent_id, identity] = entry
        return entry.index

    def is_dirty(self, agent_id: str, identity: EmbeddingIdentity) -> bool:
        """Whether the in-memory index has writes its file does not hold yet."""
        entry = self._entries.get((agent_id, identity))
        return entry is not None and entry.index.version != entry.saved_version

    def publish(self, agent_id: str, identity: EmbeddingIdentity) -> bool:
        """Save the index atomically if it has unsaved writes; return whether it wrote."""
        self._check_open()
        entry = self._entries.get((agent_id, identity))
        if entry is None or entry.index.version == entry.saved_version:
            return False
        self._save(agent_id, identity, entry)
        return True

    def rebuild(
        self,
        agent_id: str,
        identity: EmbeddingIdentity,
        rows: Iterable[tuple[int, bytes]],
        *,
        chunk_size: int = 4096,
    ) -> ExactVectorIndex:
        """Build a fresh index from ``(key, float16 blob)`` rows, swap it in and publish it.

        ``rows`` is typically a cursor over the ``embeddings`` table; it is consumed in
        chunks so memory stays at one chunk of blobs plus the index. If a blob is malformed
        (:class:`~cairn.errors.InvalidInputError`) nothing is replaced.
        """
        self._check_open()
        if chunk_size <= 0:
            raise InvalidInputError(f"chunk_size must be positive, got {chunk_size}")
        index = ExactVectorIndex(
            identity.dimension, identity.metric, storage=self._storage
        )
        iterator = iter(rows)
        while chunk := list(itertools.islice(iterator, chunk_size)):
            keys = np.fromiter(
                (key for key, _ in chunk), dtype=np.int64, count=len(chunk)
            )
            index.upsert(
                keys, decode_vectors([blob for _, blob in chunk], identity.dimension)
            )
        index.compact()  # repeated keys leave dead rows; a rebuilt index starts tight
        entry = _Entry(index=index, saved_version=-1)
        self._entries[agent_id, identity] = entry
        self._save(agent_id, identity, entry)
        return index

    def release(self, agent_id: str, identity: EmbeddingIdentity) -> None:
        """Save the index if it has unsaved writes, then let it go from memory.

        For an identity that stopped serving: its file stays, so switching back reloads it.
        """
        self._check_open()
        entry = self._entries.pop((agent_id, identity), None)
        if entry is not None and entry.index.version != entry.saved_version:
            self._save(agent_id, identity, entry)

    def discard_others(self, agent_id: str, serving: EmbeddingIdentity) -> int:
        """Let go of and delete every projection of the agent but ``serving``'s.

        A projection of an identity that does not serve is never updated, so a forget or
        clear would leave its deleted vectors in the file: it is not kept. Switching
        back rebuilds it from the stored blobs (no embedding call). Returns the files
        deleted.
        """
        self._check_open()
        for key in [k for k in self._entries if k[0] == agent_id and k[1] != serving]:
            del self._entries[key]
        directory = self.agent_dir(agent_id)
        keep = self.path_for(agent_id, serving)
        deleted = 0
        for path in directory.glob(f"*{FILE_SUFFIX}") if directory.exists() else ():
            if path != keep:
                path.unlink(missing_ok=True)
                deleted += 1
        if deleted:
            fsync_directory(directory)
        return deleted

    def drop_agent(self, agent_id: str) -> None:
        """Forget the agent's indexes and delete its directory with every file in it."""
        self._check_open()
        for key in [key for key in self._entries if key[0] == agent_id]:
            del self._entries[key]
        directory = self.agent_dir(agent_id)
        if directory.exists():
            shutil.rmtree(directory)
            fsync_directory(self._root)

    def close(self) -> None:
        """Publish every dirty index and refuse further use. Idempotent."""
        if self._closed:
            return
        for (agent_id, identity), entry in self._entries.items():
            if entry.index.version != entry.saved_version:
                self._save(agent_id, identity, entry)
        self._entries.clear()
        self._closed = True

    def statistics(self) -> StoreStatistics:
        indexes = [entry.index for entry in self._entries.values()]
        sizes = [index.statistics() for index in indexes]
        return StoreStatistics(
            loaded=len(indexes),
            dirty=sum(
                entry.index.version != entry.saved_version
                for entry in self._entries.values()
            ),
            live_vectors=sum(size.live for size in sizes),
            bytes=sum(size.bytes for size in sizes),
            quarantined=len(self._quarantined),
        )

    # ------------------------------------------------------------------ internals

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeClosedError("vector store manager is closed")

    def _empty(self, identity: EmbeddingIdentity) -> _Entry:
        index = ExactVectorIndex(
            identity.dimension, identity.metric, storage=self._storage
        )
        return _Entry(index=index, saved_version=index.version)

    def _load(self, agent_id: str, identity: EmbeddingIdentity) -> _Entry:
        path = self.path_for(agent_id, identity)
        self._remove_stale_staging(path)
        try:
            index = load_index(path, identity, storage=self._storage)
        except FileNotFoundError:
            return self._empty(identity)
        except VectorIndexCorruptError as error:
            self._quarantine(agent_id, identity, path, "corrupt", str(error))
            return self._empty(identity)
        except VectorIdentityMismatchError as error:
            self._quarantine(agent_id, identity, path, "identity_mismatch", str(error))
            return self._empty(identity)
        return _Entry(index=index, saved_version=index.version)

    def _save(self, agent_id: str, identity: EmbeddingIdentity, entry: _Entry) -> None:
        directory = self.agent_dir(agent_id)
        if not directory.is_dir():
            # 0700 like the data directory (the root too, which mkdir's parents=True
            # would create with the default mode): only the owner may read what is
            # derived from memories.
            directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            directory.mkdir(mode=0o700, exist_ok=True)
            fsync_directory(directory.parent)
        entry.saved_version = save_index(
            self.path_for(agent_id, identity), identity, entry.index
        )

    def _quarantine(
        self,
        agent_id: str,
        identity: EmbeddingIdentity,
        path: Path,
        reason: Literal["corrupt", "identity_mismatch"],
        detail: str,
    ) -> None:
        number = 1
        target = path.with_name(f"{path.name}.quarantine-{number}")
        while target.exists():
            number += 1
            target = path.with_name(f"{path.name}.quarantine-{number}")
        path.rename(target)
        fsync_directory(path.parent)
        self._quarantined.append(
            QuarantineRecord(
                agent_id=agent_id,
                identity_key=identity.key(),
                quarantined_to=target,
                reason=reason,
                detail=detail,
            )
        )

    @staticmethod
    def _remove_stale_staging(path: Path) -> None:
        # A crash between creating and renaming a staging file leaves it behind. One
        # manager owns a root, so any staging file seen before our first save is stale.
        if not path.parent.is_dir():
            return
        for stale in path.parent.glob(f"{staging_prefix(path)}*"):
            with contextlib.suppress(OSError):
                stale.unlink()
