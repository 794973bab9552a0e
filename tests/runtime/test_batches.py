"""Extraction batches: leases with tokens (an expired lease is re-taken and the stale
worker's commit refused), receipts (a retried commit returns the original and publishes
nothing twice), backoff and dead letters (visible in status, replayable), validation that
consumes nothing on a bad proposal and drops only a candidate with a broken date, and
batch selection by size, urgency and linger time on the trio clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.fakes import GatedDocuments
from tests.helpers import turn
from tests.runtime.scripted_text import ScriptedTextProvider, discard_all

from cairn import Memory
from cairn.domain.claim import ClaimDraft, ClaimKind, SourceSpan
from cairn.domain.ids import AgentId, EventId
from cairn.errors import StaleLeaseError
from cairn.ingestion.validate import ValidatedBatch
from cairn.runtime.core import runtime_core
from cairn.runtime.writes import CommitBatch
from cairn.store.batches import take_lease
from cairn.testing import FixedDomainClock

AGENT = AgentId("a")
# Nothing is batched on its own: the tests take leases themselves.
HELD = attrs.evolve(TEST_CONFIG, extraction_linger_s=1e9, rules_linger_s=1e9)
# The default linger window (30 s on the trio clock), the rules' batches held to it too.
LINGERING = attrs.evolve(TEST_CONFIG, extraction_linger_s=30.0, rules_linger_s=30.0)


async def _count(memory: Memory, sql: str, *params: Any) -> int:
    return await runtime_core(memory).database.read(
        lambda reader: int(reader.connection.execute(sql, params).fetchone()[0])
    )


async def _commit(memory: Memory, request: CommitBatch) -> Any:
    supervisor = await runtime_core(memory).registry.get(AGENT)
    return await supervisor.commit(request)


async def test_lease_takeover_refuses_the_stale_worker_and_receipts_repeat(
    tmp_path: Path,
) -> None:
    async with open_test_memory(tmp_path, HELD) as memory:
        await memory.ingest(AGENT, [turn("e1", "I love sailing."), turn("e2", "Hi.")])
        supervisor = await runtime_core(memory).registry.get(AGENT)
        now = trio.current_time()

        def lease_at(moment: float, form_new: bool):
            return lambda connection: take_lease(
                connection,
                AGENT,
                now_s=moment,
                lease_s=120.0,
                max_events=20,
                form_new=form_new,
                trigger="test",
                created_at=FixedDomainClock().now(),
            )

        old = await runtime_core(memory).database.write(lease_at(now, True))
        assert old is not None
        assert [e.event_id for e in old.events] == ["e1", "e2"]
        # Held and not expired: nobody else gets it.
        assert (
            await runtime_core(memory).database.write(lease_at(now + 60, False)) is None
        )
        new = await runtime_core(memory).database.write(lease_at(now + 121, False))
        assert new is not None
        assert (new.batch_id, new.attempt) == (old.batch_id, 2)
        assert new.token != old.token

        draft = ClaimDraft(
            ClaimKind.PREFERENCE,
            "Ana loves sailing",
            (SourceSpan(EventId("e1"), 0, 14),),
        )
        batch = ValidatedBatch((draft,), (), (EventId("e2"),), 0)
        identity = supervisor.fence.current()
        with pytest.raises(StaleLeaseError):
            await _commit(
                memory, CommitBatch(lease=old, batch=batch, identity=identity)
            )
        assert await _count(memory, "SELECT count(*) FROM claims") == 0

        receipt = await _commit(
            memory, CommitBatch(lease=new, batch=batch, identity=identity)
        )
        assert receipt.event_ids == ("e1", "e2")
        assert len(receipt.claim_rowids) == 1
        assert receipt.discarded == ("e2",)
        generations = await _count(memory, "SELECT sum(generation) FROM dirty_work")
        # The response was lost: the worker retries the same lease.
        again = await _commit(
            memory, CommitBatch(lease=new, batch=batch, identity=identity)
        )
        assert again == receipt
        assert await _count(memory, "SELECT count(*) FROM claims") == 1
        assert await _count(memory, "SELECT count(*) FROM claim_fts") == 1
        assert (
            await _count(memory, "SELECT sum(generation) FROM dirty_work")
            == generations
        )
        # The old worker comes back late: still refused.
        with pytest.raises(StaleLeaseError):
            await _commit(
                memory, CommitBatch(lease=old, batch=batch, identity=identity)
            )
        assert (
            await _count(memory, "SELECT count(*) FROM events WHERE extracted = 1") == 2
        )
        # Extracted but not embedded (this test committed by hand): not yet settled.
        assert await memory.session_cursor(AGENT, "s1") is None


async def test_failing_batches_back_off_then_dead_letter_then_replay(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    provider = ScriptedTextProvider(failures=10**6)
    async with open_test_memory(tmp_path, text_provider=provider) as memory:
        await memory.ingest(AGENT, [turn("e1", "I love sailing.")])
        start = trio.current_time()
        await memory.wait_idle(AGENT)
        # Five attempts with 2, 4, 8 and 16 s between them, then a dead letter.
        assert len(provider.prompts) == TEST_CONFIG.extraction_max_attempts == 5
        assert trio.current_time() - start >= 2 + 4 + 8 + 16
        status = (await memory.status()).agent(AGENT)
        assert status.extraction_dead_letters == 1
        assert status.events_in_dead_letters == 1
        assert status.events_pending_extraction == 0
        assert status.statistics.extraction_dead_letters == 1
        # The source is kept and still recallable as evidence.
        recall = await memory.recall(AGENT, "sailing")
        assert any("sailing" in item.text for item in recall.items)

        provider.failures = 0
        assert await memory.replay_dead_letters(AGENT) == 1
        await memory.wait_idle(AGENT)
        status = (await memory.status()).agent(AGENT)
        assert status.extraction_dead_letters == 0
        assert (
            await _count(memory, "SELECT count(*) FROM events WHERE extracted = 1") == 1
        )


def _claim(
    event_id: str, quote: str, kind: str = "fact", **extra: Any
) -> dict[str, Any]:
    return {
        "kind": kind,
        "text": f"Ana: {quote}",
        "sources": [{"event_id": event_id, "quote": quote}],
        **extra,
    }


def _answer(claims: list[dict[str, Any]], discarded: list[str]) -> dict[str, Any]:
    return {**discard_all([]), "claims": claims, "discarded_event_ids": discarded}


BAD_PROPOSALS = {
    "uncited event": lambda events: _answer([_claim("e1", "I love sailing")], []),
    "source outside the batch": lambda events: _answer(
        [_claim("e-elsewhere", "I love sailing")], ["e1", "e2"]
    ),
    "unsupported preference": lambda events: _answer(
        [_claim("e2", "You love sailing", kind="preference")], ["e1"]
    ),
    "invented quote": lambda events: _answer([_claim("e1", "I adore sailing")], ["e2"]),
}


@pytest.mark.parametrize("case", sorted(BAD_PROPOSALS))
async def test_a_bad_proposal_consumes_nothing(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock, case: str
) -> None:
    provider = ScriptedTextProvider(answer=BAD_PROPOSALS[case])
    config = attrs.evolve(TEST_CONFIG, extraction_max_attempts=2)
    async with open_test_memory(tmp_path, config, text_provider=provider) as memory:
        await memory.ingest(
            AGENT,
            [
                turn("e1", "I love sailing."),
                turn("e2", "You love sailing.", role="assistant", speaker=None),
            ],
        )
        await memory.wait_idle(AGENT)
        assert len(provider.prompts) == 2
        assert await _count(memory, "SELECT count(*) FROM claims") == 0
        assert (
            await _count(memory, "SELECT count(*) FROM events WHERE extracted = 0") == 2
        )
        assert (
            await _count(
                memory, "SELECT count(*) FROM event_batches WHERE status = 'dead'"
            )
            == 1
        )
        assert await _count(memory, "SELECT count(*) FROM directives") == 0


async def test_a_broken_date_drops_only_its_candidate(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    def answer(events: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            **_answer(
                [
                    _claim("e1", "I love sailing", kind="preference"),
                    _claim("e2", "fly to Oslo", kind="plan", valid_from="2026-13-45"),
                    _claim(
                        "e2", "next Friday", kind="plan", time_expression="next Friday"
                    ),
                ],
                [],
            ),
            "relations": [
                {
                    "subject": "Ana",
                    "relation": "sails_with",
                    "object": "Rex",
                    "sources": [{"event_id": "e1", "quote": "sailing"}],
                }
            ],
            "directive_drafts": [
                {"text": "Call me Ana", "sources": [{"event_id": "e1", "quote": "I"}]}
            ],
        }

    provider = ScriptedTextProvider(answer=answer)
    async with open_test_memory(tmp_path, text_provider=provider) as memory:
        await memory.ingest(
            AGENT,
            [turn("e1", "I love sailing."), turn("e2", "I fly to Oslo next Friday.")],
        )
        await memory.wait_idle(AGENT)
        assert provider.max_tokens == [TEST_CONFIG.extraction_max_tokens]
        texts = await runtime_core(memory).database.read(
            lambda reader: sorted(
                str(row[0])
                for row in reader.connection.execute("SELECT text FROM claims")
            )
        )
        assert texts == [
            "Ana sails_with Rex",
            "Ana: I love sailing",
            "Ana: next Friday",
        ]
        assert (
            await _count(
                memory, "SELECT count(*) FROM claims WHERE valid_from IS NOT NULL"
            )
            == 1
        )
        # Extraction may only draft a directive; it never becomes active by itself.
        assert (
            await _count(
                memory, "SELECT count(*) FROM directives WHERE status = 'draft'"
            )
            == 1
        )
        assert (
            await _count(
                memory, "SELECT count(*) FROM directives WHERE status = 'active'"
            )
            == 0
        )
        statistics = (await memory.status()).agent(AGENT).statistics
        assert statistics.extraction_rejected_candidates == 1
        assert statistics.extraction_batches == 1


async def _triggers(memory: Memory) -> list[str]:
    return await runtime_core(memory).database.read(
        lambda reader: [
            str(row[0])
            for row in reader.connection.execute(
                "SELECT trigger FROM event_batches ORDER BY batch_id"
            )
        ]
    )


async def test_batches_form_by_linger_urgency_and_size(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    async with open_test_memory(tmp_path, LINGERING) as memory:
        await memory.ingest(AGENT, [turn("e1", "I love sailing.")])
        await trio.sleep(20)
        assert await _triggers(memory) == []
        await trio.sleep(15)
        assert await _triggers(memory) == ["linger"]

        await memory.ingest(AGENT, [turn("e2", "I love tea.")])
        await trio.sleep(1)
        assert await _triggers(memory) == ["linger"]
        await memory.ingest(
            AGENT,
            [turn("e3", "Deploy failed: disk full.", role="tool", kind="task_failed")],
        )
        await trio.sleep(1)
        assert await _triggers(memory) == ["linger", "urgent"]
        assert (
            await _count(memory, "SELECT count(*) FROM events WHERE extracted = 1") == 3
        )

        await memory.ingest(AGENT, [turn(f"f{i}", f"Note {i}.") for i in range(25)])
        await trio.sleep(1)
        assert await _triggers(memory) == ["linger", "urgent", "full"]
        await memory.wait_idle(AGENT)
        assert await _triggers(memory) == ["linger", "urgent", "full", "flush"]
        sizes = await runtime_core(memory).database.read(
            lambda reader: [
                int(row[0])
                for row in reader.connection.execute(
                    "SELECT count(*) FROM events GROUP BY batch_id ORDER BY batch_id"
                )
            ]
        )
        assert sizes == [1, 2, 20, 5]


async def test_the_rules_linger_briefly_and_a_text_model_for_the_whole_window(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    """A text-model call is shared by its batch, so a batch lingers up to 30 s for more
    turns; the rules share nothing, and a turn they extract is in memory for the host's
    next prompt (found in a user trial: claims appeared 30 s after a Stop hook)."""
    config = attrs.evolve(TEST_CONFIG, extraction_linger_s=30.0)
    assert config.rules_linger_s < 1
    async with open_test_memory(tmp_path / "rules", config) as memory:
        await memory.ingest(AGENT, [turn("e1", "I love sailing.")])
        await trio.sleep(1)
        assert await _triggers(memory) == ["linger"]
    provider = ScriptedTextProvider()
    async with open_test_memory(
        tmp_path / "model", config, text_provider=provider
    ) as memory:
        await memory.ingest(AGENT, [turn("e1", "I love sailing.")])
        await trio.sleep(20)
        assert await _triggers(memory) == []
        await trio.sleep(15)
        assert await _triggers(memory) == ["linger"]
        assert len(provider.prompts) == 1


async def test_a_slow_text_provider_times_out_and_backs_off(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    provider = ScriptedTextProvider(gate=trio.Event())  # never answers
    config = attrs.evolve(
        TEST_CONFIG, extraction_timeout_s=5.0, extraction_max_attempts=2
    )
    async with open_test_memory(tmp_path, config, text_provider=provider) as memory:
        await memory.ingest(AGENT, [turn("e1", "I love sailing.")])
        start = trio.current_time()
        await memory.wait_idle(AGENT)
        # Two calls of 5 s each, 2 s of backoff between them.
        assert len(provider.prompts) == 2
        assert trio.current_time() - start >= 5 + 2 + 5
        errors = await runtime_core(memory).database.read(
            lambda reader: [
                str(row[0])
                for row in reader.connection.execute(
                    "SELECT last_error FROM event_batches"
                )
            ]
        )
        assert errors == ["TooSlowError"]


async def test_the_session_cursor_waits_for_embedding(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    embedder = GatedDocuments()
    async with open_test_memory(tmp_path, LINGERING, embedder=embedder) as memory:
        await memory.ingest(AGENT, [turn("e1", "I love sailing.")])
        await trio.sleep(LINGERING.extraction_linger_s + 5)
        assert (
            await _count(memory, "SELECT count(*) FROM events WHERE extracted = 1") == 1
        )
        assert await memory.session_cursor(AGENT, "s1") is None
        embedder.gate.set()
        await memory.wait_idle(AGENT)
        assert await memory.session_cursor(AGENT, "s1") == "e1"


async def test_a_batch_keeps_to_its_byte_budget(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    config = attrs.evolve(LINGERING, extraction_batch_bytes=2500)
    async with open_test_memory(tmp_path, config) as memory:
        words = "word " * 199 + "end."  # 999 bytes
        await memory.ingest(AGENT, [turn(f"e{i}", words) for i in range(3)])
        await trio.sleep(1)
        # 3 KB pending is over the budget: a batch starts at once, without lingering.
        assert await _triggers(memory) == ["full"]
        await memory.wait_idle(AGENT)
        sizes = await runtime_core(memory).database.read(
            lambda reader: [
                int(row[0])
                for row in reader.connection.execute(
                    "SELECT count(*) FROM events GROUP BY batch_id ORDER BY batch_id"
                )
            ]
        )
        assert sizes == [2, 1]


def _correcting(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Each user turn as a 'lives_in' state; 'Actually' turns as corrections."""
    claims, corrections = [], []
    for event in events:
        city = event["text"].rstrip(".").split()[-1]
        claim = {
            "kind": "state",
            "text": f"Ana lives in {city}",
            "subject": "Ana",
            "predicate": "lives_in",
            "sources": [{"event_id": event["event_id"], "quote": city}],
        }
        (corrections if event["text"].startswith("Actually") else claims).append(claim)
    return {**_answer(claims, []), "corrections": corrections}


async def test_corrections_supersede_and_tombstones_suppress_in_the_batch_commit(
    tmp_path: Path,
) -> None:
    from cairn.domain.scope import Scope
    from cairn.store.tombstones import content_hash

    provider = ScriptedTextProvider(answer=_correcting)
    async with open_test_memory(tmp_path, text_provider=provider) as memory:
        await memory.ingest(AGENT, [turn("e1", "I live in Paris.")])
        await memory.wait_idle(AGENT)
        await memory.ingest(AGENT, [turn("e2", "Actually I live in Berlin.")])
        await memory.wait_idle(AGENT)
        lifecycles = await runtime_core(memory).database.read(
            lambda reader: dict(
                reader.connection.execute(
                    "SELECT text, lifecycle FROM claims"
                ).fetchall()
            )
        )
        assert lifecycles == {
            "Ana lives in Paris": "superseded",
            "Ana lives in Berlin": "active",
        }
        assert await _count(memory, "SELECT count(*) FROM derivations") == 1
        # A forgotten claim's hash suppresses its exact replay from new evidence.
        digest = content_hash(AGENT, Scope.agent(), "Ana lives in Rome")
        await runtime_core(memory).database.write(
            lambda connection: connection.execute(
                "INSERT INTO tombstones VALUES (?, 'x', ?, '2026-01-01')",
                (AGENT, digest),
            )
        )
        await memory.ingest(AGENT, [turn("e3", "I live in Rome.")])
        await memory.wait_idle(AGENT)
        assert (
            await _count(memory, "SELECT count(*) FROM claims WHERE text LIKE '%Rome%'")
            == 0
        )
        receipt = await runtime_core(memory).database.read(
            lambda reader: reader.connection.execute(
                "SELECT receipt FROM event_batches ORDER BY batch_id DESC LIMIT 1"
            ).fetchone()[0]
        )
        assert '"suppressed":1' in receipt


async def test_an_edit_during_extraction_voids_the_batch(tmp_path: Path) -> None:
    async with open_test_memory(tmp_path, HELD) as memory:
        await memory.ingest(
            AGENT, [turn("e1", "I live in Paris."), turn("e2", "I love green tea.")]
        )
        supervisor = await runtime_core(memory).registry.get(AGENT)
        now = trio.current_time()
        lease = await runtime_core(memory).database.write(
            lambda connection: take_lease(
                connection,
                AGENT,
                now_s=now,
                lease_s=120.0,
                max_events=20,
                form_new=True,
                trigger="test",
                created_at=FixedDomainClock().now(),
            )
        )
        assert lease is not None
        draft = ClaimDraft(
            ClaimKind.STATE, "Ana lives in Paris", (SourceSpan(EventId("e1"), 0, 15),)
        )
        # While the batch is being extracted, the user edits the first message.
        await memory.ingest_event(
            AGENT, turn("e1b", "I live in Berlin.", replaces="e1")
        )
        with pytest.raises(StaleLeaseError, match="changed"):
            await _commit(
                memory,
                CommitBatch(
                    lease=lease,
                    batch=ValidatedBatch((draft,), (), (EventId("e2"),), 0),
                    identity=supervisor.fence.current(),
                ),
            )
        assert await _count(memory, "SELECT count(*) FROM claims") == 0
        await memory.wait_idle(AGENT)
        texts = await runtime_core(memory).database.read(
            lambda reader: sorted(
                str(row[0])
                for row in reader.connection.execute("SELECT text FROM claims")
            )
        )
        assert any("Berlin" in text for text in texts)
        assert any("green tea" in text for text in texts)
        assert not any("Paris" in text for text in texts)


async def test_a_session_declared_subagent_late_is_not_extracted(
    tmp_path: Path,
) -> None:
    async with open_test_memory(tmp_path, HELD) as memory:
        await memory.ingest(AGENT, [turn("x1", "I love black coffee.", session="sub")])
        await memory.declare_session(AGENT, "sub", subagent=True)
        await memory.wait_idle(AGENT)
        assert await _count(memory, "SELECT count(*) FROM claims") == 0
        assert await _count(memory, "SELECT extracted FROM events") == 2
