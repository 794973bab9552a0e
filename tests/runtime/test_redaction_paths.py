"""Every way into memory is redacted, not only turn text: remember (by a user or a model),
directive text, speakers, imported records; and an ID that holds a secret is refused, with
nothing of the call stored. ``by`` has no default anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers import turn

from cairn import Memory
from cairn.errors import InvalidInputError, SecretInIdentifierError
from cairn.runtime.transfer import ImportedDirectives, import_memory
from cairn.store.connection import open_connection
from cairn.store.export import header

KEY = "sk-proj-Qx7mN2pL9vR4tY6uI8oP0aS3dF5gH1jK"


def _database_bytes(data_dir: Path) -> bytes:
    connection = open_connection(data_dir / "cairn.db")
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        connection.close()
    return b"".join(path.read_bytes() for path in data_dir.glob("cairn.db*"))


async def test_a_models_remember_of_a_key_stores_the_marker(
    memory: Memory, data_dir: Path
) -> None:
    stored = await memory.remember("a", f"the user's OpenAI key is {KEY}", by="model")
    assert stored.claim_id is not None
    await memory.remember("a", "My password for the VPN is hunter2-Ravi!99", by="user")
    await memory.wait_idle("a")
    recall = await memory.recall("a", "OpenAI key VPN password", k=10)
    assert KEY not in recall.memory_block
    assert "[REDACTED:" in recall.memory_block
    assert "hunter2" not in recall.memory_block
    await memory.aclose()
    blob = _database_bytes(data_dir)
    assert KEY.encode() not in blob
    assert b"hunter2" not in blob


async def test_directive_text_is_redacted(memory: Memory) -> None:
    created = await memory.directives.create(
        "a", f"Always use the API key {KEY} when calling the service."
    )
    assert KEY not in created.text
    recall = await memory.recall("a", "anything", k=5)
    assert KEY not in recall.directive_block
    assert "[REDACTED:" in recall.directive_block


async def test_a_secret_bearing_id_is_refused_and_nothing_is_stored(
    memory: Memory,
) -> None:
    with pytest.raises(SecretInIdentifierError) as raised:
        await memory.ingest(
            "a",
            [turn("fine-1", "I like tea."), turn(f"msg-{KEY}", "I like coffee.")],
        )
    assert KEY not in str(raised.value)
    with pytest.raises(SecretInIdentifierError):
        await memory.ingest(
            "a", [turn("fine-2", "I like tea.", session=f"password={KEY}")]
        )
    with pytest.raises(SecretInIdentifierError):
        await memory.declare_session("a", f"token: {KEY}")
    await memory.wait_idle("a")
    assert not (await memory.recall("a", "tea coffee", k=5)).items


async def test_speaker_names_are_redacted(memory: Memory) -> None:
    await memory.ingest("a", [turn("s1", "I like tea.", speaker=f"bot token={KEY}")])
    await memory.wait_idle("a")
    recall = await memory.recall("a", "tea", k=5)
    assert recall.items
    assert KEY not in recall.memory_block


async def test_an_import_is_redacted_again(memory: Memory, tmp_path: Path) -> None:
    # An export written by an older cairn (or by hand) with secrets in its texts.
    lines = [
        header(),
        {
            "type": "event",
            "agent": "a",
            "id": "old-1",
            "session": "s1",
            "role": "user",
            "speaker": "Ravi",
            "text": "export DATABASE_PASSWORD=Pr0dDbPass!2024 and I like hiking",
            "at": None,
            "received_at": "2026-01-05T09:00:00+00:00",
            "extracted": False,
        },
        {
            "type": "directive",
            "agent": "a",
            "id": "d-old",
            "kind": "instruction",
            "text": f"Use the key {KEY}.",
            "status": "active",
            "created_at": "2026-01-05T09:00:00+00:00",
            "updated_at": "2026-01-05T09:00:00+00:00",
        },
        {
            "type": "event",
            "agent": "a",
            "id": f"id-{KEY}",
            "session": "s1",
            "role": "user",
            "speaker": None,
            "text": "harmless",
            "at": None,
            "received_at": "2026-01-05T09:00:00+00:00",
            "extracted": False,
        },
    ]
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    # Active as recorded, so the directive block below shows what was stored.
    summary = await import_memory(memory, path, directives=ImportedDirectives.ACTIVE)
    (rejected,) = summary.rejected
    assert rejected.line == 4
    assert rejected.reason is not None
    assert KEY not in rejected.reason
    recall = await memory.recall("a", "hiking database password", k=5)
    assert "Pr0dDbPass" not in recall.memory_block
    assert "hiking" in recall.memory_block
    assert KEY not in recall.directive_block


async def test_remember_requires_by(memory: Memory) -> None:
    with pytest.raises(TypeError):
        await memory.remember("a", "I like tea.")  # type: ignore[call-arg]
    with pytest.raises(InvalidInputError):
        await memory.remember("a", "I like tea.", by="host")


async def test_an_agent_id_holding_a_secret_gets_no_namespace(memory: Memory) -> None:
    with pytest.raises(SecretInIdentifierError):
        await memory.ingest(f"bot-{KEY}", [turn("e1", "I like tea.")])
    assert f"bot-{KEY}" not in [a.agent_id for a in (await memory.status()).agents]
