"""A Hypothesis stateful model of the public API, driving the real runtime.

The machine ingests user turns that state facts (each with a unique marker word, in
English and Chinese, across three agents), changes where the user lives, remembers (by the
user and by a model), forgets what a recall showed (the claim or the turn, by its item
ID), edits and deletes turns, replays turns, archives and unarchives, clears, retires and
reuses agent IDs, restarts the runtime on the same data directory, imports an older export
back and moves the memory to a new data directory. After every step that changes
something it checks the point it touched, and ``check_everything`` (a rule, and the end of
every program) checks the whole model after ``wait_idle``
(tests/stress/reference_model.py is the model):

- I1: every acknowledged, not forgotten, not cleared marker is recallable by its marker,
  at once and after any restart, import or move, and is in the export;
- I2: a forgotten, cleared, replaced or retired marker never comes back: not in any
  recall, not in the export (a forgotten claim's turn, an edited or deleted message only
  as its record), not after a replay, an import or a restart;
- I3: a marker told to one agent never appears in another agent's results or export;
- for the changed fact, the current value ranks above the values it replaced, which are
  marked history; a forgotten value is as if never said.

The runtime is trio and Hypothesis rules are synchronous: one trio loop runs in a thread
for the life of each program and every rule calls into it (``trio.from_thread.run``), each
call under a trio deadline. Random choices depend only on the model, never on what the
runtime answered, so a program replays exactly. A failure shrinks to a short program that
Hypothesis prints (with ``@reproduce_failure`` for an exact replay). CI runs 50 programs;
``CAIRN_STATEFUL_EXAMPLES=N CAIRN_STATEFUL_STEPS=M`` make a longer run.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import trio
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    precondition,
    rule,
)
from tests.conftest import TEST_CONFIG
from tests.helpers import BASE_TIME, turn
from tests.stress.reference_model import (
    Fact,
    FactKind,
    Gone,
    ReferenceModel,
    markers_in,
)

from cairn import (
    IntakeOutcome,
    Memory,
    Recall,
    RecallStatus,
    RememberOutcome,
    open_memory,
)
from cairn.runtime.transfer import export_memory, import_memory
from cairn.testing import FixedDomainClock, HashingEmbedder

T = TypeVar("T")

AGENTS = ["agent-a", "agent-b", "agent-c"]
LANGUAGES = st.sampled_from(["en", "zh"])
# Far above any call's real duration on a loaded machine: a hang fails, never stalls.
CALL_BOUND_S = 60.0
# After every turn's time: recall asks about now, and now is after everything said.
NOW = dt.datetime(2026, 6, 1, 9, tzinfo=dt.UTC)
RESIDENCE_QUESTION = "Where does Ana live now?"

TURN_TEXT = {"en": "I enjoy reading {} novels.", "zh": "我喜欢吃{}。"}
FIRST_HOME = {"en": "I live in {}.", "zh": "我住在{}。"}
NEW_HOME = {"en": "I moved to {}.", "zh": "我搬到了{}。"}
REMEMBERED_TEXT = {"en": "Ana's boat is called {}", "zh": "Ana的船叫{}"}


class TrioThread:
    """One trio loop in a thread, with a memory opened by a task that holds it: a memory
    is an async context manager whose nurseries must be entered and left by one task."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._stop: trio.Event | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error

    def _main(self) -> None:
        try:
            trio.run(self._loop)
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            self._error = error
            self._ready.set()

    async def _loop(self) -> None:
        self._stop = trio.Event()
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    def run(self, function: Callable[[], Awaitable[T]]) -> T:
        """Run ``function()`` in the loop, under the call bound, and return its result."""

        async def bounded() -> T:
            with trio.fail_after(CALL_BOUND_S):
                return await function()

        return trio.from_thread.run(bounded, trio_token=self._token)

    def open(
        self, path: Path, clock: FixedDomainClock
    ) -> tuple[Memory, Callable[[], None]]:
        """Open the memory in ``path``; returns it and the function that closes it."""
        close = trio.Event()
        closed = trio.Event()

        async def hold(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
            try:
                async with open_memory(
                    path, TEST_CONFIG, clock=clock, embedder=HashingEmbedder()
                ) as memory:
                    task_status.started(memory)
                    await close.wait()
            finally:
                closed.set()

        async def start() -> Memory:
            assert self._nursery is not None
            memory: Memory = await self._nursery.start(hold)
            return memory

        async def finish() -> None:
            close.set()
            await closed.wait()

        return self.run(start), lambda: self.run(finish)

    def stop(self) -> None:
        if self._stop is not None and self._token is not None:
            stop = self._stop
            trio.from_thread.run_sync(stop.set, trio_token=self._token)
        self._thread.join(CALL_BOUND_S)
        assert not self._thread.is_alive(), "the trio loop did not stop"


class MemoryMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="cairn-stateful-"))
        self.data_dir = self.directory / "data"
        self.clock = FixedDomainClock(NOW)
        self.model = ReferenceModel.for_agents(AGENTS)
        self.minutes = 0
        # The last export (header, then each line with its agent and that agent's
        # generation then): import_an_older_export brings it back later.
        self.snapshot: tuple[str, *tuple[tuple[str, str, int], ...]] | None = None
        self.trio = TrioThread()
        self.close_memory: Callable[[], None] | None = None
        self.memory, self.close_memory = self.trio.open(self.data_dir, self.clock)

    # -- calling the runtime ----------------------------------------------------------
    def call(self, method: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        return self.trio.run(lambda: method(*args, **kwargs))

    def next_time(self) -> dt.datetime:
        # Strictly increasing: the order the user said things is the evidence order.
        self.minutes += 1
        return BASE_TIME + dt.timedelta(minutes=self.minutes)

    def recall(self, agent_id: str, query: str, memory: Memory | None = None) -> Recall:
        """Recall (from ``memory``, by default the one under test), and check what every
        answer must satisfy: complete, and no marker in it that this agent may not show
        (another agent's: I3; a gone one: I2)."""
        answer = self.call((memory or self.memory).recall, agent_id, query)
        assert answer.status is RecallStatus.OK, answer
        # An archived fact's turn is still evidence; an archived remembered claim is not.
        allowed = self.model.agents[agent_id].recallable()
        archived_claims = {
            self.model.agents[agent_id].live[marker].claim_id
            for marker in self.model.agents[agent_id].archived
        }
        for item in answer.items:
            for marker in markers_in(item.text):
                owner = self.model.owner.get(marker)
                assert owner == agent_id, (
                    f"I3: {agent_id}'s recall of {query!r} shows {marker}, told to {owner}"
                )
                assert marker in allowed, (
                    f"I2: {agent_id}'s recall of {query!r} shows {marker}"
                    f" ({self._why_gone(agent_id, marker)}): {item}"
                )
            assert item.id not in archived_claims, (
                f"an archived claim is recalled: {item}"
            )
        return answer

    def _why_gone(self, agent_id: str, marker: str) -> str:
        agent = self.model.agents[agent_id]
        if marker in agent.gone:
            return agent.gone[marker][1].value
        if marker in self.model.never_again:
            return "gone in an earlier generation"
        return "archived"

    def items_with(
        self, agent_id: str, marker: str, memory: Memory | None = None
    ) -> list[Any]:
        answer = self.recall(agent_id, marker, memory)
        return [item for item in answer.items if marker in markers_in(item.text)]

    def assert_recallable(self, fact: Fact, memory: Memory | None = None) -> list[Any]:
        items = self.items_with(fact.agent_id, fact.marker, memory)
        assert items, f"I1: {fact.marker} ({fact.kind}, {fact.text!r}) is not recalled"
        return items

    def assert_gone(
        self, agent_id: str, marker: str, memory: Memory | None = None
    ) -> None:
        # recall() itself refuses any gone marker in the answer.
        self.items_with(agent_id, marker, memory)

    # -- telling facts ----------------------------------------------------------------
    @rule(agent_id=st.sampled_from(AGENTS), language=LANGUAGES)
    def ingest_fact(self, agent_id: str, language: str) -> None:
        self._tell(agent_id, language, FactKind.TURN, TURN_TEXT[language])

    @rule(
        agent_id=st.sampled_from(AGENTS),
        languages=st.lists(LANGUAGES, min_size=2, max_size=6),
    )
    def ingest_facts(self, agent_id: str, languages: list[str]) -> None:
        """Several turns in one call (one transaction): each one acknowledged is
        recallable at once."""
        facts = []
        for language in languages:
            marker = self.model.next_marker(agent_id, language)
            text = TURN_TEXT[language].format(marker)
            generation = self.model.agents[agent_id].generation
            fact = Fact(marker, agent_id, generation, FactKind.TURN, text)
            fact.event_id, fact.at = f"t{self.model.counter}", self.next_time()
            facts.append(fact)
        turns = [turn(f.event_id or "", f.text, at=f.at) for f in facts]
        report = self.call(self.memory.ingest, agent_id, turns)
        outcomes = [result.outcome for result in report.results]
        assert outcomes == [IntakeOutcome.INGESTED] * len(facts), report
        for fact in facts:
            self.model.add(fact)
        for fact in facts:
            self.assert_recallable(fact)

    @rule(agent_id=st.sampled_from(AGENTS), language=LANGUAGES)
    def change_residence(self, agent_id: str, language: str) -> None:
        agent = self.model.agents[agent_id]
        template = (NEW_HOME if agent.residences else FIRST_HOME)[language]
        self._tell(agent_id, language, FactKind.RESIDENCE, template)

    def _tell(
        self, agent_id: str, language: str, kind: FactKind, template: str
    ) -> None:
        marker = self.model.next_marker(agent_id, language)
        event_id = f"t{self.model.counter}"
        at = self.next_time()
        text = template.format(marker)
        result = self.call(
            self.memory.ingest_turn, agent_id, turn(event_id, text, at=at)
        )
        assert result.outcome is IntakeOutcome.INGESTED, result
        fact = Fact(
            marker, agent_id, self.model.agents[agent_id].generation, kind, text
        )
        fact.event_id, fact.at = event_id, at
        self.model.add(fact)
        # Acknowledged means recallable at once (the turn), before extraction runs.
        self.assert_recallable(fact)

    @rule(
        agent_id=st.sampled_from(AGENTS),
        language=LANGUAGES,
        by=st.sampled_from(["user", "model"]),
    )
    def remember(self, agent_id: str, language: str, by: str) -> None:
        marker = self.model.next_marker(agent_id, language)
        text = REMEMBERED_TEXT[language].format(marker)
        result = self.call(self.memory.remember, agent_id, text, by=by)
        assert result.outcome is RememberOutcome.STORED, result
        fact = Fact(
            marker,
            agent_id,
            self.model.agents[agent_id].generation,
            FactKind.REMEMBERED,
            text,
            claim_id=result.claim_id,
            by=by,
        )
        self.model.add(fact)
        items = self.assert_recallable(fact)
        assert result.claim_id in {item.id for item in items}

    # -- forgetting -------------------------------------------------------------------
    def _forgettable(self) -> list[Fact]:
        return [
            fact
            for fact in self.model.facts()
            if fact.marker not in self.model.agents[fact.agent_id].archived
        ]

    @precondition(lambda self: self._forgettable())
    @rule(data=st.data(), what=st.sampled_from(["claim", "evidence"]))
    def forget_what_recall_showed(self, data: st.DataObject, what: str) -> None:
        fact = data.draw(st.sampled_from(self._forgettable()), label="fact")
        if fact.kind is FactKind.REMEMBERED:
            what = "claim"  # there is no turn behind it
        elif what == "claim":
            # The claim is learned in the background: let it be.
            self.call(self.memory.wait_idle, fact.agent_id)
        items = self.assert_recallable(fact)
        shown = [
            item for item in items if (item.kind == "evidence") == (what == "evidence")
        ]
        assert shown, f"recall of {fact.marker} shows no {what}: {items}"
        item = shown[0]
        result = self.call(self.memory.forget, fact.agent_id, item.id)
        assert result.id == item.id
        self.model.forget(
            fact.marker,
            Gone.FORGOTTEN_TURN if what == "evidence" else Gone.FORGOTTEN_CLAIM,
        )
        self.assert_gone(fact.agent_id, fact.marker)

    @precondition(
        lambda self: self.model.gone_facts(
            {FactKind.TURN, FactKind.RESIDENCE},
            {Gone.FORGOTTEN_CLAIM, Gone.FORGOTTEN_TURN, Gone.REPLACED, Gone.CLEARED},
        )
    )
    @rule(data=st.data())
    def replay_a_gone_turn(self, data: st.DataObject) -> None:
        fact = data.draw(
            st.sampled_from(
                self.model.gone_facts(
                    {FactKind.TURN, FactKind.RESIDENCE},
                    {
                        Gone.FORGOTTEN_CLAIM,
                        Gone.FORGOTTEN_TURN,
                        Gone.REPLACED,
                        Gone.CLEARED,
                    },
                )
            ),
            label="fact",
        )
        assert fact.event_id is not None
        replayed = turn(fact.event_id, fact.text, at=fact.at)
        result = self.call(self.memory.ingest_turn, fact.agent_id, replayed)
        assert result.outcome in {IntakeOutcome.SUPPRESSED, IntakeOutcome.DUPLICATE}, (
            result
        )
        self.call(self.memory.wait_idle, fact.agent_id)
        self.assert_gone(fact.agent_id, fact.marker)

    @precondition(
        lambda self: self.model.gone_facts(
            {FactKind.REMEMBERED}, {Gone.FORGOTTEN_CLAIM, Gone.CLEARED}
        )
    )
    @rule(data=st.data(), by=st.sampled_from(["user", "model"]))
    def remember_a_gone_claim_again(self, data: st.DataObject, by: str) -> None:
        fact = data.draw(
            st.sampled_from(
                self.model.gone_facts(
                    {FactKind.REMEMBERED}, {Gone.FORGOTTEN_CLAIM, Gone.CLEARED}
                )
            ),
            label="fact",
        )
        result = self.call(self.memory.remember, fact.agent_id, fact.text, by=by)
        if by == "model":
            # A model never brings back what the user forgot.
            assert result.outcome is RememberOutcome.SUPPRESSED, result
            self.assert_gone(fact.agent_id, fact.marker)
            return
        assert result.outcome is RememberOutcome.STORED, result
        assert result.released_tombstones >= 1, result
        fact.claim_id, fact.by = result.claim_id, by
        self.model.restore(fact)
        self.assert_recallable(fact)

    @precondition(lambda self: self._forgettable_turns())
    @rule(data=st.data(), language=LANGUAGES, delete=st.booleans())
    def edit_a_turn(self, data: st.DataObject, language: str, delete: bool) -> None:
        """The host edits (or deletes) an earlier message: the old words leave recall."""
        fact = data.draw(st.sampled_from(self._forgettable_turns()), label="fact")
        assert fact.event_id is not None
        edited: Fact | None = None
        if delete:
            self.model.counter += 1
            edit = turn(
                f"t{self.model.counter}",
                "",
                at=self.next_time(),
                kind="message_deleted",
                replaces=fact.event_id,
            )
            result = self.call(self.memory.ingest_event, fact.agent_id, edit)
            assert result.outcome is IntakeOutcome.INGESTED, result
        else:
            marker = self.model.next_marker(fact.agent_id, language)
            text = TURN_TEXT[language].format(marker)
            event_id, at = f"t{self.model.counter}", self.next_time()
            edit = turn(event_id, text, at=at, replaces=fact.event_id)
            result = self.call(self.memory.ingest_event, fact.agent_id, edit)
            assert result.outcome is IntakeOutcome.INGESTED, result
            edited = Fact(marker, fact.agent_id, fact.generation, FactKind.TURN, text)
            edited.event_id, edited.at = event_id, at
            self.model.add(edited)
        # At once: the edit withdraws the old message, and what was learned from it, in
        # the transaction that stores the edit.
        self.model.forget(fact.marker, Gone.REPLACED)
        self.assert_gone(fact.agent_id, fact.marker)
        if edited is not None:
            self.assert_recallable(edited)

    def _forgettable_turns(self) -> list[Fact]:
        return [fact for fact in self._forgettable() if fact.kind is FactKind.TURN]

    @precondition(lambda self: self.model.facts({FactKind.TURN, FactKind.RESIDENCE}))
    @rule(data=st.data())
    def replay_a_live_turn(self, data: st.DataObject) -> None:
        """A host retrying a turn it already sent changes nothing."""
        facts = self.model.facts({FactKind.TURN, FactKind.RESIDENCE})
        fact = data.draw(st.sampled_from(facts), label="fact")
        assert fact.event_id is not None
        replayed = turn(fact.event_id, fact.text, at=fact.at)
        result = self.call(self.memory.ingest_turn, fact.agent_id, replayed)
        assert result.outcome is IntakeOutcome.DUPLICATE, result
        self.assert_recallable(fact)

    # -- archive ----------------------------------------------------------------------
    def _archivable(self) -> list[Fact]:
        return [
            fact
            for fact in self.model.facts({FactKind.TURN, FactKind.REMEMBERED})
            if fact.marker not in self.model.agents[fact.agent_id].archived
        ]

    @precondition(lambda self: self._archivable())
    @rule(data=st.data())
    def archive(self, data: st.DataObject) -> None:
        fact = data.draw(st.sampled_from(self._archivable()), label="fact")
        if fact.claim_id is None:
            self.call(self.memory.wait_idle, fact.agent_id)
            claims = [
                item for item in self.assert_recallable(fact) if item.kind != "evidence"
            ]
            assert claims, f"no claim was learned from {fact.text!r}"
            fact.claim_id = claims[0].id
        result = self.call(self.memory.archive, fact.agent_id, fact.claim_id)
        assert result.lifecycle == "archived", result
        self.model.agents[fact.agent_id].archived.add(fact.marker)
        if fact.kind is FactKind.REMEMBERED:
            self.assert_gone(fact.agent_id, fact.marker)
        else:
            self.assert_recallable(fact)

    @precondition(lambda self: self.model.archived_facts())
    @rule(data=st.data())
    def unarchive(self, data: st.DataObject) -> None:
        fact = data.draw(st.sampled_from(self.model.archived_facts()), label="fact")
        result = self.call(self.memory.unarchive, fact.agent_id, fact.claim_id)
        assert result.lifecycle == "active", result
        self.model.agents[fact.agent_id].archived.discard(fact.marker)
        items = self.assert_recallable(fact)
        assert fact.claim_id in {item.id for item in items}

    # -- whole agents and the runtime -------------------------------------------------
    @precondition(lambda self: any(a.used for a in self.model.agents.values()))
    @rule(data=st.data())
    def clear(self, data: st.DataObject) -> None:
        agent_id = data.draw(
            st.sampled_from([a for a in AGENTS if self.model.agents[a].used]),
            label="agent_id",
        )
        self.call(self.memory.clear, agent_id)
        self.call(self.memory.wait_cleared, agent_id)
        markers = set(self.model.agents[agent_id].live)
        self.model.clear(agent_id)
        for marker in sorted(markers):
            self.assert_gone(agent_id, marker)

    @precondition(lambda self: any(a.used for a in self.model.agents.values()))
    @rule(data=st.data())
    def retire(self, data: st.DataObject) -> None:
        agent_id = data.draw(
            st.sampled_from([a for a in AGENTS if self.model.agents[a].used]),
            label="agent_id",
        )
        markers = set(self.model.agents[agent_id].live)
        self.call(self.memory.retire, agent_id)
        self.model.retire(agent_id)
        # The next call under this ID starts a new, empty agent.
        for marker in sorted(markers):
            self.assert_gone(agent_id, marker)

    @rule()
    def restart(self) -> None:
        assert self.close_memory is not None
        self.close_memory()
        self.close_memory = None
        self.memory, self.close_memory = self.trio.open(self.data_dir, self.clock)

    @precondition(lambda self: self.snapshot is not None)
    @rule()
    def import_an_older_export(self) -> None:
        """Import an export taken earlier (an operator's backup) into the live memory:
        nothing forgotten or cleared since comes back, nothing live is lost."""
        assert self.snapshot is not None
        header, *lines = self.snapshot
        current = [
            line
            for line, agent_id, generation in lines
            if self.model.agents[agent_id].generation == generation
        ]
        path = self.directory / "backup.jsonl"
        path.write_text("".join([header, *current]), encoding="utf-8")
        summary = self.call(import_memory, self.memory, path)
        # A claim that changed since (superseded, or forgotten and re-added by the user
        # under a new ID) is refused beside the stored one, and so is lineage naming a
        # forgotten claim: the checks below see that the memory itself is intact. A turn
        # is never refused.
        refused = {rejection.type for rejection in summary.rejected}
        assert refused <= {"claim", "derivation"}, summary
        self.check_everything()

    @rule()
    def check_everything(self) -> None:
        self.call(self.memory.wait_idle)
        self._check_recall(self.memory)
        for agent_id in AGENTS:
            self._check_standing(agent_id)
        self._check_export()

    def _check_recall(self, memory: Memory) -> None:
        for agent_id in AGENTS:
            agent = self.model.agents[agent_id]
            for marker in sorted(agent.recallable()):
                self.assert_recallable(agent.live[marker], memory)
            for marker in sorted(agent.gone):
                self.assert_gone(agent_id, marker, memory)

    @precondition(lambda self: any(a.used for a in self.model.agents.values()))
    @rule()
    def import_into_a_new_directory(self) -> None:
        """Move the memory (export, import into an empty data directory): the copy
        recalls what the original does and nothing that is gone."""
        self.check_everything()  # and takes the export
        assert self.snapshot is not None
        header, *lines = self.snapshot
        path = self.directory / "moved.jsonl"
        path.write_text("".join([header, *(line for line, _, _ in lines)]), "utf-8")
        copy_dir = self.directory / f"copy-{self.model.counter}"
        copy, close_copy = self.trio.open(copy_dir, self.clock)
        try:
            summary = self.call(import_memory, copy, path)
            assert not summary.rejected, summary
            self._check_recall(copy)
        finally:
            close_copy()
            shutil.rmtree(copy_dir, ignore_errors=True)

    def _check_standing(self, agent_id: str) -> None:
        agent = self.model.agents[agent_id]
        current = agent.current_residence()
        past = set(agent.past_residences())
        if current is None:
            return
        items = self.recall(agent_id, RESIDENCE_QUESTION).items
        ranks = [markers_in(item.text) for item in items]
        now = [i for i, found in enumerate(ranks) if current in found]
        assert now, f"the current residence {current} is not recalled: {items}"
        for i, found in enumerate(ranks):
            if found & past:
                assert i > now[0], (
                    f"an old residence ranks above the current {current}: {items}"
                )
                assert items[i].standing == "history", items[i]
                assert items[i].valid_until is not None, items[i]
        for item in self.items_with(agent_id, current):
            assert item.standing == "current", item
        for marker in sorted(past):
            for item in self.items_with(agent_id, marker):
                assert item.standing == "history", item

    def _check_export(self) -> None:
        sink = io.StringIO()
        self.call(export_memory, self.memory, sink)
        exported: dict[str, set[str]] = {agent_id: set() for agent_id in AGENTS}
        header, *lines = sink.getvalue().splitlines(keepends=True)
        snapshot = []
        for line in lines:
            record = json.loads(line)
            agent_id = record["agent"]
            snapshot.append((line, agent_id, self.model.agents[agent_id].generation))
            found = markers_in(json.dumps(record, ensure_ascii=False))
            for marker in found:
                owner = self.model.owner.get(marker)
                assert owner == agent_id, f"I3: {agent_id}'s export holds {marker}"
                if marker in self.model.agents[agent_id].live:
                    continue
                # A forgotten claim's turn stays the record, and says it is hidden; an
                # edited or deleted message stays the record of what was said.
                why = f"I2: {agent_id}'s export holds {marker}: {record}"
                reason = self.model.records.get(marker)
                assert reason is not None, why
                assert record["type"] == "event", why
                if reason is Gone.FORGOTTEN_CLAIM:
                    assert record.get("hidden") is True, why
            exported[agent_id] |= found
        for agent_id in AGENTS:
            missing = set(self.model.agents[agent_id].live) - exported[agent_id]
            assert not missing, f"I1: {agent_id}'s export lacks {sorted(missing)}"
        self.snapshot = (header, *snapshot)

    def teardown(self) -> None:
        try:
            # The last check, unless a step already failed (that failure is the report).
            if self.close_memory is not None and sys.exc_info()[1] is None:
                self.check_everything()
                self.close_memory()
        finally:
            self.trio.stop()
            shutil.rmtree(self.directory, ignore_errors=True)


# Exactly 50 programs whatever HYPOTHESIS_PROFILE says (tests/conftest.py): 30 steps
# each take 40-80 s of CPU on a 2-core machine. Each step is real I/O, hence no deadline and no
# "too slow" health check; a failure prints the program and its @reproduce_failure blob.
MemoryMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("CAIRN_STATEFUL_EXAMPLES", "35")),
    stateful_step_count=int(os.environ.get("CAIRN_STATEFUL_STEPS", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
TestMemoryModel = MemoryMachine.TestCase
