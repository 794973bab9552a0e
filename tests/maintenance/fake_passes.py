"""Maintenance passes for tests: they record what they saw and fail or block on cue.

Each follows the real contract (cairn.maintenance.passes): ``plan`` reads on the reader
snapshot, ``apply`` writes in the coordinator's transaction (here: an audit row per seed,
so a test can see exactly what committed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import apsw
import attrs
import trio

from cairn.maintenance.passes import PassResult, ProviderQuestion, SeedOutcome, Work
from cairn.providers.http.text import TextIdentity


def _texts(connection: apsw.Connection, work: Work) -> dict[int, str]:
    return {
        seed.claim_rowid: str(row[0])
        for seed in work.seeds
        if (
            row := connection.execute(
                "SELECT text FROM claims WHERE rowid = ?", (seed.claim_rowid,)
            ).fetchone()
        )
        is not None
    }


@attrs.define(eq=False)
class RecordingPass:
    """Applies every seed (an audit row ``maintained``); raises on a claim whose text
    holds ``poison`` while planning, or answers ``retry`` for one holding ``retry``."""

    name: ClassVar[str] = "recording"
    poison: str = "poison"
    retry: str = "\x00never"
    applied: list[int] = attrs.field(factory=list)
    seen: list[tuple[int, ...]] = attrs.field(factory=list)
    neighbours: list[Mapping[int, tuple[int, ...]]] = attrs.field(factory=list)
    _progress: trio.Event = attrs.field(factory=trio.Event)

    async def wait_applied(self, count: int) -> None:
        """Until ``count`` seeds were applied (no polling: it sleeps on an event, so a
        mock clock jumps straight to the next timer)."""
        while len(self.applied) < count:
            await self._progress.wait()

    def _advanced(self) -> None:
        self._progress.set()
        self._progress = trio.Event()

    def plan(self, connection: apsw.Connection, work: Work) -> dict[int, str] | None:
        self.seen.append(tuple(seed.claim_rowid for seed in work.seeds))
        self.neighbours.append(dict(work.neighbours))
        texts = _texts(connection, work)
        if any(self.poison in text for text in texts.values()):
            raise ValueError("a claim this pass cannot plan for")
        return texts

    def question(self, plan: dict[int, str]) -> ProviderQuestion | None:
        return None

    def answered(
        self, plan: dict[int, str], answer: Mapping[str, Any] | None
    ) -> dict[int, str] | None:
        return plan

    def apply(
        self, connection: apsw.Connection, work: Work, plan: dict[int, str]
    ) -> PassResult:
        outcomes: dict[int, SeedOutcome] = {}
        for rowid, text in plan.items():
            if self.retry in text:
                outcomes[rowid] = SeedOutcome.RETRY
                continue
            connection.execute(
                "INSERT INTO audit (agent_id, at, action, detail)"
                " VALUES (?, ?, 'maintained', ?)",
                (work.agent_id, work.now.isoformat(), str(rowid)),
            )
            self.applied.append(rowid)
        # apply runs in the writer's worker thread.
        trio.from_thread.run_sync(self._advanced)
        return PassResult(outcomes)


@attrs.define(eq=False)
class AskingPass:
    """Asks the text provider one question per batch, then writes an audit row per seed
    with the answer (or ``none``)."""

    name: ClassVar[str] = "asking"
    planned: trio.Event = attrs.field(factory=trio.Event)
    answers: list[Mapping[str, Any] | None] = attrs.field(factory=list)

    def plan(self, connection: apsw.Connection, work: Work) -> list[int] | None:
        return [seed.claim_rowid for seed in work.seeds]

    def question(self, plan: list[int]) -> ProviderQuestion | None:
        return ProviderQuestion(
            "You compare memories.",
            f"Are {len(plan)} claims duplicates?",
            {
                "type": "object",
                "properties": {"same": {"type": "boolean"}},
                "required": ["same"],
            },
        )

    def answered(
        self, plan: list[int], answer: Mapping[str, Any] | None
    ) -> list[int] | None:
        self.answers.append(answer)
        return plan

    def apply(
        self, connection: apsw.Connection, work: Work, plan: list[int]
    ) -> PassResult:
        for rowid in plan:
            connection.execute(
                "INSERT INTO audit (agent_id, at, action, detail)"
                " VALUES (?, ?, 'maintained', ?)",
                (work.agent_id, work.now.isoformat(), str(rowid)),
            )
        return PassResult()


@attrs.define(eq=False)
class BlockingTextProvider:
    """A text provider whose call waits until released (or cancelled)."""

    called: trio.Event = attrs.field(factory=trio.Event)
    release: trio.Event = attrs.field(factory=trio.Event)
    cancelled: int = 0
    answer: dict[str, Any] = attrs.field(factory=lambda: {"same": True})

    @property
    def identity(self) -> TextIdentity:
        return TextIdentity("test", "blocking")

    async def complete_json(
        self, system: str, user: str, schema: type[Any], *, max_tokens: int
    ) -> Any:
        self.called.set()
        try:
            await self.release.wait()
        except trio.Cancelled:
            self.cancelled += 1
            raise
        return schema(**self.answer)
