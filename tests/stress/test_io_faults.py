"""I/O faults through the apsw VFS shim (cairn.stress.vfs), against a real runtime.

A representative fault per write operation and kind of fault, transient and persistent,
through the fault mode's own trial (cairn.stress.faults.fault_trial: a typed error, all
or nothing, reads serving under a persistent fault, the retry succeeding once the fault
is gone, every acknowledged write still recalled, integrity_check and the doctor
passing); then a full disk, a torn write, power loss and a read-only data directory
asserted directly; and the regressions the mode found.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import apsw
import attrs
import pytest
import trio
from tests.conftest import TEST_CONFIG
from tests.helpers import files_holding, turn

from cairn import open_memory
from cairn.errors import StorageFullError, StoreError
from cairn.runtime.actors.clear_jobs import ClearJobActor
from cairn.runtime.core import runtime_core
from cairn.store.connection import open_connection
from cairn.stress import faults
from cairn.stress.faults import (
    FAULT_KINDS,
    OPERATIONS,
    Template,
    Trial,
    build_template,
    count_calls,
    fault_trial,
    open_trial,
    power_loss_trial,
    read_only_trial,
)
from cairn.stress.markers import marker_tail
from cairn.stress.profiles import PROFILES
from cairn.stress.report import ModeResult
from cairn.stress.vfs import Call, FaultPlan, FaultVFS, FileKind, read_only_plan
from cairn.testing import FixedDomainClock, HashingEmbedder

KINDS = {kind.name: kind for kind in FAULT_KINDS}
# (operation, fault kind, which position of the calls it can strike).
REPRESENTATIVE = [
    ("ingest", "wal-write", "first"),
    ("ingest", "disk-full", "middle"),
    # Past the intake commit: the disk fills while the turn is extracted and embedded.
    ("ingest_settled", "disk-full", "late"),
    ("remember", "wal-write", "middle"),
    ("remember", "disk-full", "first"),
    ("forget", "wal-sync", "first"),
    ("forget", "wal-write", "middle"),
    ("archive", "wal-write", "first"),
    ("clear", "wal-sync", "middle"),
    ("clear", "db-write", "first"),
    ("clear", "truncate", "first"),
    ("retire", "wal-write", "middle"),
    ("retire", "db-sync", "first"),
    ("retire", "file-size", "first"),
    ("add_directive", "disk-full", "first"),
    ("import", "wal-write", "first"),
]


@pytest.fixture
def vfs() -> Iterator[FaultVFS]:
    shim = FaultVFS("cairn-io-faults-test")
    yield shim
    shim.close()


def test_every_operation_has_a_representative_fault() -> None:
    assert {operation for operation, _, _ in REPRESENTATIVE} == set(OPERATIONS)
    assert {kind for _, kind, _ in REPRESENTATIVE} <= set(KINDS)


def _position(total: int, where: str) -> int:
    # The dry run also counts background writes racing the operation (the scrubber
    # after a forget, say): late positions may not be reached in every run.
    if where == "late":
        return max(1, total * 3 // 4)
    return 1 if where == "first" else max(1, total // 3)


@pytest.mark.parametrize(("operation", "kind", "where"), REPRESENTATIVE)
async def test_a_fault_in_a_write_is_typed_all_or_nothing_and_recovers(
    tmp_path: Path, vfs: FaultVFS, operation: str, kind: str, where: str
) -> None:
    with trio.fail_after(100):
        template = await build_template(tmp_path, seed=13)
        total = await count_calls(
            template, tmp_path / "dry", vfs, operation, KINDS[kind]
        )
        assert total > 0, f"{operation} makes no {kind} call to fault"
        result = ModeResult("faults")
        for persistent in (False, True):
            plan = KINDS[kind].plan(_position(total, where), persistent=persistent)
            trial = Trial(result, 13, f"{operation} {plan.describe()}")
            root = tmp_path / f"trial-{persistent}"
            await fault_trial(trial, template, root, vfs, operation, plan)
    assert [violation.message for violation in result.violations] == []
    assert result.figures["faults_fired"] == 2
    # Each fault either failed the call with a typed error or was absorbed by SQLite.
    assert (
        result.figures.get("typed_errors", 0) + result.figures.get("absorbed", 0) == 2
    )
    assert result.figures.get("recovered", 0) == result.figures.get("typed_errors", 0)
    assert "reads_refused" not in result.figures  # reads serve under the fault
    assert result.figures["acknowledged_checked"] > 0


async def _template(tmp_path: Path) -> Template:
    return await build_template(tmp_path, seed=7)


async def test_a_full_disk_refuses_an_ingest_whole_and_keeps_what_was_acknowledged(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    config = attrs.evolve(TEST_CONFIG, vfs=vfs.name)
    with trio.fail_after(60):
        async with open_memory(
            tmp_path, config, clock=FixedDomainClock(), embedder=HashingEmbedder()
        ) as memory:
            await memory.ingest("a", [turn("t1", "I like green tea.")])
            await memory.wait_idle("a")
            vfs.arm(
                FaultPlan.on(
                    Call.WRITE, None, nth=3, persistent=True, error=apsw.SQLITE_FULL
                )
            )
            with pytest.raises(StorageFullError):
                await memory.ingest(
                    "a", [turn("t2", "My locker word is qzxbvkdrtm."), turn("t3", "x")]
                )
            assert vfs.fired >= 1
            # Reads serve while the disk is full, and nothing of the refused call is
            # stored.
            assert "green tea" in (await memory.recall("a", "green tea")).memory_block
            assert (
                "qzxbvkdrtm"
                not in (await memory.recall("a", "qzxbvkdrtm")).memory_block
            )
            vfs.clear()
            await memory.ingest("a", [turn("t2", "My locker word is qzxbvkdrtm.")])
            await memory.wait_idle("a")
            assert "qzxbvkdrtm" in (await memory.recall("a", "qzxbvkdrtm")).memory_block


async def test_a_torn_wal_write_after_acknowledged_writes_reopens_with_integrity(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    config = attrs.evolve(TEST_CONFIG, vfs=vfs.name, synchronous_full=True)
    data, image = tmp_path / "data", tmp_path / "image"
    with trio.fail_after(60):
        async with open_memory(
            data, config, clock=FixedDomainClock(), embedder=HashingEmbedder()
        ) as memory:
            await memory.ingest("a", [turn("t1", "I like green tea.")])
            await memory.wait_idle("a")
            vfs.record()
            await memory.ingest("a", [turn("t2", "My locker word is qzxbvkdrtm.")])
            # Writes after the last sync: an extraction commit under way, say. Tear
            # the first of them at 512 bytes, lose the rest.
            raw = open_connection(data / "cairn.db", vfs=vfs.name)
            with raw:
                raw.execute("CREATE TABLE scratch (x)")
            raw.close()
            lost = vfs.power_loss_image(data, image, tear_bytes=512)
            assert sum(lost.values()) >= 1
    connection = open_connection(image / "cairn.db")
    try:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        texts = [row[0] for row in connection.execute("SELECT text FROM events")]
        assert any("qzxbvkdrtm" in text for text in texts)  # FULL: acknowledged, kept
        assert not connection.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'scratch'"
        ).fetchall()  # the torn, unsynced transaction is not half there
    finally:
        connection.close()


async def test_power_loss_keeps_every_durable_commit_and_counts_lost_ingests(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    with trio.fail_after(100):
        template = await _template(tmp_path)
        result = ModeResult("faults")
        trial = Trial(result, 7, "power loss")
        await power_loss_trial(
            trial, template, tmp_path / "power", vfs, random.Random(7)
        )
    assert [violation.message for violation in result.violations] == []
    assert result.figures["power_loss.images"] == 15
    # Before the forget its text was on disk (the scan can see it); after each reboot
    # from an image taken after the forget, it is nowhere.
    assert files_holding(template.root, [marker_tail(template.forget[0])])
    assert result.figures["power_loss.plaintext_scans"] == 4
    assert result.figures["power_loss.durable_checked"] > 0
    # Under NORMAL the last ingest before a cut is not synced: the documented trade-off.
    assert result.figures.get("power_loss.normal_ingests_lost", 0) >= 1


async def test_a_read_only_data_directory_refuses_writes_typed_and_serves_reads(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    with trio.fail_after(100):
        template = await _template(tmp_path)
        result = ModeResult("faults")
        await read_only_trial(
            Trial(result, 7, "read-only"), template, tmp_path / "ro", vfs
        )
    assert [violation.message for violation in result.violations] == []
    assert result.figures["read_only.typed_errors"] == 4
    assert result.figures["read_only.reads_served"] == 6
    assert "read_only.reads_refused" not in result.figures


async def test_a_write_on_a_read_only_directory_is_a_store_error_with_a_sentence(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    config = attrs.evolve(TEST_CONFIG, vfs=vfs.name)
    with trio.fail_after(60):
        async with open_memory(
            tmp_path, config, clock=FixedDomainClock(), embedder=HashingEmbedder()
        ) as memory:
            await memory.remember("a", "I like green tea.", by="user")
            vfs.arm(read_only_plan())
            with pytest.raises(StoreError) as raised:
                await memory.remember("a", "My bike is qlmnbvcxzt.", by="user")
            assert "readonly" in str(raised.value).lower()
            assert "green tea" in (await memory.recall("a", "green tea")).memory_block
            vfs.clear()


@pytest.mark.parametrize("kind", sorted(KINDS))
async def test_opening_under_a_fault_is_typed_and_opens_once_it_is_gone(
    tmp_path: Path, vfs: FaultVFS, kind: str
) -> None:
    with trio.fail_after(100):
        template = await _template(tmp_path)
        result = ModeResult("faults")
        await open_trial(
            Trial(result, 7, f"open {kind}"),
            template,
            tmp_path / "open",
            vfs,
            KINDS[kind],
        )
    assert [violation.message for violation in result.violations] == []
    assert (
        result.figures.get("open.typed_errors", 0)
        + result.figures.get("open.served", 0)
        == 1
    )


# -- regressions found by the fault mode ------------------------------------------------------
async def test_a_clear_whose_step_fails_on_the_store_answers_instead_of_hanging(
    tmp_path: Path, vfs: FaultVFS
) -> None:
    config = attrs.evolve(TEST_CONFIG, vfs=vfs.name)
    with trio.fail_after(60):
        async with open_memory(
            tmp_path, config, clock=FixedDomainClock(), embedder=HashingEmbedder()
        ) as memory:
            await memory.remember("a", "My bike is called qlmnbvcxzt.", by="user")
            await memory.wait_idle("a")
            supervisor = await runtime_core(memory).registry.get("a")

            def fail_the_batches(_step: str, _job: object) -> None:
                # The job and the fence have committed; every step from here fails.
                if vfs.fired == 0:
                    vfs.arm(FaultPlan.on(Call.WRITE, FileKind.WAL, persistent=True))

            supervisor.clearing.observer = fail_the_batches
            with (
                trio.fail_after(10),
                pytest.raises(StoreError, match="resumes by itself"),
            ):
                await memory.clear("a")
            supervisor.clearing.observer = None
            # The job is stored and fenced: nothing it clears is recalled meanwhile.
            recall = await memory.recall("a", "qlmnbvcxzt")
            assert "qlmnbvcxzt" not in recall.memory_block
            vfs.clear()
            await memory.wait_cleared("a")  # the job resumed by itself and finished
            assert (await memory.status()).agent("a").state.value == "running"


@pytest.mark.parametrize(
    "plan",
    [
        FaultPlan.on(Call.SYNC, FileKind.MAIN, persistent=True),
        FaultPlan.on(Call.DELETE, FileKind.WAL, persistent=True),
    ],
    ids=["db-sync", "wal-delete"],
)
async def test_closing_while_the_last_checkpoint_fails_loses_nothing_and_raises_nothing(
    tmp_path: Path, vfs: FaultVFS, plan: FaultPlan
) -> None:
    config = attrs.evolve(TEST_CONFIG, vfs=vfs.name)
    with trio.fail_after(60):
        async with open_memory(
            tmp_path, config, clock=FixedDomainClock(), embedder=HashingEmbedder()
        ) as memory:
            await memory.remember("a", "My bike is called qlmnbvcxzt.", by="user")
            vfs.arm(plan)
        # Closed without an error (it is logged): the WAL stayed for the next open.
        assert vfs.fired >= 1
        vfs.clear()
        async with open_memory(
            tmp_path, TEST_CONFIG, clock=FixedDomainClock(), embedder=HashingEmbedder()
        ) as reopened:
            assert (
                "qlmnbvcxzt" in (await reopened.recall("a", "qlmnbvcxzt")).memory_block
            )


async def _fail_when_cancelled(
    _actor: ClearJobActor,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """An actor whose last store write fails as the cancellation reaches it (a thread
    is never abandoned: its error arrives instead of Cancelled)."""
    task_status.started()
    try:
        await trio.sleep_forever()
    except trio.Cancelled:
        raise StoreError("IOError: disk I/O error") from None


async def test_an_agent_failing_as_the_runtime_is_cancelled_stays_contained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ClearJobActor, "run", _fail_when_cancelled)
    with trio.fail_after(60), pytest.raises(KeyError, match="the caller's own"):  # noqa: PT012
        async with open_memory(
            tmp_path, TEST_CONFIG, clock=FixedDomainClock(), embedder=HashingEmbedder()
        ) as memory:
            await memory.remember("a", "I like green tea.", by="user")
            # The body's own error cancels the runtime: the agent's failure during that
            # cancellation is its own, never a group around the caller's error.
            raise KeyError("the caller's own error")


def test_the_shorter_profiles_try_a_bounded_number_of_faults() -> None:
    for name in ("quick", "ci"):
        assert PROFILES[name].fault_indexes > 0
        assert PROFILES[name].fault_trials > 0
    assert PROFILES["long"].fault_indexes == 0  # every position of every operation
    assert PROFILES["long"].fault_trials == 0


async def test_the_fault_mode_runs_each_kind_of_trial_and_reports_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(faults, "OPERATIONS", ("forget",))
    monkeypatch.setattr(faults, "FAULT_KINDS", (KINDS["wal-write"], KINDS["open"]))
    profile = attrs.evolve(
        PROFILES["quick"], fault_indexes=1, fault_trials=0, crash_point_seeds=1
    )
    with trio.fail_after(100):
        result = await faults.run_faults(tmp_path / "faults", 11, profile)
    assert [violation.message for violation in result.violations] == []
    # One position × transient and persistent, one power-loss sequence, an open per
    # kind, the read-only directory.
    assert result.trials == 2 + 1 + 2 + 1
    assert result.figures["positions.forget"] > 0  # the open kind strikes nothing here
    assert result.figures["faults_fired"] == 2
    assert result.figures["power_loss.images"] == 15
    assert result.figures["read_only.typed_errors"] == 4
    assert list((tmp_path / "faults").iterdir()) == []  # its scratch is gone
