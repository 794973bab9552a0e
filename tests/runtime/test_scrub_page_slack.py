"""A forgotten turn's text is not left in the unused gap of a database page.

SQLite's ``secure_delete`` zeroes a deleted row's cell, but when b-tree rebalancing moved
a cell to another page earlier, the page it left keeps a copy in the gap between its cell
pointers and its cell content. The scrub after a forget rebuilds the file, so no copy
survives anywhere (found by the crash trials of cairn.stress.crash: a killed server's
directory held a cleared turn in such a gap after the reopen's scrub).
"""

from __future__ import annotations

import struct
from pathlib import Path

import apsw
from tests.conftest import open_test_memory

from cairn.domain.evidence import Turn
from cairn.testing import FixedDomainClock

MARKERS = [f"qzxcvbnm{a}{b}" for a in "bcdfg" for b in "hjklm"]


def _gap_copies(path: Path, text: bytes) -> int:
    """Copies of ``text`` in the unused gap of table b-tree leaf pages of the file."""
    data = path.read_bytes()
    page_size = struct.unpack(">H", data[16:18])[0] or 65536
    copies, start = 0, 0
    while (offset := data.find(text, start)) >= 0:
        start = offset + 1
        base = offset - offset % page_size
        header = base + (100 if base == 0 else 0)
        if data[header] != 0x0D:  # a table leaf
            continue
        cells = struct.unpack(">H", data[header + 3 : header + 5])[0]
        content = struct.unpack(">H", data[header + 5 : header + 7])[0]
        if header + 8 + 2 * cells <= offset < base + content:
            copies += 1
    return copies


def _files_holding(data_dir: Path, text: bytes) -> list[str]:
    return [
        path.name
        for path in sorted(data_dir.rglob("*"))
        if path.is_file() and text in path.read_bytes()
    ]


async def test_a_forgotten_turn_left_in_a_pages_unused_gap_is_gone_after_the_forget(
    data_dir: Path, clock: FixedDomainClock
) -> None:
    turns = [
        Turn(f"e{n}", "s0", "user", f"My locker code word is {marker}.")
        for n, marker in enumerate(MARKERS)
    ]
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.ingest("a", turns)
        await memory.wait_idle("a")
    # The file's history: rows grow past their page and shrink back (as rows do when
    # extraction and embedding update them), so SQLite rebalances the events b-tree
    # and the pages cells moved out of keep copies of them in their gap.
    path = data_dir / "cairn.db"
    connection = apsw.Connection(str(path))
    stale: list[tuple[Turn, str]] = []
    # Which growth leaves a copy behind depends on the rows' layout (their columns and
    # sizes): try a few until one does.
    for growth in (1500, 2500, 900, 3500, 600):
        for rowid in range(1, len(MARKERS) + 1):
            with connection:
                connection.execute(
                    "UPDATE events SET speaker = ? WHERE rowid = ?",
                    ("x" * growth, rowid),
                )
            with connection:
                connection.execute(
                    "UPDATE events SET speaker = NULL WHERE rowid = ?", (rowid,)
                )
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        stale = [
            (turn, marker)
            for turn, marker in zip(turns, MARKERS, strict=True)
            if _gap_copies(path, marker.encode())
        ]
        if stale:
            break
    connection.close()
    assert stale, "the rebalancing left no copy in any page gap"
    turn, marker = stale[0]
    async with open_test_memory(data_dir, clock=clock) as memory:
        await memory.forget("a", turn.event_id)
        recall = await memory.recall("a", marker)
        assert marker not in recall.memory_block
    assert _files_holding(data_dir, marker.encode()) == []
    # The other turns are all still there.
    async with open_test_memory(data_dir, clock=clock) as memory:
        kept = MARKERS[-1] if MARKERS[-1] != marker else MARKERS[0]
        assert kept in (await memory.recall("a", kept)).memory_block
