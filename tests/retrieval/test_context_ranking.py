"""The preceding turn is indexed with a reply, below the reply's own words: recall for what
a turn says ranks that turn above the reply that follows it, and still finds the reply."""

from __future__ import annotations

import datetime as dt

import pytest
from tests.helpers import BASE_TIME, turn

from cairn import Memory
from cairn.runtime.core import runtime_core
from cairn.runtime.database import Reader
from cairn.store.evidence import load_events
from cairn.store.search import LexicalSearcher

# The turn before the one that says it is long (its row is long), the reply is short: with
# the preceding turn indexed as the reply's own words, bm25's length normalisation put the
# reply first.
CONVERSATIONS = {
    "zh": (
        [
            (
                "Bo",
                (
                    "最近工作特别忙，每天加班到很晚，周末也要去公司开会，"
                    "感觉整个人都累坏了，真想好好休息一下。"
                ),
            ),
            ("Ana", "我每天早上都喝咖啡。"),
            ("Bo", "真不错！"),
            ("Ana", "周末我们去爬山吧。"),
        ],
        "咖啡",
    ),
    "en": (
        [
            (
                "Bo",
                (
                    "Work has been crazy lately, I stay late at the office every night"
                    " and even the weekends are full of meetings with the whole team."
                ),
            ),
            ("Ana", "I took up the cello last spring."),
            ("Bo", "Wow, good for you!"),
            ("Ana", "Shall we go hiking on Saturday?"),
        ],
        "cello",
    ),
}


def _first_position(items: list[tuple[str, ...]], event_id: str) -> int:
    return next(i for i, refs in enumerate(items) if event_id in refs)


@pytest.mark.parametrize("language", sorted(CONVERSATIONS))
async def test_the_turn_that_says_it_outranks_the_reply_after_it(
    memory: Memory, language: str
) -> None:
    lines, query = CONVERSATIONS[language]
    await memory.ingest(
        "a",
        [
            turn(f"t{index}", text, speaker=speaker)
            for index, (speaker, text) in enumerate(lines)
        ],
    )
    await memory.wait_idle("a")
    recall = await memory.recall("a", query, k=10)
    assert recall.status == "ok"
    refs = [item.source_refs for item in recall.items]
    # The reply is still found through the turn it answers ...
    assert any("t2" in item for item in refs)
    # ... but ranks below the turn that says the words.
    assert _first_position(refs, "t1") < _first_position(refs, "t2")


@pytest.mark.parametrize(
    ("gap", "answers"),
    [(dt.timedelta(minutes=2), True), (dt.timedelta(days=38), False)],
)
async def test_a_session_picked_up_weeks_later_starts_afresh(
    memory: Memory, gap: dt.timedelta, answers: bool
) -> None:
    # Both said by Ana in one session: minutes apart the second is read with the first
    # (a reply, found by its words too); weeks apart it is a new subject, and a question
    # about Longjing must not find the move to Berlin.
    await memory.ingest(
        "a",
        [
            turn("t1", "My favourite tea is Longjing.", at=BASE_TIME),
            turn("t2", "Big news: I moved to Berlin.", at=BASE_TIME + gap),
        ],
    )
    await memory.wait_idle("a")

    def read(reader: Reader) -> tuple[str | None, list[int]]:
        (event,) = load_events(reader.connection, "a", [2]).values()
        hits = LexicalSearcher(reader.connection).search_events("a", ["longjing"], 10)
        return event.context, [hit.rowid for hit in hits.hits]

    context, hits = await runtime_core(memory).database.read(read)
    assert (context is not None) is answers
    assert hits == ([1, 2] if answers else [1])
