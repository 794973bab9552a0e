"""A hook call with no server running starts ``cairn serve --socket`` itself, waits for it
inside its budget and recalls from it: the first prompt of a day gets its context."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tests.hooks.test_hook_calls import claude, context_of, hook, transcript
from tests.ipc.harness import SERVER_TIMEOUT_S, short_directory, start_socket_server
from tests.support.serve_hashing import hashing_cairn

from cairn.hooks.locate import live_socket

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.subprocess

# The started server runs the real command line with the hashing embedder.
HASHING_SERVE = {"CAIRN_HOOK_SERVE_COMMAND": json.dumps(hashing_cairn())}


def server_pid(data: Path) -> int:
    record = json.loads((data / "server.json").read_text(encoding="utf-8"))
    return int(record["pid"])


@contextlib.contextmanager
def stopped_at_exit(data: Path) -> Iterator[None]:
    """SIGTERM to whatever server a hook started on ``data``, and its exit awaited (it
    is no child of the test: the hook that started it has exited)."""
    try:
        yield
    finally:
        if live_socket(data) is not None:
            pid = server_pid(data)
            descriptor = os.pidfd_open(pid)
            try:
                os.kill(pid, signal.SIGTERM)
                poller = select.poll()
                poller.register(descriptor, select.POLLIN)
                exited = poller.poll(SERVER_TIMEOUT_S * 1000)
                if not exited:
                    os.kill(pid, signal.SIGKILL)
                assert exited, "the hook-started server did not stop on SIGTERM"
            finally:
                os.close(descriptor)


def test_a_hook_with_no_server_starts_one_and_recalls_from_it() -> None:
    with short_directory() as root:
        data = root / "data"
        path = transcript(
            root / "t.jsonl", ("user", "u-1", "My cat Miso sleeps on the piano.")
        )
        earlier = start_socket_server(data, root / "s.sock", root / "log")
        try:
            hook(data, "claude-code", "Stop", payload=claude("Stop", path))
        finally:
            assert earlier.stop() == 0
        assert live_socket(data) is None
        with stopped_at_exit(data):
            answer = hook(
                data,
                "claude-code",
                "UserPromptSubmit",
                "--budget",
                "20",
                payload=claude(
                    "UserPromptSubmit", path, prompt="what is my cat called?"
                ),
                env=HASHING_SERVE,
            )
            log = (data / "hooks" / "server.log").read_text(encoding="utf-8")
            assert "Miso" in context_of(answer), answer.stderr + log
            # The started server stays up for the next call, on the data directory's socket.
            assert live_socket(data) == data / "cairn.sock"
            again = hook(
                data,
                "claude-code",
                "UserPromptSubmit",
                payload=claude(
                    "UserPromptSubmit", path, prompt="where does Miso sleep?"
                ),
            )
            assert "piano" in context_of(again)
