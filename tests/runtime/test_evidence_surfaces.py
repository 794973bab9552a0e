"""``evidence``: a recalled item's ``source_refs`` (or a claim ID) expanded into the stored
turns behind it, embedded and over a real ``cairn serve --socket`` (trio and blocking
clients): the same records, each ref answering on its own (present, hidden, forgotten,
unknown, unsourced), and the same typed errors."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import trio
from tests.conftest import open_test_memory
from tests.helpers import BASE_TIME, turn
from tests.ipc.harness import SERVER_TIMEOUT_S, short_directory, start_socket_server

from cairn import EvidenceItem
from cairn.errors import ArgumentOutOfRangeError, InvalidInputError
from cairn.ipc import BlockingClient, open_unix_client
from cairn.testing import FixedDomainClock

CLOCK = FixedDomainClock(BASE_TIME + dt.timedelta(days=10))


async def _stored(data_dir: Path) -> tuple[str, str, list[EvidenceItem]]:
    """Ana lives in Berlin (a turn and the claim learned from it); a cat remembered by
    the user (a claim with no turn). Returns the two claim IDs and the evidence of the
    Berlin claim's refs."""
    async with open_test_memory(data_dir, clock=CLOCK) as memory:
        await memory.ingest(
            "a",
            [
                turn("t1", "I live in Berlin.", at=BASE_TIME),
                turn("t2", "The weather is <b>nice</b> today.", at=BASE_TIME),
            ],
        )
        await memory.wait_idle("a")
        recall = await memory.recall("a", "Where does Ana live? Berlin")
        (berlin,) = [
            item
            for item in recall.items
            if item.kind != "evidence" and "Berlin" in item.text
        ]
        remembered = await memory.remember("a", "Ana's cat is Miso.", by="user")
        assert remembered.claim_id is not None
        return (
            berlin.id,
            remembered.claim_id,
            await memory.evidence("a", list(berlin.source_refs)),
        )


async def test_refs_expand_to_the_stored_turns(tmp_path: Path) -> None:
    with trio.fail_after(60):
        berlin, cat, sources = await _stored(tmp_path)
        (source,) = sources
        assert source == EvidenceItem(
            ref="t1",
            state="present",
            event_id="t1",
            session_id="s1",
            role="user",
            speaker="Ana",
            kind="message",
            at=BASE_TIME.astimezone(dt.UTC).isoformat(),
            text="I live in Berlin.",
        )
        async with open_test_memory(tmp_path, clock=CLOCK) as memory:
            # A claim ID stands for its source turns; one bad ref does not stop the rest.
            found = await memory.evidence("a", [berlin, "nope", cat, "t2"])
            assert [(i.ref, i.state, i.event_id, i.claim_id) for i in found] == [
                (berlin, "present", "t1", berlin),
                ("nope", "unknown", None, None),
                (cat, "unsourced", None, cat),
                ("t2", "present", "t2", None),
            ]
            assert found[3].text == "The weather is <b>nice</b> today."
            # Another agent's turns are not this one's.
            await memory.ingest("b", [turn("x1", "hello there", at=BASE_TIME)])
            (other,) = await memory.evidence("b", ["t1"])
            assert other.state == "unknown"

            # Forgetting the claim hides its turn (as recall does): no text comes back.
            await memory.forget("a", berlin)
            (hidden,) = await memory.evidence("a", ["t1"])
            assert (hidden.state, hidden.text) == ("hidden", None)
            # A forgotten turn leaves only the hash of its ID.
            await memory.forget("a", "t2")
            (gone,) = await memory.evidence("a", ["t2"])
            assert (gone.state, gone.event_id, gone.text) == ("forgotten", "t2", None)


async def test_bad_refs_are_typed_errors(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with open_test_memory(tmp_path, clock=CLOCK) as memory:
            await memory.ingest("a", [turn("t1", "hello", at=BASE_TIME)])
            with pytest.raises(
                ArgumentOutOfRangeError, match="refs must hold 1 to 100"
            ):
                await memory.evidence("a", [f"r{n}" for n in range(101)])
            with pytest.raises(
                ArgumentOutOfRangeError, match="refs must hold 1 to 100"
            ):
                await memory.evidence("a", [])
            with pytest.raises(InvalidInputError, match="not one string"):
                await memory.evidence("a", "t1")
            with pytest.raises(InvalidInputError, match="event or claim IDs"):
                await memory.evidence("a", ["t1", " "])
            # An agent ID that cannot be one is refused; an agent with nothing stored
            # knows no ref.
            with pytest.raises(InvalidInputError):
                await memory.evidence("no body", ["t1"])
            assert [i.state for i in await memory.evidence("nobody", ["t1"])] == [
                "unknown"
            ]
            assert len(await memory.evidence("a", ["t1"] * 100)) == 100


async def _over_trio_client(socket_path: Path, berlin: str) -> list[EvidenceItem]:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(socket_path) as client:
            with pytest.raises(ArgumentOutOfRangeError):
                await client.evidence("a", [])
            with pytest.raises(InvalidInputError):
                await client.evidence("no body", ["t1"])
            return await client.evidence("a", [berlin, "t2", "nope"])


@pytest.mark.subprocess
def test_evidence_over_ipc_is_the_embedded_records(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    berlin, _, _ = trio.run(_stored, data_dir)

    async def embedded() -> list[EvidenceItem]:
        async with open_test_memory(data_dir, clock=CLOCK) as memory:
            return await memory.evidence("a", [berlin, "t2", "nope"])

    expected = trio.run(embedded)
    with short_directory() as sockets:
        server = start_socket_server(
            data_dir, sockets / "cairn.sock", tmp_path / "server.log"
        )
        try:
            assert trio.run(_over_trio_client, server.socket_path, berlin) == expected
            with BlockingClient.connect_unix(
                server.socket_path, timeout_s=SERVER_TIMEOUT_S
            ) as blocking:
                assert blocking.evidence("a", [berlin, "t2", "nope"]) == expected
        finally:
            assert server.stop() == 0, server.log()
        assert "Traceback" not in server.log(), server.log()
