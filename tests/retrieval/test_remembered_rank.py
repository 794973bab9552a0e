"""A remembered claim has no turn behind it: it is its own only record, so a recall of
its words finds it above turns that only resemble the query."""

from __future__ import annotations

import datetime as dt

from tests.helpers import BASE_TIME, turn

from cairn import Memory

# Twelve turns whose words resemble the remembered one's (the hashing embedder puts them
# next to it), none sharing it: each is a vector neighbour ranked with its claim.
NOVELS = [
    f"I enjoy reading Zx{syllables} novels."
    for syllables in (
        "bababa",
        "cababa",
        "dababa",
        "fababa",
        "gababa",
        "hababa",
        "jababa",
        "lababa",
        "mababa",
        "nababa",
        "pababa",
        "rababa",
    )
]


async def test_a_remembered_claim_is_recalled_by_its_own_words_above_lookalike_turns(
    memory: Memory,
) -> None:
    await memory.ingest(
        "a",
        [
            turn(f"t{i}", text, at=BASE_TIME + dt.timedelta(minutes=i))
            for i, text in enumerate(NOVELS)
        ],
    )
    await memory.wait_idle("a")
    remembered = await memory.remember("a", "Ana's boat is called Zxkababa", by="user")
    # At once (its vector not yet written: found by its words alone) and once embedded.
    for settle in (False, True):
        if settle:
            await memory.wait_idle("a")
        recall = await memory.recall("a", "Zxkababa")
        assert recall.items[0].id == remembered.claim_id, (settle, recall.items)
