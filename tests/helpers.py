"""Helpers shared by tests (importable as ``tests.helpers``)."""

from __future__ import annotations

import asyncio  # noqa: TID251 - the asyncio host's tests run a plain asyncio loop
import datetime as dt
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from cairn import Turn
from cairn.domain.ids import EventId, SessionId
from cairn.domain.metadata import Metadata

BASE_TIME = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)

T = TypeVar("T")
ASYNCIO_BOUND_S = 120.0


def run_on_asyncio(main: Coroutine[Any, Any, T], bound_s: float = ASYNCIO_BOUND_S) -> T:
    """``main`` on a plain asyncio loop, as an asyncio host runs cairn, under a bound.

    The loop is built explicitly rather than by ``asyncio.run()``: once anything in the
    process has imported trio-asyncio (the LiteLLM and bridge tests do), the policy that
    ``asyncio.run()`` asks builds trio-asyncio's loop, which cannot host a trio guest run
    (design/providers.md). No test order can then break the asyncio host's tests.
    """
    with asyncio.Runner(loop_factory=asyncio.SelectorEventLoop) as runner:
        return runner.run(asyncio.wait_for(main, bound_s))


def turn(
    event_id: str,
    text: str,
    *,
    session: str = "s1",
    role: str = "user",
    speaker: str | None = "Ana",
    at: dt.datetime | None = None,
    kind: str = "message",
    replaces: str | None = None,
    metadata: Metadata | None = None,
) -> Turn:
    return Turn(
        EventId(event_id),
        SessionId(session),
        role,
        text,
        at or BASE_TIME,
        speaker,
        kind,
        None if replaces is None else EventId(replaces),
        metadata,
    )


def files_holding(
    root: Path, fragments: Sequence[str], *extra: Path
) -> dict[str, list[str]]:
    """Which files (every file under ``root``, and ``extra``) hold which fragment in their
    raw bytes, ASCII-case-folded: ``{}`` when none does.

    Scan for a fragment from inside a word as well as the word: FTS5 stores each term
    prefix-compressed against the one before it on its page (and namespaced, porter
    stemmed), so only the tail of a term is sure to appear as written.
    """
    paths = [path for path in root.rglob("*") if path.is_file()]
    paths += [path for path in extra if path.is_file()]
    found: dict[str, list[str]] = {}
    for path in paths:
        blob = path.read_bytes().lower()
        for fragment in fragments:
            if fragment.lower().encode("utf-8") in blob:
                found.setdefault(fragment, []).append(str(path))
    return found
