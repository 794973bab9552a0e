"""Durability: forget, clear, retire, imports and the scrubber's writes commit with
``synchronous=FULL`` whatever the default, so a power loss right after one is
acknowledged cannot undo it; under the NORMAL default an acknowledged ingest may be lost
on power loss (the documented trade-off), and ``synchronous_full`` keeps it.

Observed for real through the fault VFS (cairn.stress.vfs): the WAL's ``xSync`` calls of
one commit, and the files as a disk holds them after losing every unsynced write.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import pytest
import trio
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import turn

from cairn.runtime.core import runtime_core
from cairn.runtime.database import Database
from cairn.runtime.threads import Limiters
from cairn.store.connection import open_connection
from cairn.stress.vfs import Call, FaultVFS, FileKind

if TYPE_CHECKING:
    from cairn import Memory


@pytest.fixture
def vfs() -> Iterator[FaultVFS]:
    shim = FaultVFS("cairn-durability-test")
    yield shim
    shim.close()


def _wal_syncs(vfs: FaultVFS) -> int:
    return vfs.count(Call.SYNC, FileKind.WAL)


async def test_a_durable_write_syncs_the_wal_at_commit_and_a_normal_one_does_not(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    database = await Database.open(
        tmp_path / "cairn.db",
        Limiters(),
        readers=1,
        synchronous_full=False,
        vfs=vfs.name,
    )
    try:
        await database.write(lambda c: c.execute("CREATE TABLE t (x)"))
        before = _wal_syncs(vfs)
        await database.write(lambda c: c.execute("INSERT INTO t VALUES (1)"))
        assert _wal_syncs(vfs) == before  # NORMAL: the WAL is not synced at commit
        await database.write(
            lambda c: c.execute("INSERT INTO t VALUES (2)"), durable=True
        )
        assert _wal_syncs(vfs) == before + 1  # FULL for this commit
        await database.write(lambda c: c.execute("INSERT INTO t VALUES (3)"))
        assert _wal_syncs(vfs) == before + 1  # and back to NORMAL after it
        assert database.writer.pragma("synchronous") == 1
    finally:
        await database.aclose()


def _image_recalls(image: Path, word: str) -> int:
    """Rows of claims or events holding ``word`` in the power-loss image."""
    connection = open_connection(image / "cairn.db")
    try:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        (claims,) = connection.execute(
            "SELECT count(*) FROM claims WHERE text LIKE ?", (f"%{word}%",)
        ).fetchone()
        (events,) = connection.execute(
            "SELECT count(*) FROM events WHERE text LIKE ?", (f"%{word}%",)
        ).fetchone()
        return int(claims) + int(events)
    finally:
        connection.close()


def _cut_power_at_first_scrub(memory: Memory, vfs: FaultVFS, image: Path) -> None:
    """Take the power-loss image when the scrubber is first about to run: the write
    that woke it has been acknowledged, nothing after it has synced anything."""
    scrubber = runtime_core(memory).scrubber

    def observe(_step: str) -> None:
        if not image.exists():
            vfs.power_loss_image(memory.path, image)

    scrubber.observer = observe


async def _settled(memory: Memory, agent: str) -> None:
    await memory.wait_idle(agent)
    await runtime_core(memory).scrubber.wait_settled()


async def test_an_acknowledged_forget_survives_a_power_loss_under_the_normal_default(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    data_dir, image = tmp_path / "data", tmp_path / "image"
    config = attrs.evolve(TEST_CONFIG, vfs=vfs.name)
    with trio.fail_after(60):
        async with open_test_memory(data_dir, config) as memory:
            stored = await memory.remember(
                "a", "My locker word is qzxbvkdrtm.", by="user"
            )
            await memory.remember("a", "I like green tea.", by="user")
            await _settled(memory, "a")
            vfs.record()
            _cut_power_at_first_scrub(memory, vfs, image)
            assert stored.claim_id is not None
            await memory.forget("a", stored.claim_id)
            await runtime_core(memory).scrubber.wait_settled()
    assert image.exists()
    assert _image_recalls(image, "qzxbvkdrtm") == 0
    assert _image_recalls(image, "green tea") == 1


@pytest.mark.parametrize("operation", ["clear", "retire"])
async def test_an_acknowledged_clear_or_retire_survives_a_power_loss_under_normal(
    tmp_path: Path, vfs: FaultVFS, operation: str
) -> None:
    data_dir, image = tmp_path / "data", tmp_path / "image"
    config = attrs.evolve(TEST_CONFIG, vfs=vfs.name)
    with trio.fail_after(60):
        async with open_test_memory(data_dir, config) as memory:
            await memory.ingest("a", [turn("t1", "My locker word is qzxbvkdrtm.")])
            await memory.remember("a", "My bike is called qlmnbvcxzt.", by="user")
            await memory.ingest("b", [turn("t1", "I like green tea.")])
            await _settled(memory, "a")
            await _settled(memory, "b")
            vfs.record()
            _cut_power_at_first_scrub(memory, vfs, image)
            await (memory.clear if operation == "clear" else memory.retire)("a")
            await runtime_core(memory).scrubber.wait_settled()
    assert image.exists()
    async with open_test_memory(image) as reopened:
        # The job found in the image resumes at open and finishes.
        await reopened.wait_cleared("a")
        for word in ("qzxbvkdrtm", "qlmnbvcxzt"):
            assert word not in (await reopened.recall("a", word)).memory_block
        assert "green tea" in (await reopened.recall("b", "green tea")).memory_block
    assert _image_recalls(image, "qlmnbvcxzt") == 0


@pytest.mark.parametrize("full", [False, True])
async def test_an_acknowledged_ingest_survives_a_power_loss_only_under_full(
    tmp_path: Path, vfs: FaultVFS, *, full: bool
) -> None:
    data_dir, image = tmp_path / "data", tmp_path / "image"
    config = attrs.evolve(TEST_CONFIG, vfs=vfs.name, synchronous_full=full)
    with trio.fail_after(60):
        async with open_test_memory(data_dir, config) as memory:
            await memory.ingest("a", [turn("t0", "I like green tea.")])
            await _settled(memory, "a")
            vfs.record()
            await memory.ingest("a", [turn("t1", "My locker word is qzxbvkdrtm.")])
            vfs.power_loss_image(memory.path, image)
    # NORMAL: the commit was acknowledged before its WAL frames were synced.
    assert _image_recalls(image, "qzxbvkdrtm") == (1 if full else 0)
    assert _image_recalls(image, "green tea") >= 1


async def test_an_acknowledged_revoke_survives_a_power_loss_under_normal(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    """A revoke lost to a power cut would bring the instruction back into every
    prompt: it commits FULL like a forget."""
    data_dir, image = tmp_path / "data", tmp_path / "image"
    config = attrs.evolve(TEST_CONFIG, vfs=vfs.name)
    with trio.fail_after(60):
        async with open_test_memory(data_dir, config) as memory:
            directive_id = await memory.add_directive("a", "Always answer in French.")
            stored = await memory.remember("a", "I like green tea.", by="user")
            assert stored.claim_id is not None
            await memory.forget("a", stored.claim_id)  # durable: syncs what came before
            await _settled(memory, "a")
            vfs.record()
            await memory.directives.revoke("a", directive_id)
            vfs.power_loss_image(memory.path, image)
    connection = open_connection(image / "cairn.db")
    try:
        (status,) = connection.execute(
            "SELECT status FROM directives WHERE directive_id = ?", (directive_id,)
        ).fetchone()
    finally:
        connection.close()
    assert status == "revoked"
