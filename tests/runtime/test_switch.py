"""Live embedding switches: a new identity is an epoch change for every agent. In-flight work
of the old identity never commits (A→B→A included), the old projection stops serving at once,
the new one is rebuilt in the background while recall says `reindexing`, and breaker state is
cleared. The same switch also works from the config file (`Memory.reconfigure`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import trio
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import turn
from tests.providers.fakes import open_fake_server

from cairn import Degradation, EmbedderIdentity, Memory, open_memory
from cairn.errors import InvalidInputError, StaleResultError, TransientProviderError
from cairn.providers.embedding import Vectors
from cairn.providers.gateway import WARM_UP_TEXT
from cairn.providers.http.client import open_http_client
from cairn.providers.http.text import HttpTextConfig
from cairn.providers.http.text_openai import OpenAICompatibleTextProvider
from cairn.runtime.core import runtime_core
from cairn.runtime.upkeep import check
from cairn.runtime.writes import StoreEmbeddings
from cairn.testing import FixedDomainClock, HashingEmbedder
from cairn.vectors.codec import decode_vectors, encode_vector
from cairn.vectors.identity import EmbeddingIdentity

TURNS = [
    turn("e1", "I adopted a grey cat called Miso."),
    turn("e2", "My sister lives in Lisbon."),
    turn("e3", "I play the cello on Sundays."),
]


class HeldOnce(HashingEmbedder):
    """Model A. When ``hold`` is set, its next document batch cannot be cancelled (like
    work in a thread), waits for ``release`` and then answers with ``marker`` vectors, so
    a stale commit would be visible in the table."""

    def __init__(self, dimension: int = 64) -> None:
        super().__init__(dimension=dimension)
        self.hold = False
        self.entered = trio.Event()
        self.release = trio.Event()
        self.marker = np.zeros(dimension, dtype=np.float32)
        self.marker[0] = 1.0

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if self.hold:
            self.hold = False
            self.entered.set()
            with trio.CancelScope(shield=True):
                await self.release.wait()
            return np.tile(self.marker, (len(texts), 1))
        return await super().embed_documents(texts)


class OtherModel(HashingEmbedder):
    """Model B: same dimension, another model — another vector space."""

    def __init__(self, dimension: int = 64, *, gated: bool = False) -> None:
        super().__init__(dimension=dimension)
        self.gate = trio.Event()
        if not gated:
            self.gate.set()

    @property
    def identity(self) -> EmbeddingIdentity:
        return EmbeddingIdentity("testing", "other-model", self.dimension)

    def _embed(self, text: str) -> Vectors:
        # Reversed features: a genuinely different space with the same dimension.
        vector: Vectors = super()._embed(text)[::-1].copy()
        return vector

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        await self.gate.wait()
        return await super().embed_documents(texts)


async def _blobs(memory: Memory, agent: str) -> list[tuple[str, str, int, bytes]]:
    return await runtime_core(memory).database.read(
        lambda reader: [
            (str(row[0]), str(row[1]), int(row[2]), bytes(row[3]))
            for row in reader.connection.execute(
                "SELECT i.model, e.target, i.dimension, e.vector FROM embeddings e"
                " JOIN vector_identity i USING (identity_key) WHERE e.agent_id = ?",
                (agent,),
            )
        ]
    )


async def test_a_b_a_switch_during_an_in_flight_batch_commits_nothing_stale(
    data_dir: Path,
) -> None:
    model_a, model_b = HeldOnce(), OtherModel()
    async with open_test_memory(data_dir, embedder=model_a) as memory:
        await memory.ingest("a", TURNS[:2])
        await memory.wait_idle("a")
        model_a.hold = True
        await memory.ingest("a", TURNS[2:])
        with trio.fail_after(30):
            await model_a.entered.wait()
        supervisor = await runtime_core(memory).registry.get("a")
        epoch = supervisor.fence.epoch
        assert await memory.use_embedder(model_b)
        assert await memory.use_embedder(model_a)
        assert supervisor.fence.epoch == epoch + 2
        model_a.release.set()  # the held batch of the first A epoch now answers
        with trio.fail_after(30):
            await memory.wait_idle("a")
        rows = await _blobs(memory, "a")
        recall = await memory.recall("a", "cello Sundays")
        status = await memory.status()
    marker = model_a.marker.astype(np.float16).tobytes()
    assert all(blob != marker for *_, blob in rows), "a stale vector was committed"
    a_rows = [row for row in rows if row[0] == model_a.identity.model]
    # Every event and claim has exactly one vector of A, made in the current epoch.
    assert len(a_rows) == len({(target, blob) for _, target, _, blob in a_rows})
    index = supervisor.projection.index
    assert index is not None
    assert supervisor.projection.identity == model_a.identity
    assert len(index) == status.agent("a").embeddings - sum(
        1 for row in rows if row[0] == model_b.identity.model
    )
    assert recall.manifest is not None
    assert recall.manifest.degradations == ()
    assert any("cello" in item.text for item in recall.items)
    assert status.embedder.model == model_a.identity.model


async def test_same_dimension_switch_never_mixes_spaces(data_dir: Path) -> None:
    model_a, model_b = HashingEmbedder(dimension=64), OtherModel(gated=True)
    async with open_test_memory(data_dir, embedder=model_a) as memory:
        await memory.ingest("a", TURNS)
        await memory.wait_idle("a")
        supervisor = await runtime_core(memory).registry.get("a")
        assert await memory.use_embedder(model_b)
        # The old projection stops serving at once, before any B vector exists.
        assert (
            supervisor.projection.index is None
            or supervisor.projection.identity == (model_b.identity)
        )
        during = await memory.recall("a", "cat Miso")
        assert during.manifest is not None
        assert Degradation.REINDEXING in during.manifest.degradations
        assert any("Miso" in item.text for item in during.items)  # lexical serves
        index = supervisor.projection.index
        assert index is None or len(index) == 0
        model_b.gate.set()
        with trio.fail_after(30):
            await memory.wait_idle("a")
        after = await memory.recall("a", "cat Miso")
        rows = await _blobs(memory, "a")
    assert after.manifest is not None
    assert after.manifest.degradations == ()
    assert supervisor.projection.identity == model_b.identity
    assert supervisor.projection.index is not None
    b_blobs = [blob for model, _, _, blob in rows if model == "other-model"]
    assert len(supervisor.projection.index) == len(b_blobs)
    # Every B vector is B's own embedding of its text, none copied from A's space.
    a_blobs = {blob for model, _, _, blob in rows if model == "hashing-v1"}
    assert not a_blobs & set(b_blobs)
    assert decode_vectors(b_blobs, 64).shape == (len(b_blobs), 64)


class SlowQuery(HashingEmbedder):
    """Its query embedding waits for the test (documents are instant)."""

    def __init__(self) -> None:
        super().__init__(dimension=32)
        self.query_started = trio.Event()
        self.release = trio.Event()

    async def embed_query(self, text: str) -> Vectors:
        if (
            text != WARM_UP_TEXT
        ):  # the warm-up at open is instant, the recall's query not
            self.query_started.set()
            await self.release.wait()
        return await super().embed_query(text)


async def test_query_embedded_by_the_old_model_never_searches_the_new_projection(
    data_dir: Path,
) -> None:
    model_a, model_b = SlowQuery(), HashingEmbedder(dimension=48)
    async with open_test_memory(data_dir, embedder=model_a) as memory:
        await memory.ingest("a", TURNS)
        await memory.wait_idle("a")
        results = []

        async def recall() -> None:
            results.append(await memory.recall("a", "cat Miso"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(recall)
            await model_a.query_started.wait()
            await memory.use_embedder(model_b)
            await memory.wait_idle("a")  # B's projection is complete and serving
            model_a.release.set()
    (result,) = results
    assert result.manifest is not None
    # A 32-dimensional query against the 48-dimensional projection would have raised.
    assert Degradation.REINDEXING in result.manifest.degradations
    assert any("Miso" in item.text for item in result.items)


class FailingQueries(HashingEmbedder):
    async def embed_query(self, text: str) -> Vectors:
        await trio.lowlevel.checkpoint()
        raise TransientProviderError("provider down")


async def test_switch_clears_the_breaker(data_dir: Path) -> None:
    failing = FailingQueries(dimension=64)
    async with open_test_memory(data_dir, embedder=failing) as memory:
        await memory.ingest("a", TURNS)
        await memory.wait_idle("a")
        for _ in range(TEST_CONFIG.breaker_failures):
            await memory.recall("a", "cat")
        opened = await memory.recall("a", "cat")
        assert opened.manifest is not None
        assert Degradation.BREAKER_OPEN in opened.manifest.degradations
        assert (await memory.status()).agent("a").query_breaker == "open"
        # Same identity (e.g. the base URL moved): no epoch change, but a fresh breaker.
        supervisor = await runtime_core(memory).registry.get("a")
        epoch = supervisor.fence.epoch
        assert not await memory.use_embedder(HashingEmbedder(dimension=64))
        assert supervisor.fence.epoch == epoch
        assert (await memory.status()).agent("a").query_breaker == "closed"
        after = await memory.recall("a", "cat")
    assert after.manifest is not None
    assert after.manifest.degradations == ()


async def test_an_agent_not_running_at_a_switch_starts_with_the_new_embedder(
    data_dir: Path,
) -> None:
    # An agent with no supervisor has no work in flight that could be stale, so the
    # switch need not touch it: it starts fenced at its stored epoch, serving only the
    # new identity's projection (rebuilt for it in the background).
    model_a, model_b = HashingEmbedder(dimension=64), OtherModel()
    async with open_test_memory(data_dir, embedder=model_a) as memory:
        await memory.ingest("sleeping", TURNS)
        await memory.wait_idle("sleeping")
    async with open_test_memory(data_dir, embedder=model_a) as memory:
        assert await memory.use_embedder(model_b)  # "sleeping" has no supervisor yet
        await memory.wait_idle("sleeping")
        supervisor = await runtime_core(memory).registry.get("sleeping")
        recall = await memory.recall("sleeping", "sister Lisbon")
    assert supervisor.projection.identity == model_b.identity
    assert recall.manifest is not None
    assert recall.manifest.degradations == ()


def _write_config(data: Path, base_url: str, model: str, dimension: int) -> None:
    (data / "cairn.toml").write_text(
        f'[embedding]\nprovider = "openai-compatible"\nbase_url = "{base_url}"\n'
        f'model = "{model}"\ndimension = {dimension}\n',
        encoding="utf-8",
    )


async def test_reconfigure_switches_http_providers_from_the_config_file(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with trio.fail_after(30):
        async with (
            open_fake_server(dimension=8) as server_a,
            open_fake_server(dimension=12) as server_b,
        ):
            _write_config(data, server_a.base_url, "embed-a", 8)
            async with open_memory(
                data, TEST_CONFIG, clock=FixedDomainClock()
            ) as memory:
                await memory.ingest("a", TURNS)
                await memory.wait_idle("a")
                unchanged = await memory.reconfigure()  # the same file: same identity
                assert not unchanged.changed
                assert unchanged.text_provider is None  # no [text]: the rule extractor
                _write_config(data, server_b.base_url, "embed-b", 12)
                switched = await memory.reconfigure()
                assert switched.changed
                assert switched.embedder.model == "embed-b"
                await memory.wait_idle("a")
                recall = await memory.recall("a", "cello")
                status = await memory.status()
                supervisor = await runtime_core(memory).registry.get("a")
                (data / "cairn.toml").write_text(
                    "[embedding]\nprovider = 'nope'\n", encoding="utf-8"
                )
                with pytest.raises(InvalidInputError):
                    await memory.reconfigure()
                assert memory.embedder.identity.model == "embed-b"  # unchanged
    assert status.embedder == EmbedderIdentity(
        "openai-compatible", "embed-b", 12, "cos"
    )
    assert supervisor.projection.index is not None
    assert supervisor.projection.index.dimension == 12
    assert recall.manifest is not None
    assert recall.manifest.degradations == ()
    assert server_b.requests, "the new provider was never called"


async def test_embedding_result_of_the_old_identity_is_refused_at_commit(
    data_dir: Path,
) -> None:
    """What cancellation misses (say, a batch already queued for the writer) the commit
    transaction refuses: the epoch moved on, even though A is the identity again."""
    model_a, model_b = HashingEmbedder(dimension=64), OtherModel()
    async with open_test_memory(data_dir, embedder=model_a) as memory:
        await memory.ingest("a", TURNS)
        await memory.wait_idle("a")
        supervisor = await runtime_core(memory).registry.get("a")
        old = supervisor.fence.current()
        rows_before = await _blobs(memory, "a")
        await memory.use_embedder(model_b)
        await memory.use_embedder(model_a)
        vector = encode_vector(np.full(64, 0.125, dtype=np.float32))
        request = StoreEmbeddings(
            embedding_identity=model_a.identity,
            rows=(("event", 1, vector),),
            identity=old,
        )
        with pytest.raises(StaleResultError):
            await supervisor.commit(request)
        await memory.wait_idle("a")
        rows_after = await _blobs(memory, "a")
    a_after = sorted(row for row in rows_after if row[0] == "hashing-v1")
    assert a_after == sorted(rows_before)


async def test_text_provider_from_the_config_file_and_switched_live(
    tmp_path: Path,
) -> None:
    """`[text]` in cairn.toml makes the configured model extract (no parameter needed);
    `reconfigure` after removing it goes back to the rule extractor for the next batch."""
    data = tmp_path / "data"
    data.mkdir()
    first = [turn("t1", "I love jasmine rice.")]
    answer = {
        "claims": [],
        "corrections": [],
        "relations": [],
        "directive_drafts": [],
        "discarded_event_ids": ["t1"],
    }
    with trio.fail_after(30):
        async with open_fake_server(
            dimension=8, chat_content=json.dumps(answer)
        ) as server:
            embedding = (
                f'[embedding]\nprovider = "ollama"\nbase_url = "{server.base_url}"\n'
                'model = "fake-embed"\ndimension = 8\n'
            )
            (data / "cairn.toml").write_text(
                embedding
                + f'[text]\nprovider = "openai-compatible"\nbase_url = "{server.base_url}"\n'
                'model = "fake-chat"\ntoken_limit_field = "max_completion_tokens"\n',
                encoding="utf-8",
            )
            async with open_memory(
                data, TEST_CONFIG, clock=FixedDomainClock()
            ) as memory:
                await memory.ingest("a", first)
                await memory.wait_idle("a")
                chats = [r for r in server.requests if "chat" in r.path]
                claims_by_model = (await memory.status()).agent("a").claims
                (data / "cairn.toml").write_text(embedding, encoding="utf-8")
                assert not (await memory.reconfigure()).changed  # same embedder
                await memory.ingest("a", [turn("t2", "I love oolong tea.")])
                await memory.wait_idle("a")
                claims_after = (await memory.status()).agent("a").claims
    chats_after = [r for r in server.requests if "chat" in r.path]
    assert len(chats) == 1
    chat = chats[0]
    assert chat.path == "/v1/chat/completions"
    assert "max_completion_tokens" in chat.body
    assert "max_tokens" not in chat.body
    assert claims_by_model == 0  # the model discarded the event: no rule claims
    assert chats_after == chats  # the rule extractor took over
    assert claims_after >= 1


async def test_a_stop_cancels_a_hung_extraction_call(tmp_path: Path) -> None:
    """A text model that never answers does not hold up a stop (the drain timeout is 30 s,
    the extraction timeout longer); the turn stays pending and is extracted next time."""
    data = tmp_path / "data"
    answer = {
        "claims": [],
        "corrections": [],
        "relations": [],
        "directive_drafts": [],
        "discarded_event_ids": ["h1"],
    }
    with trio.fail_after(10):
        async with open_fake_server(mode="hang") as hung, open_http_client() as client:
            model = OpenAICompatibleTextProvider(
                client, HttpTextConfig(base_url=hung.base_url, model="fake-chat")
            )
            async with open_test_memory(data, text_provider=model) as memory:
                await memory.ingest("a", [turn("h1", "I love jasmine rice.")])
                await hung.request_arrived.wait()  # the extraction call now hangs
        async with (
            open_fake_server(chat_content=json.dumps(answer)) as server,
            open_http_client() as client,
        ):
            model = OpenAICompatibleTextProvider(
                client, HttpTextConfig(base_url=server.base_url, model="fake-chat")
            )
            async with open_test_memory(data, text_provider=model) as memory:
                await memory.wait_idle("a")
                counts = (await memory.status()).agent("a")
    assert counts.events == 1
    assert counts.events_pending_extraction == 0
    assert len(server.requests) == 1


async def test_a_forget_after_a_switch_leaves_no_vector_of_it_in_any_projection_file(
    data_dir: Path,
) -> None:
    """Only the serving identity keeps a projection file: the old identity's would never
    see the forget and keep the forgotten turn's vector on disk. Switching back rebuilds
    it from the blobs, without the forgotten one, and doctor calls the state healthy."""
    model_a, model_b = HashingEmbedder(dimension=64), OtherModel()
    async with open_test_memory(data_dir, embedder=model_a) as memory:
        await memory.ingest("a", TURNS)
        await memory.wait_idle("a")
        supervisor = await runtime_core(memory).registry.get("a")
        await supervisor.run_maintenance_pass()  # A's projection file is written
        vectors = runtime_core(memory).vectors
        a_file = vectors.path_for("a", model_a.identity)
        assert a_file.exists()
        assert await memory.use_embedder(model_b)
        with trio.fail_after(30):
            await memory.wait_idle("a")
            await supervisor.projection.caught_up.wait()
        assert not a_file.exists()
        recall = await memory.recall("a", "grey cat Miso")
        (item,) = [i for i in recall.items if i.kind == "evidence" and "Miso" in i.text]
        await memory.forget("a", item.id)
        await memory.wait_idle("a")
        await supervisor.run_maintenance_pass()
        report = await check(memory)
        assert report.ok, report.problems
        assert not a_file.exists()
        assert await memory.use_embedder(model_a)
        with trio.fail_after(30):
            await supervisor.projection.caught_up.wait()
        assert supervisor.projection.index is not None
        assert len(supervisor.projection.index) == len(
            [row for row in await _blobs(memory, "a") if row[0] == "hashing-v1"]
        )
        assert not vectors.path_for("a", model_b.identity).exists()
