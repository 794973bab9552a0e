"""Invariant: a saved projection file loads back to an index with the same live keys and
search results; any truncation, extension or flipped byte raises VectorIndexCorruptError;
an intact file built by another embedding identity raises VectorIdentityMismatchError; a
save never leaves a partial file under the final name."""

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from cairn.errors import (
    InvalidInputError,
    VectorIdentityMismatchError,
    VectorIndexCorruptError,
)
from cairn.vectors import EmbeddingIdentity, ExactVectorIndex, load_index, save_index

IDENTITY = EmbeddingIdentity("test", "model-a", 8, "cos")


def _index(count: int = 40, seed: int = 0) -> ExactVectorIndex:
    rng = np.random.default_rng(seed)
    index = ExactVectorIndex(8, "cos")
    index.upsert(np.arange(count) * 7 + 1, rng.standard_normal((count, 8)))
    return index


def _queries() -> list[np.ndarray]:
    rng = np.random.default_rng(123)
    return [rng.standard_normal(8) for _ in range(5)]


def test_round_trip(tmp_path: Path) -> None:
    index = _index()
    index.remove(np.array([1, 8, 15]))  # dead rows are not saved
    path = tmp_path / "a.vec"
    assert save_index(path, IDENTITY, index) == index.version
    loaded = load_index(path, IDENTITY)
    assert sorted(loaded.keys().tolist()) == sorted(index.keys().tolist())
    assert loaded.statistics().dead == 0
    for query in _queries():
        assert loaded.search(query, 10) == index.search(query, 10)
    as_f32 = load_index(path, IDENTITY, storage="f32")
    for query in _queries():
        assert [key for key, _ in as_f32.search(query, 5)] == [
            key for key, _ in index.search(query, 5)
        ]
    assert path.stat().st_size == 32 + len(_identity_json()) + 37 * (8 + 16) + 8
    assert [p.name for p in tmp_path.iterdir()] == ["a.vec"]  # no staging file left


def test_loaded_index_accepts_writes(tmp_path: Path) -> None:
    path = tmp_path / "a.vec"
    save_index(path, IDENTITY, _index(10))
    loaded = load_index(path, IDENTITY)
    loaded.upsert(np.array([1000]), np.ones((1, 8), dtype=np.float32))
    loaded.upsert(np.array([1]), np.ones((1, 8), dtype=np.float32))
    assert len(loaded) == 11
    assert {key for key, _ in loaded.search(np.ones(8), 2)} == {1000, 1}


def test_empty_index_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "empty.vec"
    save_index(path, IDENTITY, ExactVectorIndex(8))
    loaded = load_index(path, IDENTITY)
    assert len(loaded) == 0
    assert loaded.search(np.ones(8), 3) == []


def test_save_replaces_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "a.vec"
    save_index(path, IDENTITY, _index(40))
    save_index(path, IDENTITY, _index(5, seed=9))
    assert len(load_index(path, IDENTITY)) == 5


def test_every_truncation_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "a.vec"
    save_index(path, IDENTITY, _index(6))
    data = path.read_bytes()
    for cut in range(len(data)):
        path.write_bytes(data[:cut])
        with pytest.raises(VectorIndexCorruptError):
            load_index(path, IDENTITY)
    path.write_bytes(data + b"\x00")
    with pytest.raises(VectorIndexCorruptError, match="truncated or extended"):
        load_index(path, IDENTITY)


def test_every_flipped_byte_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "a.vec"
    save_index(path, IDENTITY, _index(6))
    data = path.read_bytes()
    for offset in range(len(data)):
        damaged = bytearray(data)
        damaged[offset] ^= 0x5A
        path.write_bytes(bytes(damaged))
        with pytest.raises(VectorIndexCorruptError):
            load_index(path, IDENTITY)


def test_identity_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "a.vec"
    save_index(path, IDENTITY, _index())
    for other in (
        EmbeddingIdentity("test", "model-b", 8, "cos"),
        EmbeddingIdentity("other", "model-a", 8, "cos"),
        EmbeddingIdentity("test", "model-a", 8, "ip"),
        EmbeddingIdentity("test", "model-a", 16, "cos"),
    ):
        with pytest.raises(VectorIdentityMismatchError):
            load_index(path, other)


def test_save_refuses_an_index_of_another_shape(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        save_index(tmp_path / "a.vec", EmbeddingIdentity("t", "m", 4), _index())
    with pytest.raises(InvalidInputError):
        save_index(tmp_path / "a.vec", EmbeddingIdentity("t", "m", 8, "ip"), _index())
    assert list(tmp_path.iterdir()) == []


def test_save_into_missing_directory_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        save_index(tmp_path / "missing" / "a.vec", IDENTITY, _index())
    assert list(tmp_path.iterdir()) == []


def _identity_json(identity: EmbeddingIdentity = IDENTITY) -> bytes:
    return json.dumps(
        identity.as_dict(), sort_keys=True, separators=(",", ":")
    ).encode()


def _craft(
    keys: list[int], vectors: np.ndarray, identity_json: bytes | None = None
) -> bytes:
    """A file with a valid checksum around arbitrary content (documents the format)."""
    identity_json = _identity_json() if identity_json is None else identity_json
    body = (
        struct.pack("<8sIIQII", b"CAIRNVEC", 1, len(identity_json), len(keys), 8, 0)
        + identity_json
        + np.array(keys, dtype="<i8").tobytes()
        + np.asarray(vectors, dtype="<f2").tobytes()
    )
    return body + struct.pack("<4sI", b"CVEC", zlib.crc32(body))


def test_crafted_file_with_valid_checksum_loads(tmp_path: Path) -> None:
    path = tmp_path / "a.vec"
    path.write_bytes(_craft([3, 4], np.eye(2, 8)))
    assert sorted(load_index(path, IDENTITY).keys().tolist()) == [3, 4]


@pytest.mark.parametrize(
    "content",
    [
        _craft([3, 3], np.eye(2, 8)),  # duplicate keys
        _craft([3, 4], np.where(np.eye(2, 8) > 0, np.nan, 0)),  # non-finite values
        _craft([3], np.eye(1, 8), b"{not json"),
        _craft([3], np.eye(1, 8), b'{"provider":"test"}'),
        _craft([3], np.eye(1, 8), b"\xff\xfe"),
        _craft(
            [3], np.eye(1, 8), _identity_json(EmbeddingIdentity("test", "model-a", 4))
        ),
        b"",
        b"CAIRNVEC",
        b"not a vector file at all, just some text that is long enough" * 3,
    ],
)
def test_malformed_content_is_corrupt(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "a.vec"
    path.write_bytes(content)
    with pytest.raises(VectorIndexCorruptError):
        load_index(path, IDENTITY)


def test_newer_format_version_is_corrupt(tmp_path: Path) -> None:
    content = bytearray(_craft([3], np.eye(1, 8)))
    content[8:12] = struct.pack("<I", 2)
    path = tmp_path / "a.vec"
    path.write_bytes(bytes(content))
    with pytest.raises(VectorIndexCorruptError, match="version"):
        load_index(path, IDENTITY)


def test_missing_file_is_not_corruption(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_index(tmp_path / "absent.vec", IDENTITY)
