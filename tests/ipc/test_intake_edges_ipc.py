"""Intake edges over a real ``cairn serve --socket``: a turn with a malformed ID or a time
at the edge of the calendar is rejected alone, with the same typed rejection as embedded,
and the good turns of the same request are stored; single-turn and single-ID calls answer
a typed error, never ``internal``."""

from __future__ import annotations

import datetime as dt

import pytest
import trio
from tests.helpers import turn
from tests.ipc.harness import SERVER_TIMEOUT_S, SocketServer

from cairn import IntakeOutcome, IntakeRejection, RecallStatus
from cairn.errors import InvalidInputError
from cairn.ipc import open_unix_client

pytestmark = pytest.mark.subprocess

WEST = dt.timezone(dt.timedelta(hours=-5))
EAST = dt.timezone(dt.timedelta(hours=5))


async def test_bad_ids_and_calendar_edge_times_reject_only_their_turns_over_ipc(
    shared_server: SocketServer,
) -> None:
    agent = "edges"
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            report = await client.ingest(
                agent,
                [
                    turn("good-1", "I love oolong tea."),
                    turn(
                        "late",
                        "At the end of the calendar.",
                        at=dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=WEST),
                    ),
                    turn(
                        "early",
                        "At the start of the calendar.",
                        at=dt.datetime(1, 1, 1, tzinfo=EAST),
                    ),
                    turn("e\x00", "A NUL in the event ID."),
                    turn("x" * 100_000, "An overlong event ID."),
                    turn("x#seg1", "A segment's ID."),
                    turn("good-2", "My sister lives in Lisbon."),
                ],
            )
            decided = [(r.outcome, r.rejection) for r in report.results]
            assert decided == [
                (IntakeOutcome.INGESTED, None),
                (IntakeOutcome.REJECTED, IntakeRejection.INVALID_TIME),
                (IntakeOutcome.REJECTED, IntakeRejection.INVALID_TIME),
                (IntakeOutcome.REJECTED, IntakeRejection.INVALID_ID),
                (IntakeOutcome.REJECTED, IntakeRejection.INVALID_ID),
                (IntakeOutcome.REJECTED, IntakeRejection.INVALID_ID),
                (IntakeOutcome.INGESTED, None),
            ]
            assert "outside the supported calendar" in (report.results[1].reason or "")
            await client.wait_idle(agent)
            recall = await client.recall(
                agent, "where does my sister live?", wait_s=30.0
            )
            assert recall.status is RecallStatus.OK
            assert "Lisbon" in recall.memory_block
            assert "calendar" not in recall.memory_block


async def test_single_turn_and_single_id_calls_answer_a_typed_error_over_ipc(
    shared_server: SocketServer,
) -> None:
    agent = "edges-single"
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            with pytest.raises(
                InvalidInputError, match="outside the supported calendar"
            ):
                await client.ingest_turn(
                    agent,
                    turn(
                        "late", "At the edge.", at=dt.datetime.max.replace(tzinfo=WEST)
                    ),
                )
            with pytest.raises(InvalidInputError, match="U\\+0000"):
                await client.ingest_event(agent, turn("e\x00", "A NUL."))
            with pytest.raises(InvalidInputError, match="session ID"):
                await client.declare_session(agent, "s" * 300)
            # The connection still serves.
            stored = await client.ingest_turn(agent, turn("fine", "I like tea."))
            assert stored.outcome is IntakeOutcome.INGESTED
