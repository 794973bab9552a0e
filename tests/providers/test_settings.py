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
from tests.providers.fakes import open_fake_server

from cairn import open_memory
from cairn.errors import InvalidInputError
from cairn.providers.settings import load_embedding_settings
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
            '[embedding]\nprovider = "ollama"\nbase_url = "http://x"\nmodel = "m"\n',
            {},
            "dimension",
        ),
        ('[embedding]\nflavour = "x"\n', {}, "unknown keys"),
        ("[embedding\n", {}, "cairn.toml"),
        ("", {"CAIRN_EMBEDDING_DIMENSION": "many"}, "must be a int"),
    ],
)
def test_bad_configuration_is_a_typed_error(
    tmp_path: Path, text: str, environ: dict[str, str], message: str
) -> None:
    (tmp_path / "cairn.toml").write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=message):
        load_embedding_settings(tmp_path, environ=environ)


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
            assert status["embedder"]["provider"] == "openai-compatible"
            assert status["agents"]["a"]["embeddings"] == 1
            assert server.requests, "the fake provider was never called"
            assert SECRET not in json.dumps(status, default=str)
            assert SECRET not in repr(memory.embedder)
