"""Provider configuration: a TOML file plus CAIRN_EMBEDDING_* variables select the
embedder; the local model is the default; a configured HTTP provider really serves
ingestion and recall; a key is only ever referenced by variable name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
from tests.conftest import TEST_CONFIG
from tests.helpers import turn
from tests.providers.fakes import open_fake_server, unused_port

from cairn import open_memory
from cairn.errors import InvalidInputError
from cairn.providers.settings import (
    EmbeddingSettings,
    TextSettings,
    load_embedding_settings,
    load_text_settings,
)
from cairn.runtime.providers import EmbedderUnavailableError
from cairn.testing import FixedDomainClock

SECRET = "sk-test-0123456789abcdef"


def test_default_is_the_local_model(tmp_path: Path) -> None:
    settings = load_embedding_settings(tmp_path, environ={})
    assert settings.provider == "local"
    assert settings.source == "default"


def test_file_then_environment(tmp_path: Path) -> None:
    (tmp_path / "cairn.toml").write_text(
        '[embedding]\nprovider = "ollama"\nbase_url = "http://127.0.0.1:11434"\n'
        'model = "nomic-embed-text"\ndimension = 768\n',
        encoding="utf-8",
    )
    settings = load_embedding_settings(
        tmp_path,
        environ={
            "CAIRN_EMBEDDING_MODEL": "mxbai-embed-large",
            "CAIRN_EMBEDDING_DIMENSION": "1024",
        },
    )
    assert (settings.provider, settings.model, settings.dimension) == (
        "ollama",
        "mxbai-embed-large",
        1024,
    )
    assert "CAIRN_EMBEDDING_MODEL" in settings.source


@pytest.mark.parametrize(
    ("text", "environ", "message"),
    [
        ('[embedding]\nprovider = "magic"\n', {}, "unknown embedding provider"),
        (
            '[embedding]\nprovider = "ollama"\nbase_url = "http://x"\n',
            {},
            "model",
        ),
        ('[embedding]\nflavour = "x"\n', {}, "unknown key in \\[embedding\\]: flavour"),
        ("[embedding\n", {}, "cairn.toml"),
        ("", {"CAIRN_EMBEDDING_DIMENSION": "many"}, "CAIRN_EMBEDDING_DIMENSION"),
        ("[embedding]\nmax_concurrency = 0\n", {}, "max_concurrency must be positive"),
        ('[embedding]\nread_timeout_s = "long"\n', {}, r"cairn.toml \[embedding\]"),
        ("", {"CAIRN_EMBEDDING_CONNECT_TIMEOUT_S": "-1"}, "connect_timeout_s"),
        ("embedding = 3\n", {}, "must be a table"),
    ],
)
def test_bad_configuration_is_a_typed_error(
    tmp_path: Path, text: str, environ: dict[str, str], message: str
) -> None:
    (tmp_path / "cairn.toml").write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=message):
        load_embedding_settings(tmp_path, environ=environ)


def test_embedding_limits_from_file_and_environment(tmp_path: Path) -> None:
    (tmp_path / "cairn.toml").write_text(
        '[embedding]\nprovider = "ollama"\nbase_url = "http://127.0.0.1:11434"\n'
        'model = "nomic-embed-text"\ndimension = 768\nmax_concurrency = 2\n'
        "read_timeout_s = 12\n",
        encoding="utf-8",
    )
    settings = load_embedding_settings(
        tmp_path, environ={"CAIRN_EMBEDDING_CONNECT_TIMEOUT_S": "1.5"}
    )
    assert (
        settings.max_concurrency,
        settings.read_timeout_s,
        settings.connect_timeout_s,
    ) == (2, 12.0, 1.5)
    assert EmbeddingSettings().max_concurrency == 4


def test_text_default_is_none(tmp_path: Path) -> None:
    settings = load_text_settings(tmp_path, environ={})
    assert settings == TextSettings()
    assert (settings.provider, settings.source) == ("none", "default")


def test_text_file_then_environment(tmp_path: Path) -> None:
    config = tmp_path / "elsewhere.toml"
    config.write_text(
        '[embedding]\nprovider = "local"\n\n'
        '[text]\nprovider = "openai-compatible"\nbase_url = "https://api.example"\n'
        'model = "gpt-small"\napi_key_env = "MY_KEY"\nmax_tokens = 800\n'
        'token_limit_field = "max_completion_tokens"\nread_timeout_s = 90\n',
        encoding="utf-8",
    )
    settings = load_text_settings(
        tmp_path,
        environ={
            "CAIRN_CONFIG": str(config),
            "CAIRN_TEXT_MODEL": "gpt-large",
            "CAIRN_TEXT_MAX_CONCURRENCY": "2",
        },
    )
    assert settings == TextSettings(
        provider="openai-compatible",
        base_url="https://api.example",
        model="gpt-large",
        api_key_env="MY_KEY",
        max_tokens=800,
        token_limit_field="max_completion_tokens",
        read_timeout_s=90.0,
        max_concurrency=2,
        source=f"{config}, CAIRN_TEXT_MODEL, CAIRN_TEXT_MAX_CONCURRENCY",
    )
    # The embedding table in the same file is read independently.
    assert load_embedding_settings(
        tmp_path, environ={"CAIRN_CONFIG": str(config)}
    ).provider == ("local")


@pytest.mark.parametrize(
    ("text", "environ", "message"),
    [
        ('[text]\nprovider = "magic"\n', {}, "unknown text provider"),
        ('[text]\nprovider = "ollama"\nmodel = "m"\n', {}, "base_url"),
        ("[text]\ntemperature = 0.2\n", {}, r"unknown key in \[text\]: temperature"),
        ('[text]\nmax_tokens = "lots"\n', {}, r"cairn.toml \[text\]: max_tokens"),
        ("[text]\nmax_tokens = true\n", {}, "max_tokens must be an integer"),
        ('[text]\ntoken_limit_field = "max_length"\n', {}, "token_limit_field"),
        ("", {"CAIRN_TEXT_MAX_TOKENS": "0"}, "CAIRN_TEXT_MAX_TOKENS"),
        ("", {"CAIRN_TEXT_READ_TIMEOUT_S": "soon"}, "CAIRN_TEXT_READ_TIMEOUT_S"),
        ("[text]\nmax_concurrency = 0\n", {}, "max_concurrency must be positive"),
    ],
)
def test_bad_text_configuration_is_a_typed_error(
    tmp_path: Path, text: str, environ: dict[str, str], message: str
) -> None:
    (tmp_path / "cairn.toml").write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=message):
        load_text_settings(tmp_path, environ=environ)


async def test_configured_http_provider_serves_ingest_and_recall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_TEST_KEY", SECRET)
    with trio.fail_after(30):
        async with open_fake_server(dimension=8) as server:
            data = tmp_path / "data"
            data.mkdir()
            (data / "cairn.toml").write_text(
                f'[embedding]\nprovider = "openai-compatible"\nbase_url = "{server.base_url}"\n'
                'model = "fake-embed"\ndimension = 8\napi_key_env = "CAIRN_TEST_KEY"\n',
                encoding="utf-8",
            )
            async with open_memory(
                data, TEST_CONFIG, clock=FixedDomainClock()
            ) as memory:
                await memory.ingest(
                    "a", [turn("e1", "I adopted a grey cat called Miso.")]
                )
                await memory.wait_idle("a")
                recall = await memory.recall("a", "cat Miso")
                status = await memory.status()
            assert any("Miso" in item.text for item in recall.items)
            assert recall.manifest is not None
            assert recall.manifest.degradations == ()
            assert status.embedder.provider == "openai-compatible"
            assert status.agent("a").embeddings == 1
            assert server.requests, "the fake provider was never called"
            assert SECRET not in json.dumps(status, default=str)
            assert SECRET not in repr(memory.embedder)


async def test_dimension_is_discovered_when_not_configured(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with open_fake_server(dimension=12) as server:
            data = tmp_path / "data"
            data.mkdir()
            (data / "cairn.toml").write_text(
                f'[embedding]\nprovider = "ollama"\nbase_url = "{server.base_url}"\n'
                'model = "fake-embed"\n',
                encoding="utf-8",
            )
            async with open_memory(
                data, TEST_CONFIG, clock=FixedDomainClock()
            ) as memory:
                await memory.ingest("a", [turn("e1", "I play the cello.")])
                await memory.wait_idle("a")
                recall = await memory.recall("a", "cello")
            assert memory.embedder.identity.dimension == 12
            assert recall.manifest is not None
            assert recall.manifest.degradations == ()
            assert server.requests[0].body["input"] == ["dimension probe"]


async def test_discovery_failure_is_typed_and_opens_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "cairn.toml").write_text(
        '[embedding]\nprovider = "openai-compatible"\n'
        f'base_url = "http://127.0.0.1:{unused_port()}"\nmodel = "m"\n',
        encoding="utf-8",
    )
    with pytest.raises(EmbedderUnavailableError, match="dimension"):
        async with open_memory(data, TEST_CONFIG, clock=FixedDomainClock()):
            pytest.fail("opened without a dimension")
    assert not (data / "cairn.db").exists()


async def test_a_hung_provider_call_is_cancelled_by_a_stop(tmp_path: Path) -> None:
    """Stop cancels the embedding call instead of waiting (30 s drain, 30 s read timeout);
    the evidence is committed, so the next start embeds it."""
    data = tmp_path / "data"
    data.mkdir()
    config = (
        '[embedding]\nprovider = "openai-compatible"\nbase_url = "{url}"\n'
        'model = "fake-embed"\ndimension = 8\n'
    )
    with trio.fail_after(10):  # far below the drain timeout and the read timeout
        async with open_fake_server(dimension=8, mode="hang") as server:
            (data / "cairn.toml").write_text(
                config.format(url=server.base_url), encoding="utf-8"
            )
            async with open_memory(
                data, TEST_CONFIG, clock=FixedDomainClock()
            ) as memory:
                await memory.ingest("a", [turn("e1", "I play the cello.")])
                await server.request_arrived.wait()  # the embedding call now hangs
        async with open_fake_server(dimension=8) as server:
            (data / "cairn.toml").write_text(
                config.format(url=server.base_url), encoding="utf-8"
            )
            async with open_memory(
                data, TEST_CONFIG, clock=FixedDomainClock()
            ) as memory:
                await memory.wait_idle("a")
                recall = await memory.recall("a", "cello")
                status = await memory.status()
    assert status is not None
    assert status.agent("a").events == 1
    assert status.agent("a").embeddings >= 1
    assert recall.manifest is not None
    assert recall.manifest.degradations == ()
    assert any("cello" in item.text for item in recall.items)
