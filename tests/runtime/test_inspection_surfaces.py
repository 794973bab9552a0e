"""``memories``, ``memory`` and ``edit`` over a real ``cairn serve --socket`` (trio and
blocking clients): the records the embedded API returns, the
filters (caller tags among them) and the edit's lineage as embedded, and the same typed
errors."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import trio
from tests.conftest import open_test_memory
from tests.helpers import BASE_TIME, turn
from tests.ipc.harness import SERVER_TIMEOUT_S, short_directory, start_socket_server

from cairn import MemoryDetail, MemoryItem, Metadata
from cairn.errors import (
    ArgumentOutOfRangeError,
    InvalidInputError,
    InvalidMetadataError,
    InvalidTransitionError,
    UnknownClaimError,
)
from cairn.ipc import BlockingClient, open_unix_client
from cairn.testing import FixedDomainClock

CLOCK = FixedDomainClock(BASE_TIME + dt.timedelta(days=10))


async def _stored(data_dir: Path) -> tuple[list[MemoryItem], MemoryDetail]:
    """Berlin and ramen learned from turns; the listing and Berlin's detail."""
    async with open_test_memory(data_dir, clock=CLOCK) as memory:
        await memory.ingest(
            "a",
            [
                turn("t1", "I live in Berlin.", at=BASE_TIME),
                turn(
                    "t2",
                    "My favourite food is ramen.",
                    at=BASE_TIME,
                    metadata=Metadata(tags=("food",)),
                ),
            ],
        )
        await memory.wait_idle("a")
        listed = await memory.memories("a")
        (berlin,) = await memory.memories("a", text="Berlin")
        # The claim learned from the tagged turn carries its tag; the filter is in SQL
        # before the limit, so the newest untagged claim does not crowd it out.
        (ramen,) = await memory.memories("a", tags=["food", "travel"], limit=1)
        assert "ramen" in ramen.text
        assert await memory.memories("a", tags=["travel"]) == []
        return listed, await memory.memory("a", berlin.id)


async def _over_trio_client(
    socket_path: Path, berlin: str
) -> tuple[list[MemoryItem], MemoryDetail, list[MemoryItem]]:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(socket_path) as client:
            with pytest.raises(InvalidInputError, match="unknown memory kind"):
                await client.memories("a", kind="fax")
            with pytest.raises(ArgumentOutOfRangeError):
                await client.memories("a", limit=0)
            with pytest.raises(InvalidInputError, match="UTC offset"):
                await client.memories("a", since=dt.datetime(2026, 1, 1))  # noqa: DTZ001
            with pytest.raises(UnknownClaimError):
                await client.memory("a", "nope")
            with pytest.raises(UnknownClaimError):
                await client.edit("a", "nope", "I live in Munich.")
            with pytest.raises(InvalidInputError, match="blank"):
                await client.edit("a", berlin, " ")
            with pytest.raises(InvalidMetadataError, match="1 to 64 characters"):
                await client.memories("a", tags=["x" * 500])
            (food,) = await client.memories("a", tags=["food"])
            assert "ramen" in food.text
            listed = await client.memories("a")
            detail = await client.memory("a", berlin)
            filtered = await client.memories(
                "a", kind="fact", lifecycle="active", until=BASE_TIME.replace(year=2100)
            )
            return listed, detail, filtered


@pytest.mark.subprocess
def test_inspection_over_ipc_is_the_embedded_records(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    listed, detail = trio.run(_stored, data_dir)
    berlin = detail.memory.id
    with short_directory() as sockets:
        server = start_socket_server(
            data_dir, sockets / "cairn.sock", tmp_path / "server.log"
        )
        try:
            remote, remote_detail, filtered = trio.run(
                _over_trio_client, server.socket_path, berlin
            )
            assert remote == listed
            assert remote_detail == detail
            assert [item.id for item in filtered] == [berlin]
            with BlockingClient.connect_unix(
                server.socket_path, timeout_s=SERVER_TIMEOUT_S
            ) as blocking:
                assert blocking.memories("a") == listed
                assert [
                    item.text for item in blocking.memories("a", tags=["food"])
                ] == [item.text for item in listed if "ramen" in item.text]
                assert blocking.memory("a", berlin) == detail
                report = blocking.edit("a", berlin, "I live in Munich.")
                assert report.previous_id == berlin
                assert (report.memory.text, report.memory.lifecycle) == (
                    "I live in Munich.",
                    "active",
                )
                with pytest.raises(InvalidTransitionError, match="edited into"):
                    blocking.edit("a", berlin, "I live in Paris.")
                old = blocking.memory("a", berlin)
                assert old.memory.lifecycle == "archived"
                assert [(e.relation, e.other_id) for e in old.lineage] == [
                    ("edit", report.memory.id)
                ]
                recall = blocking.recall("a", "Where does Ana live? Berlin")
                texts = [item.text for item in recall.items]
                assert "I live in Munich." in texts
                assert not [text for text in texts if "Berlin" in text], texts
        finally:
            assert server.stop() == 0, server.log()
        assert "Traceback" not in server.log(), server.log()
