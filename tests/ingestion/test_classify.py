"""The intake classifier: a turn is noise only when all of it is noise, in English and
Chinese; anything with a fact or a question in it is content."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cairn.domain.evidence import EventKind, EvidenceClass
from cairn.ingestion.classify import classify_turn

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "evidence_noise.jsonl"

HEARTBEAT = EvidenceClass.HEARTBEAT
ACK = EvidenceClass.ACKNOWLEDGEMENT
LOG = EvidenceClass.LOG_LINE
TRACE = EvidenceClass.TRACEBACK
PROGRESS = EvidenceClass.PROGRESS
EMPTY = EvidenceClass.EMPTY
CONTENT = EvidenceClass.CONTENT


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("heartbeat", HEARTBEAT),
        ('{"type": "heartbeat", "seq": 7}', HEARTBEAT),
        ("ping", HEARTBEAT),
        # A timestamp's "T" and "Z" are no words that make it content.
        ("heartbeat ok 2026-11-05T10:01:30Z", HEARTBEAT),
        ("[10:01:30] ping", HEARTBEAT),
        ("心跳检测正常", HEARTBEAT),
        ("在吗", HEARTBEAT),
        ("ok", ACK),
        ("Thank you so much!", ACK),
        ("got it, thanks", ACK),
        ("好的", ACK),
        ("谢谢", ACK),
        ("收到", ACK),
        ("嗯嗯", ACK),
        # Farewells, and the name a turn addresses, say nothing either.
        ("Bye Joanna! Good luck!", ACK),
        ("Sure thing Nate! See you later!", ACK),
        ("Thanks, Mel!", ACK),
        ("Have a great day! Take care.", ACK),
        ("You too!", ACK),
        ("再见", ACK),
        ("2026-01-05 09:00:01,512 ERROR billing.worker: queue stalled", LOG),
        ("INFO:root:loaded 42 plugins", LOG),
        ('127.0.0.1 - - [05/Jan/2026:09:00:03 +0000] "GET / HTTP/1.1" 200 512', LOG),
        ("2026-01-05 09:00:01 [WARN] 同步服务 连接超时", LOG),
        (
            (
                'Traceback (most recent call last):\n  File "a.py", line 3, in <module>\n'
                "    x = int(s)\nValueError: invalid literal for int()"
            ),
            TRACE,
        ),
        ("TypeError: x is undefined\n    at main (app.js:4:2)", TRACE),
        ("50% done", PROGRESS),
        ("下载中 80%", PROGRESS),
        ("epoch 3/10 loss=0.23", PROGRESS),
        ("正在处理，请稍候…", PROGRESS),
        ("👍", EMPTY),
        ("...", EMPTY),
    ],
)
def test_each_kind_of_noise_is_recognised(text: str, expected: EvidenceClass) -> None:
    assert classify_turn(text, EventKind.MESSAGE) is expected


@pytest.mark.parametrize(
    "text",
    [
        "ok, my flight is at 9",
        "ok 9",
        "thanks for the book recommendation",
        "why does this fail: Traceback (most recent call last): KeyError: 'id'",
        (
            'why does this fail?\nTraceback (most recent call last):\n  File "a.py",'
            " line 1, in <module>\nKeyError: 'id'"
        ),
        "I'm 50% done with my thesis",
        "我的论文已经完成80%了",
        "Ping me when the report is ready",
        "heartbeat: the standup moved to 2026-11-05T10:00",
        "Error: I can't find my passport",
        "2026-01-05 meeting with the dentist at 10",
        "INFO: the museum is closed on Mondays",
        "好的，我下周一去上海出差",
        "收到，我的新地址是北京市朝阳区",
        "yes",
        "See you on Friday",
        "See you in Tokyo",
        "Thanks, Mel! Glad you like it.",
        "Good luck with the interview, Nate!",
        "Have a dog",
        "Joanna",
        "  1: buy milk\n  2: call mum",
    ],
)
def test_a_turn_with_anything_worth_keeping_is_content(text: str) -> None:
    assert classify_turn(text, EventKind.MESSAGE) is CONTENT


def test_tool_results_are_classified_and_task_events_keep_their_own_handling() -> None:
    assert classify_turn("50% done", EventKind.TOOL_RESULT) is PROGRESS
    for kind in (EventKind.TASK_STARTED, EventKind.TASK_FAILED, EventKind.NEEDS_INPUT):
        assert classify_turn("ok", kind) is CONTENT


def test_the_labelled_corpus_is_classified_as_labelled() -> None:
    rows = [json.loads(line) for line in CORPUS.read_text("utf-8").splitlines()]
    assert len(rows) >= 120
    assert {row["lang"] for row in rows} == {"en", "zh"}
    wrong = [
        (row["id"], row["label"], got.value)
        for row in rows
        if row.get("split", "corpus") == "corpus"
        and (got := classify_turn(row["text"], EventKind(row["kind"]))).value
        != row["label"]
    ]
    assert wrong == []
    # Turns written after the rules: a miss may keep noise, never hide a fact.
    hidden = [
        row["id"]
        for row in rows
        if row["label"] == "content"
        and classify_turn(row["text"], EventKind(row["kind"])).is_noise
    ]
    assert hidden == []


def test_a_turn_past_what_the_rules_read_is_content() -> None:
    log = "2026-01-05 09:00:01 INFO sync.worker: batch done\n"
    assert classify_turn(log * 400, EventKind.MESSAGE) is LOG
    # More lines, or one line longer than any log record: kept as content, unread.
    assert classify_turn(log * 401, EventKind.MESSAGE) is CONTENT
    assert classify_turn(log + "INFO:root:" + "x" * 1000, EventKind.MESSAGE) is CONTENT
    assert classify_turn("👍" * 1001, EventKind.MESSAGE) is CONTENT
