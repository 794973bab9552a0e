"""Helpers shared by tests (importable as ``tests.helpers``)."""

from __future__ import annotations

import datetime as dt

from cairn import Turn
from cairn.domain.ids import EventId, SessionId

BASE_TIME = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)


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
    )
