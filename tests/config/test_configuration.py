"""cairn.toml and CAIRN_* variables: every MemoryConfig field is settable both ways through
the one schema; precedence explicit > environment > file > default; bad values, unknown
tables, keys and variables are ConfigurationErrors naming the key and the source; the
runtime and ``cairn config`` read it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from tests.conftest import TEST_CONFIG
from typer.testing import CliRunner

from cairn import open_memory
from cairn.cli.app import CliContext
from cairn.cli.main import app
from cairn.config import MemoryConfig
from cairn.configuration import MEMORY_SCHEMA, load_memory_config
from cairn.errors import ConfigurationError
from cairn.providers.settings import load_embedding_settings
from cairn.runtime.core import runtime_core
from cairn.testing import FixedDomainClock, HashingEmbedder


def _other_value(name: str) -> Any:
    """A valid value of field ``name`` that differs from its default."""
    default = MEMORY_SCHEMA.default(name)
    kind = MEMORY_SCHEMA.types[name]
    if name == "timezone":
        return "Asia/Shanghai"
    if kind is bool:
        return not default
    if default is None:
        return 3 if kind == int | None else "unix-none"
    if isinstance(default, int):
        return default + 1
    if isinstance(default, float):
        return default / 2 if default > 0 else 1.5
    raise AssertionError(f"no test value for {name}: {kind}")


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def test_the_schema_is_every_memory_config_field() -> None:
    assert set(MEMORY_SCHEMA.fields) == {
        field.name for field in attrs.fields(MemoryConfig)
    }


@pytest.mark.parametrize("name", sorted(MEMORY_SCHEMA.fields))
def test_every_field_is_settable_in_the_file_and_the_environment(
    tmp_path: Path, name: str
) -> None:
    value = _other_value(name)
    assert value != getattr(MemoryConfig(), name)
    (tmp_path / "cairn.toml").write_text(
        f"[memory]\n{name} = {_toml(value)}\n", encoding="utf-8"
    )
    from_file = load_memory_config(tmp_path, environ={})
    assert getattr(from_file.config, name) == value
    assert from_file.decoded.source_of(name) == f"{tmp_path / 'cairn.toml'} [memory]"

    variable = f"CAIRN_MEMORY_{name.upper()}"
    text = str(value).lower() if isinstance(value, bool) else str(value)
    from_environment = load_memory_config(tmp_path / "none", environ={variable: text})
    assert getattr(from_environment.config, name) == value
    assert from_environment.decoded.source_of(name) == variable


def test_environment_over_file_over_default(tmp_path: Path) -> None:
    (tmp_path / "cairn.toml").write_text(
        "[memory]\nrecall_k = 5\nbudget_bytes = 2000\n", encoding="utf-8"
    )
    loaded = load_memory_config(tmp_path, environ={"CAIRN_MEMORY_RECALL_K": "7"})
    assert (loaded.config.recall_k, loaded.config.budget_bytes) == (7, 2000)
    assert loaded.config.rrf_k == MemoryConfig().rrf_k
    assert loaded.decoded.source_of("rrf_k") == "default"
    cleared = load_memory_config(
        tmp_path, environ={"CAIRN_MEMORY_LIST_SESSION_CAP": "none"}
    )
    assert cleared.config.list_session_cap is None


@pytest.mark.parametrize(
    ("text", "environ", "key", "source", "message"),
    [
        (
            "[memroy]\nrecall_k = 3\n",
            {},
            None,
            "cairn.toml",
            r"unknown table \[memroy\]",
        ),
        (
            "[memory]\nrecal_k = 3\n",
            {},
            "recal_k",
            "cairn.toml [memory]",
            r"unknown key in \[memory\]: recal_k \(did you mean recall_k\?\)",
        ),
        (
            "",
            {"CAIRN_MEMORY_RECAL_K": "3"},
            None,
            "CAIRN_MEMORY_RECAL_K",
            "unknown variable CAIRN_MEMORY_RECAL_K",
        ),
        (
            "",
            {"CAIRN_EMBEDDING_FLAVOUR": "x"},
            None,
            "CAIRN_EMBEDDING_FLAVOUR",
            "unknown variable CAIRN_EMBEDDING_FLAVOUR",
        ),
        (
            '[memory]\nrecall_k = "many"\n',
            {},
            "recall_k",
            "cairn.toml [memory]",
            "recall_k must be an integer, not 'many'",
        ),
        (
            "",
            {"CAIRN_MEMORY_SYNCHRONOUS_FULL": "sometimes"},
            "synchronous_full",
            "CAIRN_MEMORY_SYNCHRONOUS_FULL",
            "synchronous_full must be true or false",
        ),
        (
            "[memory]\nrecall_k = 0\n",
            {},
            "recall_k",
            "cairn.toml [memory]",
            "recall_k must be positive, not 0",
        ),
        (
            "",
            {"CAIRN_MEMORY_TIMEZONE": "Mars/Olympus"},
            "timezone",
            "CAIRN_MEMORY_TIMEZONE",
            "IANA time zone",
        ),
        (
            "[memory]\ndirective_share = 0.6\n",
            {"CAIRN_MEMORY_RECALL_RESERVE_SHARE": "0.5"},
            "directive_share",
            "cairn.toml [memory], CAIRN_MEMORY_RECALL_RESERVE_SHARE",
            "must add up to at most 1",
        ),
    ],
)
def test_bad_configuration_names_key_and_source(
    tmp_path: Path,
    text: str,
    environ: dict[str, str],
    key: str | None,
    source: str,
    message: str,
) -> None:
    (tmp_path / "cairn.toml").write_text(text, encoding="utf-8")

    def load_all() -> None:
        load_memory_config(tmp_path, environ=environ)
        load_embedding_settings(tmp_path, environ=environ)

    with pytest.raises(ConfigurationError, match=message) as raised:
        load_all()
    assert raised.value.key == key
    assert raised.value.source.endswith(source)
    assert raised.value.source.split(" [")[0] in str(raised.value)


async def test_open_memory_reads_the_file_unless_given_a_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "cairn.toml").write_text(
        '[memory]\nrecall_k = 3\ntimezone = "Asia/Shanghai"\n', encoding="utf-8"
    )
    monkeypatch.setenv("CAIRN_MEMORY_BUDGET_BYTES", "3000")
    with trio.fail_after(60):
        async with open_memory(
            data, clock=FixedDomainClock(), embedder=HashingEmbedder()
        ) as memory:
            config = runtime_core(memory).config
        assert (config.recall_k, config.timezone, config.budget_bytes) == (
            3,
            "Asia/Shanghai",
            3000,
        )
        async with open_memory(
            data, TEST_CONFIG, clock=FixedDomainClock(), embedder=HashingEmbedder()
        ) as memory:
            assert runtime_core(memory).config is TEST_CONFIG


def _cli(*args: str, data: Path) -> Any:
    context = CliContext(data_dir=data, clock=FixedDomainClock())
    return CliRunner().invoke(app, list(args), obj=context, catch_exceptions=False)


def test_config_show_and_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cairn.toml").write_text(
        "[memory]\nrecall_k = 4\n[embedding]\nmax_batch_size = 8\n", encoding="utf-8"
    )
    monkeypatch.setenv("CAIRN_MEMORY_SYNCHRONOUS_FULL", "true")
    shown = _cli("config", "show", "--json", data=tmp_path)
    assert shown.exit_code == 0, shown.stderr
    report = json.loads(shown.stdout)
    file_source = f"{tmp_path / 'cairn.toml'} [memory]"
    assert report["memory"]["recall_k"] == {"value": 4, "source": file_source}
    assert report["memory"]["synchronous_full"] == {
        "value": True,
        "source": "CAIRN_MEMORY_SYNCHRONOUS_FULL",
    }
    assert report["memory"]["rrf_k"]["source"] == "default"
    assert report["embedding"]["max_batch_size"]["value"] == 8
    assert set(report["memory"]) == set(MEMORY_SCHEMA.fields)
    assert _cli("config", "check", data=tmp_path).exit_code == 0

    monkeypatch.setenv("CAIRN_MEMORY_RECALL_K", "-1")
    bad = _cli("config", "check", data=tmp_path)
    assert bad.exit_code == 2
    assert bad.stderr == (
        "cairn: CAIRN_MEMORY_RECALL_K: recall_k must be positive, not -1\n"
    )
    assert bad.stdout == ""
