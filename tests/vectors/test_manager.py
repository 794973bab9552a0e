"""Invariant: the manager keeps one index per (agent, identity) under its root and nowhere
else; an unusable file is quarantined (kept as <name>.quarantine-<n>, recorded) and replaced
by an empty, usable index; rebuilding from embedding blobs yields the same index as the
incremental writes that produced those blobs; closing publishes every dirty index."""

import os
from pathlib import Path

import numpy as np
import pytest

from cairn.errors import InvalidInputError, RuntimeClosedError
from cairn.vectors import (
    EmbeddingIdentity,
    ExactVectorIndex,
    VectorStoreManager,
    agent_directory_name,
    encode_vector,
    save_index,
)

IDENTITY = EmbeddingIdentity("test", "model-a", 8, "cos")
OTHER = EmbeddingIdentity("test", "model-b", 8, "cos")


def _fill(index: ExactVectorIndex, count: int = 30, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    index.upsert(np.arange(count), rng.standard_normal((count, 8)))


def _queries() -> list[np.ndarray]:
    rng = np.random.default_rng(77)
    return [rng.standard_normal(8) for _ in range(5)]


def test_get_publish_and_reload(tmp_path: Path) -> None:
    manager = VectorStoreManager(tmp_path)
    index = manager.get("agent-1", IDENTITY)
    assert len(index) == 0
    assert manager.get("agent-1", IDENTITY) is index
    assert not manager.publish("agent-1", IDENTITY)  # clean: nothing written
    assert list(tmp_path.iterdir()) == []
    _fill(index)
    assert manager.is_dirty("agent-1", IDENTITY)
    assert manager.publish("agent-1", IDENTITY)
    assert not manager.is_dirty("agent-1", IDENTITY)
    assert not manager.publish("agent-1", IDENTITY)
    assert manager.path_for("agent-1", IDENTITY).is_file()

    reloaded = VectorStoreManager(tmp_path).get("agent-1", IDENTITY)
    for query in _queries():
        assert reloaded.search(query, 5) == index.search(query, 5)
    assert len(VectorStoreManager(tmp_path).get("agent-1", OTHER)) == 0  # separate file


def test_corrupt_file_is_quarantined(tmp_path: Path) -> None:
    manager = VectorStoreManager(tmp_path)
    path = manager.path_for("agent-1", IDENTITY)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"garbage, not a vector file")

    index = manager.get("agent-1", IDENTITY)
    assert len(index) == 0
    assert not path.exists()
    kept = path.with_name(path.name + ".quarantine-1")
    assert kept.read_bytes() == b"garbage, not a vector file"
    (record,) = manager.quarantined
    assert (record.agent_id, record.identity_key, record.reason) == (
        "agent-1",
        IDENTITY.key(),
        "corrupt",
    )
    assert record.quarantined_to == kept
    assert manager.statistics().quarantined == 1

    _fill(index)  # the empty replacement is fully usable
    assert len(index.search(np.ones(8), 3)) == 3
    assert manager.publish("agent-1", IDENTITY)
    assert len(VectorStoreManager(tmp_path).get("agent-1", IDENTITY)) == 30

    # A second bad file gets the next number; the first is kept.
    path.write_bytes(path.read_bytes()[:-1])
    second = VectorStoreManager(tmp_path)
    assert len(second.get("agent-1", IDENTITY)) == 0
    assert path.with_name(path.name + ".quarantine-2").exists()
    assert kept.exists()


def test_identity_mismatch_is_quarantined(tmp_path: Path) -> None:
    manager = VectorStoreManager(tmp_path)
    foreign = ExactVectorIndex(8)
    _fill(foreign)
    path = manager.path_for("agent-1", IDENTITY)
    path.parent.mkdir(parents=True)
    save_index(path, OTHER, foreign)  # a model-b file under model-a's name

    assert len(manager.get("agent-1", IDENTITY)) == 0
    (record,) = manager.quarantined
    assert record.reason == "identity_mismatch"
    assert record.quarantined_to.exists()
    assert not path.exists()


def test_rebuild_from_blobs_equals_incremental_build(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    manager = VectorStoreManager(tmp_path)
    incremental = manager.get("agent-1", IDENTITY)
    table: dict[int, bytes] = {}  # stands in for the embeddings table
    for _ in range(20):
        keys = rng.choice(300, size=25, replace=False)
        vectors = rng.standard_normal((25, 8)).astype(np.float32)
        incremental.upsert(keys, vectors)
        table.update(
            {int(k): encode_vector(v) for k, v in zip(keys, vectors, strict=True)}
        )
        gone = rng.choice(300, size=8, replace=False)
        incremental.remove(gone)
        for key in gone.tolist():
            table.pop(key, None)
    snapshot = [incremental.search(query, 15) for query in _queries()]

    rebuilt = manager.rebuild(
        "agent-1", IDENTITY, iter(sorted(table.items())), chunk_size=16
    )
    assert manager.get("agent-1", IDENTITY) is rebuilt
    assert sorted(rebuilt.keys().tolist()) == sorted(table)
    assert rebuilt.statistics().dead == 0
    assert [rebuilt.search(query, 15) for query in _queries()] == snapshot
    assert not manager.is_dirty("agent-1", IDENTITY)  # rebuild publishes
    reloaded = VectorStoreManager(tmp_path).get("agent-1", IDENTITY)
    assert [reloaded.search(query, 15) for query in _queries()] == snapshot


def test_rebuild_with_a_bad_blob_keeps_the_old_index(tmp_path: Path) -> None:
    manager = VectorStoreManager(tmp_path)
    index = manager.get("agent-1", IDENTITY)
    _fill(index)
    rows = [(1, encode_vector(np.ones(8))), (2, b"\x00" * 6)]
    with pytest.raises(InvalidInputError, match="blob 1"):
        manager.rebuild("agent-1", IDENTITY, rows)
    assert manager.get("agent-1", IDENTITY) is index
    assert len(index) == 30


@pytest.mark.parametrize(
    "agent_id",
    [
        "..",
        ".",
        "../../etc",
        "a/../../b",
        "/abs/path",
        "..\\..\\win",
        "a:b@c.d-e_f",
        "x" * 300,
    ],
)
def test_agent_ids_cannot_escape_root(tmp_path: Path, agent_id: str) -> None:
    root = tmp_path / "root"
    manager = VectorStoreManager(root)
    directory = manager.agent_dir(agent_id)
    assert directory.parent == root
    assert directory.name not in {".", ".."}
    assert "/" not in directory.name
    assert "\\" not in directory.name
    _fill(manager.get(agent_id, IDENTITY))
    manager.publish(agent_id, IDENTITY)
    written = [
        Path(base) / name for base, _, names in os.walk(tmp_path) for name in names
    ]
    assert written
    assert all(path.resolve().is_relative_to(root.resolve()) for path in written)


def test_distinct_agent_ids_get_distinct_directories() -> None:
    ids = ["a.b", "a:b", "a@b", "a_b", "a-b", "A.b", "x" * 200, "x" * 201]
    assert len({agent_directory_name(agent_id) for agent_id in ids}) == len(ids)
    assert agent_directory_name("agent-1") == agent_directory_name("agent-1")
    with pytest.raises(InvalidInputError):
        agent_directory_name("")


def test_drop_agent_removes_memory_and_files(tmp_path: Path) -> None:
    manager = VectorStoreManager(tmp_path)
    for agent_id in ("doomed", "kept"):
        _fill(manager.get(agent_id, IDENTITY))
        _fill(manager.get(agent_id, OTHER))
        manager.publish(agent_id, IDENTITY)
        manager.publish(agent_id, OTHER)
    manager.drop_agent("doomed")
    assert not manager.agent_dir("doomed").exists()
    assert len(manager.get("doomed", IDENTITY)) == 0
    assert len(manager.get("kept", IDENTITY)) == 30
    assert manager.path_for("kept", OTHER).exists()
    manager.drop_agent("never-seen")  # no-op


def test_close_publishes_dirty_indexes(tmp_path: Path) -> None:
    manager = VectorStoreManager(tmp_path)
    _fill(manager.get("a", IDENTITY))
    _fill(manager.get("b", IDENTITY), count=12)
    manager.get("c", IDENTITY)  # clean and empty: no file
    stats = manager.statistics()
    assert (stats.loaded, stats.dirty, stats.live_vectors) == (3, 2, 42)
    manager.close()
    manager.close()  # idempotent
    with pytest.raises(RuntimeClosedError):
        manager.get("a", IDENTITY)
    fresh = VectorStoreManager(tmp_path)
    assert (len(fresh.get("a", IDENTITY)), len(fresh.get("b", IDENTITY))) == (30, 12)
    assert not manager.path_for("c", IDENTITY).exists()


def test_removals_down_to_empty_are_published(tmp_path: Path) -> None:
    manager = VectorStoreManager(tmp_path)
    index = manager.get("a", IDENTITY)
    _fill(index)
    manager.publish("a", IDENTITY)
    index.remove(np.arange(30))
    assert manager.publish("a", IDENTITY)
    assert len(VectorStoreManager(tmp_path).get("a", IDENTITY)) == 0


def test_stale_staging_files_are_cleared_on_load(tmp_path: Path) -> None:
    manager = VectorStoreManager(tmp_path)
    path = manager.path_for("a", IDENTITY)
    path.parent.mkdir(parents=True)
    stale = path.with_name(f".{path.name}.tmp-deadbeef")
    stale.write_bytes(b"half a file")
    manager.get("a", IDENTITY)
    assert not stale.exists()
