"""The challenge pass on a real database file: plan on the connection, the provider's
question over real HTTP on loopback (an OpenAI-compatible and an Ollama fake), apply in a
transaction as the write coordinator would; and the "who wins" order it shares with
succession (cairn.maintenance.challenge)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import apsw
import httpx
import msgspec
import pytest
import trio
from tests.providers.fakes import open_fake_server

from cairn.domain.claim import ClaimDraft, ClaimKind, Origin
from cairn.domain.ids import AgentId
from cairn.domain.scope import Scope
from cairn.errors import ProviderContractError
from cairn.maintenance.challenge import (
    ChallengePass,
    inferred_attribute,
    same_value,
)
from cairn.maintenance.passes import PassResult, SeedOutcome, Work
from cairn.providers.http import RetryPolicy, open_http_client
from cairn.providers.http.text import HttpTextConfig
from cairn.providers.http.text_ollama import OllamaTextProvider
from cairn.providers.http.text_openai import OpenAICompatibleTextProvider
from cairn.store.claims import insert_claims
from cairn.store.connection import open_connection
from cairn.store.dirty import DirtySeed, load_seeds, mark_dirty

A = AgentId("a")
T0 = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
NOW = T0 + dt.timedelta(days=90)
NO_WAIT = RetryPolicy(attempts=1, wait_initial_s=0.0, wait_max_s=0.0, wait_jitter_s=0.0)
BOUND_S = 10.0
PASS = ChallengePass()


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[apsw.Connection]:
    opened = open_connection(tmp_path / "cairn.db")
    yield opened
    opened.close()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with open_http_client(trust_env=False) as opened:
        yield opened


def claim(
    connection: apsw.Connection,
    text: str,
    *,
    at: dt.datetime = T0,
    confidence: float = 0.85,
    origin: Origin = Origin.USER,
    predicate: str | None = None,
    scope: Scope | None = None,
) -> int:
    """One stored claim stated at ``at`` (its evidence time); its rowid."""
    draft = ClaimDraft(
        kind=ClaimKind.FACT,
        text=text,
        spans=(),
        confidence=confidence,
        subject=None if predicate is None else "user",
        predicate=predicate,
        scope=scope or Scope.agent(),
    )
    with connection:
        committed = insert_claims(connection, A, [draft], {}, at, origin)
    ((rowid, _),) = committed.inserted
    return rowid


def work(
    connection: apsw.Connection, neighbours: dict[int, tuple[int, ...]] | None = None
) -> Work:
    seeds = tuple(load_seeds(connection, A, 64))
    return Work(A, NOW, seeds, neighbours or {})


def apply(connection: apsw.Connection, batch: Work, plan: Any) -> PassResult:
    """What ApplyMaintenance does in the coordinator's transaction."""
    with connection:
        result = PASS.apply(connection, batch, plan)
        mark_dirty(connection, A, result.changed)
        connection.execute("DELETE FROM dirty_work WHERE agent_id = ?", (A,))
    return result


def offline(connection: apsw.Connection, passes: int = 3) -> None:
    """Passes without a provider (the actor's ``answered(plan, None)``), each over the
    seeds the previous one left."""
    for _ in range(passes):
        batch = work(connection)
        plan = PASS.plan(connection, batch)
        if plan is not None and PASS.question(plan) is not None:
            plan = PASS.answered(plan, None)
        if plan is not None:
            apply(connection, batch, plan)


def lifecycle(connection: apsw.Connection, rowid: int) -> str:
    row = connection.execute(
        "SELECT lifecycle FROM claims WHERE rowid = ?", (rowid,)
    ).fetchone()
    return str(row[0])


def conflicts(connection: apsw.Connection) -> list[tuple[int, int, str, str]]:
    return [
        (int(a), int(b), str(reason), str(status))
        for a, b, reason, status in connection.execute(
            "SELECT claim_a, claim_b, reason, status FROM conflicts ORDER BY claim_a"
        )
    ]


# -- who wins ----------------------------------------------------------------------------
def test_at_equal_evidence_time_the_users_word_wins_over_an_extracted_claim(
    connection: apsw.Connection,
) -> None:
    user = claim(connection, "The user lives in Berlin", predicate="lives_in")
    extracted = claim(
        connection,
        "The user lives in Lisbon",
        predicate="lives_in",
        origin=Origin.EXTRACTED,
    )
    assert lifecycle(connection, user) == "active"
    assert lifecycle(connection, extracted) == "superseded"
    offline(connection)
    assert conflicts(connection) == []


def test_at_equal_time_and_origin_the_surer_claim_wins(
    connection: apsw.Connection,
) -> None:
    sure = claim(connection, "The user lives in Berlin", predicate="lives_in")
    unsure = claim(
        connection, "The user lives in Lisbon", predicate="lives_in", confidence=0.6
    )
    assert (lifecycle(connection, sure), lifecycle(connection, unsure)) == (
        "active",
        "superseded",
    )


def test_a_hedged_newer_value_against_a_plain_older_one_is_for_the_user(
    connection: apsw.Connection,
) -> None:
    older = claim(connection, "The user lives in Berlin", predicate="lives_in")
    hedged = claim(
        connection,
        "The user lives in Lisbon",
        predicate="lives_in",
        at=T0 + dt.timedelta(days=10),
        confidence=0.3,
    )
    offline(connection)
    assert conflicts(connection) == [(older, hedged, "hedged_newer", "open")]
    # Both stay as succession left them, recalled and marked until the user decides.
    assert (lifecycle(connection, older), lifecycle(connection, hedged)) == (
        "superseded",
        "active",
    )


def test_a_plain_newer_value_after_a_hedged_one_simply_wins(
    connection: apsw.Connection,
) -> None:
    hedged = claim(
        connection, "The user lives in Berlin", predicate="lives_in", confidence=0.3
    )
    newer = claim(
        connection,
        "The user lives in Lisbon",
        predicate="lives_in",
        at=T0 + dt.timedelta(days=10),
    )
    offline(connection)
    assert conflicts(connection) == []
    assert (lifecycle(connection, hedged), lifecycle(connection, newer)) == (
        "superseded",
        "active",
    )


def test_a_remembered_negation_supersedes_the_current_value(
    connection: apsw.Connection,
) -> None:
    paris = claim(connection, "The user lives in Paris", predicate="lives_in")
    negation = claim(
        connection,
        "I don't live in Paris anymore.",
        at=T0 + dt.timedelta(days=3),
    )
    offline(connection)
    assert (lifecycle(connection, paris), lifecycle(connection, negation)) == (
        "superseded",
        "active",
    )
    assert connection.execute(
        "SELECT parent_rowid, child_rowid FROM derivations WHERE relation = 'supersede'"
    ).fetchall() == [(paris, negation)]


def test_an_unkeyed_extracted_claim_is_keyed_only_into_an_existing_chain(
    connection: apsw.Connection,
) -> None:
    alone = claim(connection, "The user lives in Berlin", origin=Origin.EXTRACTED)
    offline(connection)
    assert connection.execute(
        "SELECT predicate FROM claims WHERE rowid = ?", (alone,)
    ).fetchone() == (None,)
    newer = claim(
        connection,
        "The user lives in Lisbon",
        predicate="lives_in",
        at=T0 + dt.timedelta(days=3),
    )
    with connection:
        mark_dirty(connection, A, [alone])
    offline(connection)
    assert (lifecycle(connection, alone), lifecycle(connection, newer)) == (
        "superseded",
        "active",
    )


def test_a_plan_whose_claim_changed_since_its_snapshot_writes_nothing(
    connection: apsw.Connection,
) -> None:
    claim(connection, "The user lives in Berlin", predicate="lives_in")
    later = claim(connection, "I live in Lisbon.", at=T0 + dt.timedelta(days=3))
    batch = work(connection)
    plan = PASS.plan(connection, batch)
    assert plan is not None
    with connection:  # an edit meanwhile (revision moves)
        connection.execute(
            "UPDATE claims SET revision = revision + 1 WHERE rowid = ?", (later,)
        )
    result = apply(connection, batch, plan)
    assert result.outcomes == {later: SeedOutcome.RETRY}
    assert result.changed == ()
    assert connection.execute(
        "SELECT predicate FROM claims WHERE rowid = ?", (later,)
    ).fetchone() == (None,)


# -- reading attributes -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The user lives in Lisbon.", ("user", "lives_in")),
        ("The user's favourite colour is blue", ("user", "favourite:colour")),
        ("I switched to Neovim", ("user", "uses:editor")),
        ("The user works at Google", ("user", "works_at")),
        ("用户住在柏林", ("user", "lives_in")),
        ("我搬到了里斯本", ("user", "lives_in")),
        ("Mei lives in Oslo", ("Mei", "lives_in")),
        ("The user loves oolong tea", ("user", "attitude:oolong tea")),
        ("The user's car is red", None),
        ("Lisbon is sunny", None),
    ],
)
def test_the_attribute_a_claim_states_is_read_by_the_extractors_lexicons(
    text: str, expected: tuple[str, str] | None
) -> None:
    assert inferred_attribute(text, ("Mei",)) == expected


@pytest.mark.parametrize(
    ("one", "other", "same"),
    [
        ("The user lives in Lisbon", "The user moved to Lisbon", True),
        ("The user lives in Lisbon", "The user lives in Berlin", False),
        ("The user lives in Paris", "The user no longer lives in Paris", False),
        ("用户住在柏林", "我住在柏林", True),
        ("用户住在柏林", "用户搬到了里斯本", False),
    ],
)
def test_same_value_sees_wording_and_negation(one: str, other: str, same: bool) -> None:
    assert same_value(one, other) is same


# -- the provider ------------------------------------------------------------------------
def _provider(
    kind: str, client: httpx.AsyncClient, base_url: str
) -> OpenAICompatibleTextProvider | OllamaTextProvider:
    config = HttpTextConfig(base_url=base_url, model="fake-chat", retry=NO_WAIT)
    if kind == "openai":
        return OpenAICompatibleTextProvider(client, config)
    return OllamaTextProvider(client, config)


def _cars(connection: apsw.Connection) -> tuple[int, int, Work]:
    """Two statements no rule reads an attribute from, neighbours of each other."""
    red = claim(connection, "The user's car is red")
    blue = claim(connection, "The user's car is blue", at=T0 + dt.timedelta(days=5))
    return red, blue, work(connection, {red: (blue,), blue: (red,)})


@pytest.mark.parametrize("kind", ["openai", "ollama"])
async def test_the_provider_says_which_of_two_contradicting_claims_holds(
    connection: apsw.Connection, client: httpx.AsyncClient, kind: str
) -> None:
    red, blue, batch = _cars(connection)
    plan = PASS.plan(connection, batch)
    assert plan is not None
    question = PASS.question(plan)
    assert question is not None
    assert question.schema == msgspec.json.schema(PASS.answer_type)
    verdict = {"pairs": [{"pair": 0, "contradict": True, "holds": "second"}]}
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            chat_content=msgspec.json.encode(verdict).decode()
        ) as server:
            answer = await _provider(kind, client, server.base_url).complete_json(
                question.system, question.user, PASS.answer_type, max_tokens=256
            )
    (request,) = server.requests
    sent = str(request.body["messages"])
    assert "car is red" in sent
    assert "car is blue" in sent
    planned = PASS.answered(plan, msgspec.to_builtins(answer))
    assert planned is not None
    result = apply(connection, batch, planned)
    assert result.counts["superseded"] == 1
    assert (lifecycle(connection, red), lifecycle(connection, blue)) == (
        "superseded",
        "active",
    )
    assert connection.execute(
        "SELECT parent_rowid, child_rowid FROM derivations WHERE relation = 'supersede'"
    ).fetchall() == [(red, blue)]
    # Recorded as decided: never asked again, never listed as open.
    assert conflicts(connection) == [(red, blue, "provider", "resolved")]
    again = PASS.plan(connection, work(connection, {blue: (red,)}))
    assert again is None or PASS.question(again) is None


async def test_a_provider_that_cannot_say_which_holds_raises_a_conflict(
    connection: apsw.Connection, client: httpx.AsyncClient
) -> None:
    red, blue, batch = _cars(connection)
    plan = PASS.plan(connection, batch)
    assert plan is not None
    question = PASS.question(plan)
    assert question is not None
    verdict = {"pairs": [{"pair": 0, "contradict": True, "holds": "unknown"}]}
    with trio.fail_after(BOUND_S):
        async with open_fake_server(
            chat_content=msgspec.json.encode(verdict).decode()
        ) as server:
            answer = await _provider("openai", client, server.base_url).complete_json(
                question.system, question.user, PASS.answer_type, max_tokens=256
            )
    planned = PASS.answered(plan, msgspec.to_builtins(answer))
    assert planned is not None
    apply(connection, batch, planned)
    assert conflicts(connection) == [(red, blue, "provider_undecided", "open")]
    assert (lifecycle(connection, red), lifecycle(connection, blue)) == (
        "active",
        "active",
    )


async def test_a_failing_provider_leaves_the_offline_decision_standing(
    connection: apsw.Connection, client: httpx.AsyncClient
) -> None:
    berlin = claim(connection, "The user lives in Berlin", predicate="lives_in")
    lisbon = claim(connection, "I live in Lisbon.", at=T0 + dt.timedelta(days=3))
    _, _, batch = _cars(connection)
    plan = PASS.plan(connection, batch)
    assert plan is not None
    question = PASS.question(plan)
    assert question is not None
    with trio.fail_after(BOUND_S):
        async with open_fake_server(mode="chat_not_json") as server:
            with pytest.raises(ProviderContractError):
                await _provider("openai", client, server.base_url).complete_json(
                    question.system, question.user, PASS.answer_type, max_tokens=256
                )
    planned = PASS.answered(plan, None)
    assert planned is not None
    apply(connection, batch, planned)
    # The offline rule keyed the remembered move: Lisbon holds, Berlin is history.
    assert (lifecycle(connection, berlin), lifecycle(connection, lisbon)) == (
        "superseded",
        "active",
    )
    assert conflicts(connection) == []
    # A wrong-shaped answer is no answer either.
    assert PASS.answered(plan, {"pairs": [{"pair": "x"}]}) is not None


def test_neighbours_in_another_scope_are_never_put_to_the_provider(
    connection: apsw.Connection,
) -> None:
    red = claim(connection, "The user's car is red")
    blue = claim(
        connection,
        "The user's car is blue",
        scope=Scope.session("s2"),
    )
    plan = PASS.plan(connection, work(connection, {red: (blue,), blue: (red,)}))
    assert plan is None
    assert [DirtySeed(red, 1), DirtySeed(blue, 1)] == load_seeds(connection, A, 8)
