"""The preceding turn is indexed with a reply, below the reply's own words: recall for what
a turn says ranks that turn above the reply that follows it, and still finds the reply."""

from __future__ import annotations

import pytest
from tests.helpers import turn

from cairn import Memory

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
