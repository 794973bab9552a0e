"""The rest of the embedded API over a real ``cairn serve --socket``: explicit remember,
forget, archive, retire, the directives facade, sessions, dead letters and runtime events.
Answers decode to the same public types as embedded, and refusals arrive as the same
typed errors (over-broad topics, protected rows, invalid transitions, writes while
drained)."""

from __future__ import annotations

import pytest
import trio
from tests.helpers import turn
from tests.ipc.harness import SERVER_TIMEOUT_S, SocketServer

from cairn import (
    AgentState,
    ClearReport,
    IntakeOutcome,
    KeptCounts,
    RecallStatus,
    Turn,
)
from cairn.domain.directive import Directive, DirectiveKind, DirectiveStatus
from cairn.domain.scope import RecallContext, Scope
from cairn.errors import (
    DrainingError,
    InvalidInputError,
    InvalidScopeError,
    InvalidTransitionError,
    ProtectedClaimError,
    UnknownClaimError,
    UnknownDirectiveError,
    UnknownMemoryError,
)
from cairn.ipc import BlockingClient, Client, open_unix_client
from cairn.ipc.messages import RememberRequest, RememberResult, ScopeMessage
from cairn.ipc.requests import Call
from cairn.store.forget import (
    ForgetResult,
    ForgottenKind,
    LifecycleResult,
    RememberOutcome,
)
from cairn.store.forget import RememberResult as StoredClaim

pytestmark = pytest.mark.subprocess


async def _claim_texts(
    client: Client, agent: str, query: str, **kwargs: object
) -> list[str]:
    recall = await client.recall(agent, query, wait_s=30.0, k=20, **kwargs)  # type: ignore[arg-type]
    assert recall.status is RecallStatus.OK
    return [item.text for item in recall.items if item.kind != "evidence"]


async def test_remember_forget_archive_round_trip(shared_server: SocketServer) -> None:
    agent = "lifecycle"
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            stored = await client.remember(
                agent, "The spare key is under the flowerpot.", by="user"
            )
            assert isinstance(stored, StoredClaim)
            assert stored.outcome is RememberOutcome.STORED
            assert stored.claim_id is not None
            again = await client.remember(
                agent, "The spare key is under the flowerpot.", by="user"
            )
            assert again.outcome is RememberOutcome.EXISTING
            await client.wait_idle(agent)
            assert any(
                "flowerpot" in text
                for text in await _claim_texts(client, agent, "spare key flowerpot")
            )

            forgotten = await client.forget(agent, stored.claim_id)
            assert isinstance(forgotten, ForgetResult)
            assert (forgotten.id, forgotten.kind) == (
                stored.claim_id,
                ForgottenKind.CLAIM,
            )
            assert "tombstone (hashes only)" in forgotten.kept
            assert not await _claim_texts(client, agent, "spare key flowerpot")
            # A model may not bring a forgotten claim back; the tombstone holds over IPC.
            replay = await client.remember(
                agent, "The spare key is under the flowerpot.", by="model"
            )
            assert replay.outcome is RememberOutcome.SUPPRESSED
            with pytest.raises(UnknownClaimError):
                await client.forget(agent, stored.claim_id)

            kept = await client.remember(
                agent, "The bike lock code is 4312.", by="user"
            )
            assert kept.claim_id is not None
            archived = await client.archive(agent, kept.claim_id)
            assert isinstance(archived, LifecycleResult)
            assert archived.lifecycle == "archived"
            assert "stored locally" in archived.note
            assert not await _claim_texts(client, agent, "bike lock code")
            with pytest.raises(InvalidTransitionError):
                await client.archive(agent, kept.claim_id)
            restored = await client.unarchive(agent, kept.claim_id)
            assert restored.lifecycle == "active"
            assert await _claim_texts(client, agent, "bike lock code")

            with pytest.raises(ProtectedClaimError):
                await client.remember(
                    agent, "I am a helpful persona", kind="persona", by="user"
                )
            with pytest.raises(InvalidInputError):
                await client.remember(agent, "   ", by="user")


async def test_remember_into_a_scope(shared_server: SocketServer) -> None:
    agent = "scoped"
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            await client.remember(
                agent,
                "The review meeting moved to Thursday.",
                scope=Scope.session("s9"),
                by="user",
            )
            await client.wait_idle(agent)
            inside = await _claim_texts(
                client, agent, "review meeting", context=RecallContext(session_id="s9")
            )
            assert any("Thursday" in text for text in inside)
            assert not await _claim_texts(client, agent, "review meeting")
            bad = RememberRequest(
                id=0,
                agent_id=agent,
                text="x y z",
                by="user",
                scope=ScopeMessage(kind="agent", key="not-allowed"),
            )
            with pytest.raises(InvalidScopeError):
                await client.send(Call.raw(bad, RememberResult))


async def test_directives_facade_round_trip(shared_server: SocketServer) -> None:
    agent = "directives"
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            created = await client.directives.create(agent, "Use metric units.")
            assert isinstance(created, Directive)
            assert created.status is DirectiveStatus.ACTIVE
            assert created.kind is DirectiveKind.INSTRUCTION
            draft = await client.directives.propose(
                agent, "sourdough", kind="suppress_topic"
            )
            assert draft.status is DirectiveStatus.DRAFT
            assert draft.kind is DirectiveKind.SUPPRESS_TOPIC
            with pytest.raises(InvalidTransitionError):
                await client.directives.approve(agent, created.directive_id)
            approved = await client.directives.approve(agent, draft.directive_id)
            assert approved.status is DirectiveStatus.ACTIVE
            assert approved.directive_id == draft.directive_id

            listed = await client.directives.list(agent)
            assert {d.directive_id for d in listed} == {
                created.directive_id,
                draft.directive_id,
            }
            assert all(isinstance(d, Directive) for d in listed)
            recall = await client.recall(agent, "units", wait_s=30.0)
            assert "metric" in recall.directive_block

            revoked = await client.directives.revoke(agent, created.directive_id)
            assert revoked.status is DirectiveStatus.REVOKED
            assert [
                d.directive_id
                for d in await client.directives.list(agent, status="active")
            ] == [draft.directive_id]
            assert (
                "metric"
                not in (
                    await client.recall(agent, "units", wait_s=30.0)
                ).directive_block
            )

            # An over-broad topic would hide almost everything: refused, nothing written.
            with pytest.raises(InvalidInputError):
                await client.directives.create(agent, "the", kind="suppress_topic")
            with pytest.raises(InvalidInputError):
                await client.directives.list(agent, status="bogus")
            with pytest.raises(UnknownDirectiveError):
                await client.directives.revoke(agent, "no-such-directive")
            assert len(await client.directives.list(agent)) == 2


async def test_retire_empties_the_agent(shared_server: SocketServer) -> None:
    agent = "retiring"
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            await client.ingest(agent, [turn("r1", "I keep bees on the roof.")])
            await client.remember(agent, "The hive is painted yellow.", by="user")
            await client.directives.create(agent, "Answer briefly.")
            await client.wait_idle(agent)
            report = await client.retire(agent)
            assert report.agent_id == agent
            assert report.kept == ()
            assert report.deleted("events") == 1
            assert report.deleted("directives") == 1

            assert await client.directives.list(agent) == []
            recall = await client.recall(agent, "bees hive roof", wait_s=30.0)
            assert recall.items == ()
            assert recall.directive_block == ""
            status = await client.status()
            if agent in status.agent_ids:  # a retired agent may be gone entirely
                assert status.agent(agent).events == 0
                assert status.agent(agent).claims == 0


async def test_clear_and_status_arrive_as_the_embedded_records(
    shared_server: SocketServer,
) -> None:
    """clear, wait_cleared and status answer with the public records, whole: the report
    the embedded runtime built, not a subset of its fields."""
    agent = "reports"
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            await client.ingest(agent, [turn("p1", "I play the cello on Sundays.")])
            await client.remember(agent, "The cello is in the hall.", by="user")
            await client.directives.create(agent, "Answer briefly.")
            await client.wait_idle(agent)
            running = (await client.status()).agent(agent)
            assert running.state is AgentState.RUNNING
            assert running.statistics is not None
            assert running.statistics.writes_committed >= 1
            assert running.vector_identity is not None
            assert running.claims >= 1
            cleared = await client.clear(agent)
            await client.wait_cleared(agent)
            after = (await client.status()).agent(agent)
    assert isinstance(cleared, ClearReport)
    assert cleared.agent_id == agent
    assert cleared.claims_deleted == running.claims
    kept = cleared.kept_counts
    assert isinstance(kept, KeptCounts)
    # Each cleared claim and turn leaves its hashes, so a replay does not teach it again.
    assert (kept.events, kept.directives) == (0, 1)
    assert kept.tombstones >= 1
    assert kept.evidence_tombstones >= 1
    assert "evidence" in cleared.removed
    assert cleared.turns_deleted == 1
    assert str(cleared.claims_deleted) in cleared.summary
    assert (after.claims, after.events) == (0, 0)


async def test_sessions_dead_letters_and_runtime_events(
    shared_server: SocketServer,
) -> None:
    agent = "sessions"
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            assert await client.session_cursor(agent, "s1") is None
            await client.ingest(
                agent, [turn("e1", "I live in Paris."), turn("e2", "I love green tea.")]
            )
            await client.declare_session(agent, "sub", subagent=True)
            await client.ingest(
                agent, [turn("x1", "I love black coffee.", session="sub")]
            )
            await client.declare_session(agent, "fork", forked_from=("s1", "e2"))
            with pytest.raises(InvalidInputError):
                await client.declare_session(agent, "", subagent=True)
            await client.wait_idle(agent)
            assert await client.session_cursor(agent, "s1") == "e2"
            assert not any(
                "coffee" in text for text in await _claim_texts(client, agent, "coffee")
            )

            event = Turn(
                "t1", "s1", "event", "nightly backup failed", kind="task_failed"
            )
            result = await client.ingest_event(agent, event)
            assert result.outcome is IntakeOutcome.INGESTED
            assert (await client.ingest_event(agent, event)).outcome is (
                IntakeOutcome.DUPLICATE
            )
            edit = await client.ingest_event(
                agent, turn("e1b", "I live in Berlin.", replaces="e1")
            )
            assert edit.outcome is IntakeOutcome.INGESTED
            with pytest.raises(InvalidInputError):
                await client.ingest_event(
                    agent, turn("z1", "I live in Rome.", replaces="no-such-message")
                )
            await client.wait_idle(agent)
            texts = await _claim_texts(client, agent, "where do I live Paris Berlin")
            assert not any("Paris" in text for text in texts)
            assert any("Berlin" in text for text in texts)

            assert await client.replay_dead_letters(agent) == 0


async def test_writes_are_refused_while_drained(shared_server: SocketServer) -> None:
    agent = "drained"
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            stored = await client.remember(
                agent, "The boat is moored at pier nine.", by="user"
            )
            assert stored.claim_id is not None
            await client.drain(timeout_s=SERVER_TIMEOUT_S)
            try:
                with pytest.raises(DrainingError):
                    await client.remember(agent, "Another fact.", by="user")
                with pytest.raises(DrainingError):
                    await client.forget(agent, stored.claim_id)
                with pytest.raises(DrainingError):
                    await client.archive(agent, stored.claim_id)
                with pytest.raises(DrainingError):
                    await client.directives.create(agent, "Use metric units.")
                with pytest.raises(DrainingError):
                    await client.retire(agent)
                # Reads keep working.
                assert await client.directives.list(agent) == []
            finally:
                await client.resume()
            assert await _claim_texts(client, agent, "boat moored pier")


def test_directives_and_forget_through_the_blocking_client(
    shared_server: SocketServer,
) -> None:
    agent = "blocking-lifecycle"
    with BlockingClient.connect_unix(
        shared_server.socket_path, timeout_s=SERVER_TIMEOUT_S
    ) as client:
        created = client.directives.create(agent, "Use metric units.")
        assert created.status is DirectiveStatus.ACTIVE
        draft = client.directives.propose(agent, "Reply in Portuguese.")
        assert client.directives.approve(agent, draft.directive_id).status is (
            DirectiveStatus.ACTIVE
        )
        assert client.directives.revoke(agent, created.directive_id).status is (
            DirectiveStatus.REVOKED
        )
        assert [
            d.directive_id for d in client.directives.list(agent, status="active")
        ] == [draft.directive_id]
        with pytest.raises(InvalidInputError):
            client.directives.create(agent, "of the", kind="suppress_topic")
        with pytest.raises(InvalidTransitionError):
            client.directives.approve(agent, created.directive_id)

        stored = client.remember(
            agent, "The garage door is painted 8841 blue.", by="user"
        )
        assert stored.outcome is RememberOutcome.STORED
        assert stored.claim_id is not None
        client.wait_idle(agent)
        recall = client.recall(agent, "garage door", wait_s=30.0)
        assert any("8841" in item.text for item in recall.items)
        forgotten = client.forget(agent, stored.claim_id)
        assert isinstance(forgotten, ForgetResult)
        recall = client.recall(agent, "garage door", wait_s=30.0)
        assert not any("8841" in item.text for item in recall.items)
        with pytest.raises(UnknownClaimError):
            client.forget(agent, stored.claim_id)
        archived = client.archive(
            agent,
            client.remember(agent, "Bins go out Monday.", by="user").claim_id or "",
        )
        assert archived.lifecycle == "archived"
        assert client.unarchive(agent, archived.claim_id).lifecycle == "active"
        assert client.session_cursor(agent, "nowhere") is None
        assert client.replay_dead_letters(agent) == 0


async def test_a_recalled_turn_is_forgotten_over_ipc(
    shared_server: SocketServer,
) -> None:
    agent = "forget-turn"
    with trio.fail_after(SERVER_TIMEOUT_S):
        async with open_unix_client(shared_server.socket_path) as client:
            frog = "I keep my spare house key under the ceramic frog."
            await client.ingest(agent, [turn("f1", frog), turn("f2", "Clever.")])
            await client.wait_idle(agent)
            shown = await client.recall(agent, "spare house key", wait_s=30.0)
            (item,) = [i for i in shown.items if "frog" in i.text]
            result = await client.forget(agent, item.id)
            assert (result.id, result.kind, result.turns_removed) == (
                "f1",
                ForgottenKind.EVIDENCE,
                ("f1",),
            )
            again = await client.ingest(agent, [turn("f1", frog)])
            assert again.results[0].outcome.value == "suppressed"
            await client.wait_idle(agent)
            after = await client.recall(agent, "ceramic frog", wait_s=30.0)
            assert "frog" not in after.memory_block
            with pytest.raises(UnknownMemoryError) as raised:
                await client.forget(agent, "f404")
            assert "no memory 'f404'" in str(raised.value)
