"""The IPC server, as a real ``cairn serve --socket`` process: the embedded API's answers
over the wire, typed errors, many clients and many requests per connection, and clients
that misbehave (garbage, oversize frames, wrong versions, disconnects, not reading) never
hurt the server or the other clients."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from tests.helpers import turn
from tests.ipc.harness import (
    SERVER_TIMEOUT_S,
    SocketServer,
    raw_connection,
    short_directory,
    start_socket_server,
)

from cairn import IntakeOutcome, RecallStatus, StatusReport, Turn
from cairn.errors import (
    ConflictingEventError,
    InvalidInputError,
    UnknownRequestError,
)
from cairn.ipc import open_unix_client
from cairn.ipc.framing import encode_frame
from cairn.ipc.messages import (
    PROTOCOL_VERSION,
    Busy,
    Error,
    IngestRequest,
    IngestTurnRequest,
    IngestTurnResult,
    StatusRequest,
    StatusResult,
    TurnMessage,
    WaitIdleRequest,
    WaitIdleResult,
    Welcome,
)
from cairn.ipc.requests import Call

pytestmark = pytest.mark.subprocess


async def test_embedded_api_round_trip(shared_server: SocketServer) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            assert client.welcome.version == PROTOCOL_VERSION
            await client.ping()
            report = await client.ingest(
                "round-trip",
                [turn("t1", "I love oolong tea."), turn("t2", "I live in Lisbon.")],
            )
            assert [r.outcome for r in report.results] == [IntakeOutcome.INGESTED] * 2
            again = await client.ingest_turn(
                "round-trip", turn("t1", "I love oolong tea.")
            )
            assert again.outcome is IntakeOutcome.DUPLICATE
            with pytest.raises(ConflictingEventError):
                await client.ingest_turn("round-trip", turn("t1", "something else"))
            await client.wait_idle("round-trip")

            directive_id = await client.add_directive("round-trip", "Answer briefly.")
            assert directive_id
            recall = await client.recall(
                "round-trip", "what tea does Ana love?", wait_s=30.0, k=3
            )
            assert recall.status is RecallStatus.OK
            assert recall.items
            assert recall.items[0].source_refs == ("t1",)
            assert "oolong" in recall.memory_block
            assert "Answer briefly." in recall.directive_block
            assert recall.manifest is not None

            # A recall that misses its wait budget answers pending, fetchable by its ID.
            first = await client.recall("round-trip", "oolong", wait_s=1e-9)
            assert first.status is RecallStatus.PENDING
            assert first.request_id
            assert first.items == ()
            later = await client.fetch_recall("round-trip", first.request_id)
            assert later.status in {RecallStatus.PENDING, RecallStatus.OK}
            assert later.request_id == first.request_id
            with pytest.raises(UnknownRequestError):
                await client.fetch_recall("round-trip", "no-such-request")
            with pytest.raises(InvalidInputError):
                await client.recall("round-trip", "   ")
            with pytest.raises(InvalidInputError):
                await client.recall("bad agent id with spaces!", "tea")

            status = await client.status()
            counts = status.agent("round-trip")
            assert counts.events == 2
            assert counts.events_pending_extraction == 0

            cleared = await client.clear("round-trip")
            assert cleared.claims_deleted >= 1
            assert "evidence" in cleared.removed
            assert cleared.agent_id == "round-trip"
            assert (cleared.turns_deleted, cleared.kept_counts.events) == (2, 0)
            status = await client.status()
            assert status.agent("round-trip").claims == 0


async def test_event_kinds_travel_and_a_deletion_withdraws_the_message(
    shared_server: SocketServer,
) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            await client.ingest(
                "kinds",
                [
                    turn("k1", "I love jasmine rice."),
                    Turn("k2", "s1", "event", "deploy failed", kind="task_failed"),
                ],
            )
            await client.wait_idle("kinds")
            before = await client.recall("kinds", "jasmine rice", wait_s=30.0)
            deleted = Turn(
                "k3", "s1", "user", "", kind="message_deleted", replaces="k1"
            )
            await client.ingest_turn("kinds", deleted)
            await client.wait_idle("kinds")
            after = await client.recall("kinds", "jasmine rice", wait_s=30.0)
            bad = TurnMessage(
                event_id="k4", session_id="s1", role="user", text="x", kind="nope"
            )
            with pytest.raises(InvalidInputError):
                await client.send(
                    Call.raw(
                        IngestTurnRequest(id=0, agent_id="kinds", turn=bad),
                        IngestTurnResult,
                    )
                )
    assert any("jasmine" in item.text for item in before.items)
    assert not any("jasmine" in item.text for item in after.items)


async def test_many_clients_and_many_requests_per_connection(
    shared_server: SocketServer,
) -> None:
    """8 clients at once, each with 4 concurrent requests: every answer reaches its caller."""
    foods = [
        "oolong",
        "mango",
        "sourdough",
        "kimchi",
        "paella",
        "ramen",
        "falafel",
        "pho",
    ]

    async def one_client(index: int) -> None:
        agent = f"concurrent-{index}"
        async with open_unix_client(shared_server.socket_path) as client:
            await client.ingest(agent, [turn(f"e{index}", f"I love {foods[index]}.")])
            await client.wait_idle(agent)
            answers: dict[int, str] = {}

            async def ask(slot: int) -> None:
                recall = await client.recall(agent, f"{foods[index]}?", wait_s=30.0)
                answers[slot] = recall.items[0].text

            async with trio.open_nursery() as nursery:
                for slot in range(4):
                    nursery.start_soon(ask, slot)
            assert len(answers) == 4
            assert all(foods[index] in text for text in answers.values())

    with trio.fail_after(SERVER_TIMEOUT_S):
        async with trio.open_nursery() as nursery:
            for index in range(8):
                nursery.start_soon(one_client, index)


async def test_malformed_frames_get_error_frames_and_the_connection_goes_on(
    shared_server: SocketServer,
) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with raw_connection(shared_server.socket_path) as raw:
            assert isinstance(await raw.hello(), Welcome)

            await raw.send_bytes(b"\x00\x00\x00\x05\xc1\xc1\xff\x00\x13")  # not msgpack
            error = await raw.answer()
            assert isinstance(error, Error)
            assert (error.id, error.code) == (None, "malformed")

            await raw.send_bytes(b"\x00\x00\x00\x03abc")  # msgpack, but not a map
            error = await raw.answer()
            assert (error.id, error.code) == (None, "malformed")

            await raw.send_raw_message({"type": "teleport", "id": 7})
            error = await raw.answer()
            assert (error.id, error.code) == (7, "unknown_type")

            await raw.send_raw_message({"type": "recall", "id": 8, "agent_id": 5})
            error = await raw.answer()
            assert (error.id, error.code) == (8, "malformed")
            assert "agent_id" in error.message

            await raw.send(StatusRequest(id=9))
            answer = await raw.answer()
            assert isinstance(answer, StatusResult)
            assert answer.id == 9


async def test_oversize_frame_closes_only_that_connection(
    shared_server: SocketServer,
) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with raw_connection(shared_server.socket_path) as raw:
            assert isinstance(await raw.hello(), Welcome)
            await raw.send_bytes((1 << 30).to_bytes(4, "big") + b"\x80" * 100)
            error = await raw.answer()
            assert (error.id, error.code) == (None, "frame_too_large")
            assert await raw.answer() is None  # closed

        # An HTTP client on the socket: its first bytes read as a 1.1 GB header.
        async with raw_connection(shared_server.socket_path) as raw:
            await raw.send_bytes(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            error = await raw.answer()
            assert error.code == "frame_too_large"
            assert await raw.answer() is None

        async with open_unix_client(shared_server.socket_path) as client:
            assert isinstance(await client.status(), StatusReport)


async def test_version_mismatch_and_missing_hello_are_refused(
    shared_server: SocketServer,
) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with raw_connection(shared_server.socket_path) as raw:
            error = await raw.hello(versions=[99, 100])
            assert isinstance(error, Error)
            assert error.code == "version_mismatch"
            assert "99" in error.message
            assert await raw.answer() is None

        async with raw_connection(shared_server.socket_path) as raw:
            await raw.send(StatusRequest(id=1))
            error = await raw.answer()
            assert error.code == "handshake_required"
            assert await raw.answer() is None


async def test_in_flight_bound_answers_busy(shared_server: SocketServer) -> None:
    """Requests past the per-connection bound are answered ``busy`` at once, unstarted;
    every request gets exactly one answer."""
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with raw_connection(shared_server.socket_path) as raw:
            welcome = await raw.hello()
            limit = welcome.max_in_flight
            # Work that keeps requests in flight: wait_idle behind a large ingest.
            turns = [
                {
                    "event_id": f"b{i}",
                    "session_id": "s",
                    "role": "user",
                    "text": f"I moved to city number {i} last year.",
                }
                for i in range(400)
            ]
            frames = [
                _frame(IngestRequest, id=1, agent_id="busy", turns=turns),
                *[
                    _frame(WaitIdleRequest, id=2 + i, agent_id="busy")
                    for i in range(limit * 2)
                ],
            ]
            await raw.send_bytes(b"".join(frames))  # one write: read in one go
            answers = [await raw.answer() for _ in frames]
            ids = sorted(answer.id for answer in answers)
            assert ids == list(range(1, len(frames) + 1))
            busy = [answer for answer in answers if isinstance(answer, Busy)]
            done = [a for a in answers if isinstance(a, WaitIdleResult)]
            assert len(busy) >= limit - 1
            assert busy[0].max_in_flight == limit
            assert len(done) + len(busy) == limit * 2


def _frame(kind: type, **fields: object) -> bytes:
    return encode_frame(kind(**fields))


async def test_a_client_that_does_not_read_is_dropped_and_others_go_on(
    shared_server: SocketServer,
) -> None:
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with raw_connection(shared_server.socket_path) as slow:
            assert isinstance(await slow.hello(), Welcome)
            batch = b"".join(_frame(StatusRequest, id=i) for i in range(1, 201))
            dropped = False
            async with open_unix_client(shared_server.socket_path) as other:
                # The slow client writes and never reads; the server's answers pile up
                # until its bounded outbound queue overflows and it hangs up.
                while not dropped:
                    try:
                        await slow.send_bytes(batch)
                    except trio.BrokenResourceError:
                        dropped = True
                    # Meanwhile another client is answered as usual.
                    assert isinstance(await other.status(), StatusReport)
            assert "does not read its answers" in shared_server.log()


async def test_disconnect_mid_request_loses_nothing_accepted(
    shared_server: SocketServer,
) -> None:
    turns = [
        {
            "event_id": f"d{i}",
            "session_id": "s",
            "role": "user",
            "text": f"My locker code is {i}.",
        }
        for i in range(200)
    ]
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with raw_connection(shared_server.socket_path) as raw:
            assert isinstance(await raw.hello(), Welcome)
            await raw.send(IngestRequest(id=1, agent_id="gone", turns=turns))
            # Half a frame, then gone: the server must not wait for the rest.
            await raw.send_bytes(b"\x00\x00\x10\x00\x82")
        async with open_unix_client(shared_server.socket_path) as client:
            await client.wait_idle("gone")
            counts = (await client.status()).agent("gone")
            # The ingest was accepted whole before the client vanished.
            assert counts.events == 200
            assert counts.events_pending_extraction == 0
        assert shared_server.process.poll() is None


async def test_a_cancelled_call_leaves_the_connection_usable(
    shared_server: SocketServer,
) -> None:
    """The cancelled call's answer is dropped on arrival; later calls get their own."""
    turns = [turn(f"x{i}", f"I collect stamp number {i}.") for i in range(300)]
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            async with trio.open_nursery() as nursery:
                cancelled = trio.CancelScope()

                async def wait_then_cancelled() -> None:
                    with cancelled:
                        await client.ingest("cancelled", turns)
                        await client.wait_idle("cancelled")

                nursery.start_soon(wait_then_cancelled)
                await trio.testing.wait_all_tasks_blocked()
                cancelled.cancel()
            assert not client._pending
            for _ in range(3):
                assert (await client.status()).agents
            await client.wait_idle("cancelled")
            counts = (await client.status()).agent("cancelled")
            assert counts.events in {0, 300}  # whole or nothing


async def test_the_trio_client_queues_past_the_in_flight_bound(tmp_path) -> None:
    """With --max-in-flight 2, twenty concurrent calls on one trio client all succeed:
    the client waits for a slot (freed by the server's answer) instead of getting busy."""
    with short_directory() as sockets:
        server = start_socket_server(
            tmp_path / "data",
            sockets / "cairn.sock",
            tmp_path / "server.log",
            "--max-in-flight",
            "2",
        )
        try:
            with trio.fail_after(SERVER_TIMEOUT_S):
                async with open_unix_client(server.socket_path) as client:
                    assert client.welcome.max_in_flight == 2
                    await client.ingest("queued", [turn("q1", "I love oolong tea.")])
                    await client.wait_idle("queued")
                    results = []

                    async def ask() -> None:
                        recall = await client.recall("queued", "oolong", wait_s=30.0)
                        results.append(recall.items[0].source_refs)

                    async with trio.open_nursery() as nursery:
                        for _ in range(20):
                            nursery.start_soon(ask)
                    assert results == [("q1",)] * 20
        finally:
            assert server.stop() == 0, server.log()
