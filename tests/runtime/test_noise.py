"""Junk turns stay stored but out of recall: heartbeats, bare acknowledgements, log
lines, tracebacks, progress output and wordless turns are kept as evidence (status,
export, forget) and come back only with ``include_noise``; the hard cases next to them
(an "ok" with a fact, a traceback asked about) are recalled as ever."""

from __future__ import annotations

import datetime as dt
import json
from importlib import resources
from typing import TYPE_CHECKING

import apsw
import pytest
from tests.conftest import open_test_memory
from tests.helpers import turn

from cairn.runtime.transfer import export_memory, import_memory
from cairn.store import connection as store_connection
from cairn.store.connection import open_connection
from cairn.store.evidence import event_fts_row, write_event_fts
from cairn.store.search import LexicalSearcher
from cairn.testing import HashingEmbedder

if TYPE_CHECKING:
    from pathlib import Path

    from cairn import Memory

AT = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
# One turn of every noise class in English and Chinese, and the words a recall of it uses.
NOISE = [
    ("heartbeat", "[heartbeat] seq=41 status=alive", "heartbeat alive"),
    ("heartbeat-zh", "心跳检测正常", "心跳"),
    ("ack", "ok thanks!", "ok thanks"),
    ("ack-zh", "好的，谢谢！", "谢谢"),
    (
        "log",
        "2026-01-05 09:00:01,512 ERROR billing.worker: invoice queue stalled",
        "invoice queue stalled",
    ),
    (
        "log-zh",
        "2026-01-05 09:00:01 [WARN] 同步服务 连接超时",
        "同步服务连接超时",
    ),
    (
        "trace",
        (
            "Traceback (most recent call last):\n"
            '  File "sync.py", line 12, in <module>\n'
            "    push(batch)\n"
            "ValueError: malformed invoice batch"
        ),
        "malformed invoice batch",
    ),
    ("progress", "Downloading invoices... 45%", "downloading invoices"),
    ("progress-zh", "下载中 80%", "下载"),
    ("empty", "👍👍", "👍"),
]
# Valid facts that look like noise at first sight.
HARD_CASES = [
    ("flight", "ok, my flight is at 9", "when is my flight"),
    (
        "question",
        (
            "why does this fail: Traceback (most recent call last): ValueError:"
            " malformed passport scan"
        ),
        "passport scan fails",
    ),
    ("thesis", "I'm 50% done with my thesis on coral reefs", "thesis coral reefs"),
    ("trip-zh", "好的，我下周一去上海出差", "上海出差"),
    ("thanks-fact", "thanks! by the way I moved to Porto last month", "moved to Porto"),
]


async def _recalled(
    memory: Memory, query: str, *, include_noise: bool = False
) -> set[str]:
    recall = await memory.recall(
        "a", query, k=20, include_noise=include_noise, wait_s=60.0
    )
    return {ref for item in recall.items for ref in (item.id, *item.source_refs)}


@pytest.mark.parametrize(("event_id", "text", "query"), NOISE)
async def test_each_kind_of_noise_is_kept_out_of_recall_until_asked_for(
    memory: Memory, event_id: str, text: str, query: str
) -> None:
    await memory.ingest(
        "a",
        [turn("fact", "My sister Ana lives in Lisbon."), turn(event_id, text)],
    )
    await memory.wait_idle("a")

    assert event_id not in await _recalled(memory, query)
    assert event_id in await _recalled(memory, query, include_noise=True)


@pytest.mark.parametrize(("event_id", "text", "query"), HARD_CASES)
async def test_a_fact_that_looks_like_noise_is_still_recalled(
    memory: Memory, event_id: str, text: str, query: str
) -> None:
    await memory.ingest("a", [turn(event_id, text), turn("ack", "ok")])
    await memory.wait_idle("a")

    assert event_id in await _recalled(memory, query)


async def test_the_vector_path_never_proposes_a_noise_turn(memory: Memory) -> None:
    text = "2026-01-05 09:00:01,512 ERROR billing.worker: invoice queue stalled"
    await memory.ingest("a", [turn("log", text), turn("fact", "Ana likes oolong tea.")])
    await memory.wait_idle("a")
    # The turn's own embedding as the query vector, with words nothing matches
    # lexically: only the vector path can find it.
    vector = (await HashingEmbedder().embed_documents([f"Ana: {text}"]))[0]

    plain = await memory.recall("a", "zzyzx", query_vector=vector, k=5)
    noisy = await memory.recall(
        "a", "zzyzx", query_vector=vector, k=5, include_noise=True
    )

    assert "log" not in {item.id for item in plain.items}
    assert "log" in {item.id for item in noisy.items}


async def test_a_noise_turn_is_forgotten_by_the_id_recall_shows(
    memory: Memory, data_dir: Path
) -> None:
    await memory.ingest(
        "a", [turn("hb", "heartbeat ping"), turn("f", "I own a kayak.")]
    )
    await memory.wait_idle("a")
    shown = await memory.recall("a", "heartbeat", include_noise=True)
    (item,) = [item for item in shown.items if item.id == "hb"]

    result = await memory.forget("a", item.id)

    assert result.turns_removed == ("hb",)
    assert "hb" not in await _recalled(memory, "heartbeat ping", include_noise=True)
    status = await memory.status()
    assert status.agent("a").events_noise == 0
    connection = open_connection(data_dir / "cairn.db")
    try:
        row = connection.execute("SELECT count(*) FROM events").fetchone()
    finally:
        connection.close()
    assert row is not None
    assert row[0] == 1


async def test_noise_is_counted_in_status_and_stays_noise_through_export_and_import(
    memory: Memory, tmp_path: Path
) -> None:
    await memory.ingest(
        "a",
        [
            turn("hb", "heartbeat"),
            turn("ok", "ok"),
            turn("fact", "I moved to Porto last month."),
        ],
    )
    await memory.wait_idle("a")
    assert (await memory.status()).agent("a").events_noise == 2
    backup = tmp_path / "backup.jsonl"
    with backup.open("w", encoding="utf-8") as sink:
        await export_memory(memory, sink)
    records = [json.loads(line) for line in backup.read_text().splitlines()]
    noise = {r["id"]: r.get("noise") for r in records if r.get("type") == "event"}
    assert noise == {"hb": "heartbeat", "ok": "acknowledgement", "fact": None}

    async with open_test_memory(tmp_path / "restored") as restored:
        await import_memory(restored, backup)
        await restored.wait_idle("a")
        assert (await restored.status()).agent("a").events_noise == 2
        recall = await restored.recall("a", "heartbeat ok Porto", k=20)
        assert {item.id for item in recall.items} & {"hb", "ok"} == set()
        assert "fact" in {ref for item in recall.items for ref in item.source_refs}


async def test_noise_turns_reach_no_extractor_and_settle_with_their_batch(
    memory: Memory, data_dir: Path
) -> None:
    # A log line the rule extractor would otherwise read a residence from.
    log = "2026-01-05 09:00:01 INFO profile.sync: I live in Paris"
    await memory.ingest("a", [turn("log", log), turn("fact", "I live in Lisbon.")])
    await memory.wait_idle("a")

    connection = open_connection(data_dir / "cairn.db")
    try:
        claims = [str(row[0]) for row in connection.execute("SELECT text FROM claims")]
        states = dict(connection.execute("SELECT event_id, extracted FROM events"))
    finally:
        connection.close()
    assert any("Lisbon" in claim for claim in claims)
    assert not any("Paris" in claim for claim in claims)
    # Discarded by name: the batch committed and both turns are settled.
    assert states == {"log": 1, "fact": 1}


def test_noise_is_filtered_before_the_lexical_limit(tmp_path: Path) -> None:
    connection = open_connection(tmp_path / "cairn.db")
    try:
        with connection:
            connection.execute(
                "INSERT INTO agents (agent_id, created_at) VALUES ('a', '2026-01-05')"
            )
            # Five noise rows that match better (shorter rows) than the one content row.
            rows = [("content", "the invoice queue of Ana's shop stalled again")] + [
                ("log_line", "invoice queue") for _ in range(5)
            ]
            for number, (evidence_class, text) in enumerate(rows, start=1):
                connection.execute(
                    "INSERT INTO events (rowid, agent_id, event_id, session_id, role,"
                    " kind, text, content_hash, occurred_at, received_at,"
                    " evidence_class) VALUES (?, 'a', ?, 's', 'user', 'message', ?,"
                    " ?, '2026-01-05T09:00:00+00:00', '2026-01-05T09:00:00+00:00', ?)",
                    (number, f"e{number}", text, f"h{number}", evidence_class),
                )
                write_event_fts(
                    connection,
                    number,
                    event_fts_row("a", None, text, AT, None),
                )
        searcher = LexicalSearcher(connection)
        hits = searcher.search_events("a", ["invoice", "queue"], 1).hits
        noisy = searcher.search_events("a", ["invoice", "queue"], 6, noise=True).hits
    finally:
        connection.close()
    assert [hit.rowid for hit in hits] == [1]
    assert len(noisy) == 6
    assert noisy[-1].rowid == 1


def test_turns_stored_before_the_evidence_class_stay_content(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    connection = apsw.Connection(str(path))
    package = resources.files("cairn.store") / "migrations"
    names = [name for name, _ in store_connection._MIGRATIONS]
    before = names.index("0015_evidence_class.sql")
    for index, (name, step) in enumerate(store_connection._MIGRATIONS[:before]):
        with connection:
            connection.execute((package / name).read_text(encoding="utf-8"))
            if step is not None:
                step(connection)
            connection.pragma("user_version", index + 1)
    with connection:
        connection.execute(
            "INSERT INTO agents (agent_id, created_at) VALUES ('a', '2026-01-05')"
        )
        connection.execute(
            "INSERT INTO events (agent_id, event_id, session_id, role, kind, text,"
            " content_hash, occurred_at, received_at) VALUES ('a', 'old', 's', 'user',"
            " 'message', 'ok', 'h', '2026-01-05T09:00:00+00:00',"
            " '2026-01-05T09:00:00+00:00')"
        )
    connection.close()

    migrated = open_connection(path)
    try:
        row = migrated.execute(
            "SELECT evidence_class FROM events WHERE event_id = 'old'"
        ).fetchone()
    finally:
        migrated.close()
    assert row == ("content",)
