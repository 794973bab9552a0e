"""Reading turns from JSONL: one object per line, each validated like an embedded ingest."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

import attrs

from cairn.domain.evidence import Turn
from cairn.domain.metadata import Metadata
from cairn.errors import InvalidInputError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = ["TurnLine", "parse_turn", "read_turns"]

_FIELDS = {
    "id",
    "session",
    "role",
    "text",
    "at",
    "speaker",
    "kind",
    "replaces",
    "metadata",
}


def parse_turn(data: object) -> Turn:
    """One JSONL object → Turn, or InvalidInputError saying what is wrong."""
    if not isinstance(data, dict):
        raise InvalidInputError("each line must be a JSON object")
    unknown = set(data) - _FIELDS
    if unknown:
        raise InvalidInputError(f"unknown fields: {', '.join(sorted(unknown))}")
    for name in ("id", "session", "role", "text"):
        if not isinstance(data.get(name), str):
            raise InvalidInputError(f"field {name!r} must be a string")
    at = None
    if data.get("at") is not None:
        try:
            at = dt.datetime.fromisoformat(str(data["at"]))
        except ValueError:
            raise InvalidInputError(f"'at' is not ISO-8601: {data['at']!r}") from None
        if at.utcoffset() is None:
            at = at.replace(tzinfo=dt.UTC)
    for name in ("speaker", "kind", "replaces"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise InvalidInputError(f"field {name!r} must be a string")
    metadata = (
        None
        if data.get("metadata") is None
        else Metadata.from_data(data["metadata"], "field 'metadata'")
    )
    try:
        return Turn(
            data["id"],
            data["session"],
            data["role"],
            data["text"],
            at,
            data.get("speaker"),
            data.get("kind") or "message",
            data.get("replaces"),
            None if metadata is None or metadata.empty else metadata,
        )
    except ValueError as error:
        raise InvalidInputError(str(error)) from None


@attrs.frozen
class TurnLine:
    """One non-blank line: its number, its size in bytes, and a turn or why not."""

    number: int
    size: int
    turn: Turn | None
    error: str | None = None
    event_id: str | None = None


def read_turns(path: Path) -> Iterator[TurnLine]:
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            size = len(raw)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                yield TurnLine(number, size, None, "not UTF-8")
                continue
            if not line.strip():
                yield TurnLine(number, size, None)
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                yield TurnLine(number, size, None, f"invalid JSON: {error.msg}")
                continue
            except RecursionError:
                yield TurnLine(number, size, None, "invalid JSON: nested too deeply")
                continue
            except ValueError as error:
                # An integer of more digits than Python converts, and the like.
                yield TurnLine(number, size, None, f"invalid JSON: {error}")
                continue
            event_id = data.get("id") if isinstance(data, dict) else None
            event_id = event_id if isinstance(event_id, str) else None
            try:
                yield TurnLine(number, size, parse_turn(data), event_id=event_id)
            except InvalidInputError as error:
                yield TurnLine(number, size, None, str(error), event_id)
