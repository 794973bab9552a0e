"""Vector projection files: atomic save, checked load.

A projection file is a cache of the SQLite ``embeddings`` table, so the rules are: a reader
never sees a half-written file, and a damaged or foreign file is detected and refused, never
half-trusted. Saving writes a staging file in the same directory, fsyncs it, renames it over
the final name with ``os.replace`` and fsyncs the directory, so after a crash the name
points at the old file or the new one. Loading checks size, checksum and identity before
building an index.

Format (all integers little-endian)::

    header   32 bytes  magic b"CAIRNVEC", u32 format version, u32 identity JSON length,
                       u64 count, u32 dimension, u32 reserved (0)
    identity           UTF-8 JSON of EmbeddingIdentity.as_dict()
    keys               count x int64
    vectors            count x dimension x float16, row-major
    trailer   8 bytes  b"CVEC", u32 CRC-32 of everything before the trailer

CRC-32 rather than a cryptographic hash: it catches truncation, torn writes and flipped
bits, which is all a local cache needs, at twice the speed of BLAKE2 (36 ms vs 81 ms for
100k x 384). No pickle and no ``np.load``: every byte is parsed explicitly.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import struct
import zlib
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from cairn import crashpoints
from cairn.errors import (
    InvalidInputError,
    VectorIdentityMismatchError,
    VectorIndexCorruptError,
)
from cairn.vectors.identity import MAX_DIMENSION, EmbeddingIdentity
from cairn.vectors.index import ExactVectorIndex

if TYPE_CHECKING:
    import io
    from pathlib import Path

    from cairn.vectors.index import Storage

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "fsync_directory",
    "load_index",
    "save_index",
    "staging_prefix",
]

MAGIC: Final = b"CAIRNVEC"
FORMAT_VERSION: Final = 1
_TRAILER_MAGIC: Final = b"CVEC"
_HEADER: Final = struct.Struct("<8sIIQII")
_TRAILER: Final = struct.Struct("<4sI")
# An identity is four short fields; anything longer is damage, not data.
_MAX_IDENTITY_BYTES: Final = 64 * 1024
_KEY_DTYPE: Final = np.dtype("<i8")
_VECTOR_DTYPE: Final = np.dtype("<f2")


def staging_prefix(path: Path) -> str:
    """Name prefix of staging files for ``path`` (hidden, so listings skip them)."""
    return f".{path.name}.tmp-"


def fsync_directory(directory: Path) -> None:
    """Make renames and creations inside ``directory`` durable (no-op where unsupported)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        descriptor = os.open(directory, flags)
    except OSError:  # platforms that cannot open directories (Windows)
        return
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def save_index(path: Path, identity: EmbeddingIdentity, index: ExactVectorIndex) -> int:
    """Atomically write ``index`` to ``path``; return the index version written.

    Reads one snapshot, so the writer may keep upserting meanwhile; the file holds the
    state as of the returned version. The directory must exist.
    """
    if identity.dimension != index.dimension or identity.metric != index.metric:
        raise InvalidInputError(
            f"index ({index.dimension}, {index.metric}) was not built for identity "
            f"({identity.dimension}, {identity.metric})"
        )
    exported = index.export()
    keys = np.ascontiguousarray(exported.keys, dtype=_KEY_DTYPE)
    vectors = np.ascontiguousarray(exported.vectors, dtype=_VECTOR_DTYPE)
    identity_json = _identity_bytes(identity)
    header = _HEADER.pack(
        MAGIC, FORMAT_VERSION, len(identity_json), len(keys), identity.dimension, 0
    )

    staging = path.with_name(f"{staging_prefix(path)}{secrets.token_hex(6)}")
    try:
        # 0600: the vectors are derived from memories only their owner may read.
        descriptor = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as stream:
            checksum = 0
            for part in (
                header,
                identity_json,
                _bytes_view(keys),
                _bytes_view(vectors),
            ):
                stream.write(part)
                checksum = zlib.crc32(part, checksum)
            stream.write(_TRAILER.pack(_TRAILER_MAGIC, checksum))
            stream.flush()
            os.fsync(stream.fileno())
        crashpoints.reach("vectors.publish")
        os.replace(staging, path)
    except BaseException:
        with contextlib.suppress(OSError):
            staging.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)
    return exported.version


def load_index(
    path: Path, expected: EmbeddingIdentity, *, storage: Storage = "f16"
) -> ExactVectorIndex:
    """Load the index at ``path``, built by ``expected``.

    Raises :class:`~cairn.errors.VectorIndexCorruptError` if the file is truncated,
    extended, fails its checksum or does not parse, and
    :class:`~cairn.errors.VectorIdentityMismatchError` if it is intact but was built by
    another embedding identity. ``FileNotFoundError`` and other ``OSError`` propagate.
    """
    with path.open("rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        header = _read_bytes(stream, _HEADER.size, path)
        magic, version, identity_length, count, dimension, _reserved = _HEADER.unpack(
            header
        )
        if magic != MAGIC:
            raise VectorIndexCorruptError(
                f"{path}: not a cairn vector file (bad magic)"
            )
        if version != FORMAT_VERSION:
            raise VectorIndexCorruptError(
                f"{path}: unsupported format version {version}"
            )
        if identity_length > _MAX_IDENTITY_BYTES or not 0 < dimension <= MAX_DIMENSION:
            raise VectorIndexCorruptError(f"{path}: implausible header")
        expected_size = (
            _HEADER.size
            + identity_length
            + count * _KEY_DTYPE.itemsize
            + count * dimension * _VECTOR_DTYPE.itemsize
            + _TRAILER.size
        )
        if size != expected_size:
            raise VectorIndexCorruptError(
                f"{path}: {size} bytes but the header promises {expected_size} (truncated or extended)"
            )
        identity_json = _read_bytes(stream, identity_length, path)
        keys = np.empty(count, dtype=_KEY_DTYPE)
        _read_into(stream, keys, path)
        vectors = np.empty((count, dimension), dtype=_VECTOR_DTYPE)
        _read_into(stream, vectors, path)
        trailer = _read_bytes(stream, _TRAILER.size, path)

    checksum = 0
    for part in (header, identity_json, _bytes_view(keys), _bytes_view(vectors)):
        checksum = zlib.crc32(part, checksum)
    trailer_magic, stored = _TRAILER.unpack(trailer)
    if trailer_magic != _TRAILER_MAGIC or stored != checksum:
        raise VectorIndexCorruptError(f"{path}: checksum mismatch")

    # ValueError covers JSONDecodeError and UnicodeDecodeError too.
    try:
        found = EmbeddingIdentity.from_dict(json.loads(identity_json.decode("utf-8")))
    except (ValueError, TypeError) as error:
        raise VectorIndexCorruptError(
            f"{path}: unreadable identity: {error}"
        ) from error
    if found.dimension != dimension:
        raise VectorIndexCorruptError(
            f"{path}: identity dimension {found.dimension} != header {dimension}"
        )
    if found != expected:
        raise VectorIdentityMismatchError(
            f"{path}: built by {found.as_dict()}, expected {expected.as_dict()}"
        )

    try:
        return ExactVectorIndex.from_arrays(
            keys.astype(np.int64, copy=False),
            vectors.astype(np.float16, copy=False),
            metric=found.metric,
            storage=storage,
            copy=False,
        )
    except InvalidInputError as error:  # duplicate keys, non-finite values
        raise VectorIndexCorruptError(f"{path}: {error}") from error


def _identity_bytes(identity: EmbeddingIdentity) -> bytes:
    return json.dumps(identity.as_dict(), sort_keys=True, separators=(",", ":")).encode(
        "utf-8"
    )


def _bytes_view(array: npt.NDArray[np.generic]) -> memoryview:
    if array.size == 0:  # memoryview refuses to cast a view with a zero in its shape
        return memoryview(b"")
    return array.data.cast("B")


def _read_bytes(stream: io.BufferedReader, length: int, path: Path) -> bytes:
    data = stream.read(length)
    if len(data) != length:
        raise VectorIndexCorruptError(f"{path}: truncated while reading")
    return data


def _read_into(
    stream: io.BufferedReader, array: npt.NDArray[np.generic], path: Path
) -> None:
    view = _bytes_view(array)
    filled = 0
    while filled < len(view):
        got = stream.readinto(view[filled:])
        if not got:
            raise VectorIndexCorruptError(f"{path}: truncated while reading")
        filled += got
