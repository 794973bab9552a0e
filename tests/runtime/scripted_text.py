"""An in-process text provider for ingestion tests: answers from a script, records calls."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import msgspec
import trio

from cairn.errors import TransientProviderError
from cairn.providers.http.text import TextIdentity

S = TypeVar("S", bound=msgspec.Struct)

Answer = Callable[[list[dict[str, Any]]], dict[str, Any]]


def events_of(user_prompt: str) -> list[dict[str, Any]]:
    """The events the prompt shows the model (one JSON object per line)."""
    return [json.loads(line) for line in user_prompt.splitlines()[1:]]


def discard_all(events: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "claims": [],
        "corrections": [],
        "relations": [],
        "directive_drafts": [],
        "discarded_event_ids": [event["event_id"] for event in events],
    }


@attrs.define(eq=False)
class ScriptedTextProvider:
    """``answer`` maps the batch's events to the JSON answer; ``failures`` calls fail
    first with a transient error; ``gate`` (if set) blocks each call until opened."""

    answer: Answer = discard_all
    failures: int = 0
    gate: trio.Event | None = None
    prompts: list[tuple[str, str]] = attrs.Factory(list)
    max_tokens: list[int] = attrs.Factory(list)

    @property
    def identity(self) -> TextIdentity:
        return TextIdentity("scripted", "test-model")

    async def complete_json(
        self, system: str, user: str, schema: type[S], *, max_tokens: int
    ) -> S:
        self.prompts.append((system, user))
        self.max_tokens.append(max_tokens)
        await trio.lowlevel.checkpoint()
        if self.gate is not None:
            await self.gate.wait()
        if self.failures > 0:
            self.failures -= 1
            raise TransientProviderError("scripted failure")
        return msgspec.convert(self.answer(events_of(user)), schema)
