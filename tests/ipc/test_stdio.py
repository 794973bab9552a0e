"""``cairn serve --stdio``: the host spawns cairn and speaks frames over its stdin/stdout;
logs go to stderr, so stdout carries nothing but frames. End of input stops the server after
answering what is running and draining accepted work."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import trio
from tests.helpers import turn
from tests.ipc.harness import SERVER_ENV, SERVER_TIMEOUT_S, serve_args

from cairn import RecallStatus
from cairn.errors import InvalidInputError
from cairn.ipc import open_stdio_client
from cairn.ipc.framing import FrameReader, decode_answer, encode_frame
from cairn.ipc.messages import (
    PROTOCOL_VERSION,
    Error,
    Hello,
    StatusRequest,
    StatusResult,
    Welcome,
)

pytestmark = pytest.mark.subprocess


async def test_stdio_round_trip_with_concurrent_requests(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_stdio_client(
            data, env=SERVER_ENV, command=serve_args(data, "--stdio")
        ) as client:
            await client.ingest(
                "pipe",
                [turn("p1", "I love oolong tea."), turn("p2", "My sister is Inês.")],
            )
            await client.wait_idle("pipe")
            answers: dict[str, str] = {}

            async def ask(query: str) -> None:
                recall = await client.recall("pipe", query, wait_s=30.0)
                assert recall.status is RecallStatus.OK
                answers[query] = recall.items[0].source_refs[0]

            async with trio.open_nursery() as nursery:
                for query in ("oolong tea", "sister Inês") * 4:
                    nursery.start_soon(ask, query)
            assert answers == {"oolong tea": "p1", "sister Inês": "p2"}
            with pytest.raises(InvalidInputError):
                await client.add_directive("pipe", "   ")

    # The first server released the data directory on exit; the memory persisted.
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_stdio_client(
            data, env=SERVER_ENV, command=serve_args(data, "--stdio")
        ) as client:
            counts = (await client.status()).agent("pipe")
            assert counts.events == 2


def test_stdio_frames_only_on_stdout_and_typed_refusals(tmp_path: Path) -> None:
    """A raw host: garbage gets an error frame, then the conversation goes on; a wrong
    version is refused; end of input exits 0 with the log on stderr."""
    reader = FrameReader()
    stream = (
        encode_frame(Hello(versions=[PROTOCOL_VERSION], client="raw-host"))
        + b"\x00\x00\x00\x02\xc1\xc1"
        + encode_frame(StatusRequest(id=5))
    )
    done = subprocess.run(
        serve_args(tmp_path / "data", "--stdio"),
        input=stream,
        capture_output=True,
        env=SERVER_ENV,
        timeout=SERVER_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    reader.feed(done.stdout)
    answers = []
    while (body := reader.next_frame()) is not None:
        answers.append(decode_answer(body))
    assert not reader.has_partial_frame  # nothing but whole frames on stdout
    assert isinstance(answers[0], Welcome)
    assert isinstance(answers[1], Error)
    assert answers[1].code == "malformed"
    assert isinstance(answers[2], StatusResult)
    assert answers[2].id == 5
    assert len(answers) == 3
    log = done.stderr.decode()
    assert "cairn serve: stdio" in log
    assert "Traceback" not in log

    refused = subprocess.run(
        serve_args(tmp_path / "data", "--stdio"),
        input=encode_frame(Hello(versions=[PROTOCOL_VERSION + 1]))
        + encode_frame(StatusRequest(id=1)),
        capture_output=True,
        env=SERVER_ENV,
        timeout=SERVER_TIMEOUT_S,
        check=False,
    )
    assert refused.returncode == 0
    reader.feed(refused.stdout)
    error = decode_answer(reader.next_frame() or b"")
    assert isinstance(error, Error)
    assert error.code == "version_mismatch"
    assert reader.next_frame() is None  # the status request was never answered
