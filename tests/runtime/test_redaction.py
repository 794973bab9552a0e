"""Secrets never reach the database file, its WAL, the logs or a text provider's request:
intake redacts before anything is written, and evidence keeps only a marker."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from tests.conftest import open_test_memory
from tests.helpers import turn
from tests.providers.fakes import open_fake_server

from cairn.providers.http import open_http_client
from cairn.providers.http.text import HttpTextConfig
from cairn.providers.http.text_openai import OpenAICompatibleTextProvider

SECRETS = {
    "openai": "sk-proj-Qx7mN2pL9vR4tY6uI8oP0aS3dF5gH1jK",
    "github": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "password": "Tr0ub4dor&3-horse",
    "card": "4539 1488 0343 6467",
    "chinese_password": "qwe98765zz",
}

TURNS = [
    turn("e1", f"My OpenAI key is {SECRETS['openai']}, keep it safe."),
    turn("e2", f"export GITHUB_TOKEN={SECRETS['github']}"),
    turn("e3", f"The wifi password: {SECRETS['password']} and I love sailing."),
    turn("e4", f"Pay with card {SECRETS['card']} please."),
    turn("e5", f"我的密码是{SECRETS['chinese_password']}，别忘了。"),
    turn(
        "e6", f"tool output token={SECRETS['github']}", role="tool", kind="tool_result"
    ),
]


def _files_bytes(data_dir: Path) -> bytes:
    return b"".join(
        path.read_bytes()
        for path in sorted(data_dir.glob("cairn.db*"))
        if path.is_file()
    )


async def test_secrets_reach_no_file_log_or_provider(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    answer = {
        "claims": [],
        "corrections": [],
        "relations": [],
        "directive_drafts": [],
        "discarded_event_ids": [t.event_id for t in TURNS],
    }
    async with (
        open_fake_server(chat_content=json.dumps(answer)) as server,
        open_http_client(trust_env=False) as client,
    ):
        provider = OpenAICompatibleTextProvider(
            client, HttpTextConfig(base_url=server.base_url, model="fake-chat")
        )
        async with open_test_memory(tmp_path, text_provider=provider) as memory:
            report = await memory.ingest("a", TURNS)
            assert [r.redactions >= 1 for r in report.results] == [True] * len(TURNS)
            await memory.wait_idle("a")
            # Before close: the WAL still holds the recent pages.
            assert (tmp_path / "cairn.db-wal").exists()
            on_disk = _files_bytes(tmp_path)
            recall = await memory.recall("a", "sailing wifi password")
            status = await memory.status()
        assert server.requests, "the provider was asked"
        sent = json.dumps([request.body for request in server.requests])
    on_disk += _files_bytes(tmp_path)
    for name, secret in SECRETS.items():
        for needle in {secret, secret.replace(" ", "")}:
            assert needle.encode() not in on_disk, name
            assert needle not in sent, name
            assert needle not in caplog.text, name
            assert needle not in repr(status), name
            assert all(needle not in item.text for item in recall.items), name
    assert b"[REDACTED:api_key]" in on_disk
    assert "[REDACTED:" in sent
    assert "I love sailing" in sent
