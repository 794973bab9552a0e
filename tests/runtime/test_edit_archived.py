"""An edit rewinds extraction of its session; a claim the user archived from a later turn
of that session stays archived (and keeps its evidence) when the turn is extracted again."""

from __future__ import annotations

import datetime as dt

from tests.helpers import BASE_TIME, turn

from cairn import Memory, RecallItem


async def _claims_of(memory: Memory, word: str) -> list[RecallItem]:
    recall = await memory.recall("a", word)
    return [i for i in recall.items if i.kind != "evidence" and word in i.text]


async def test_an_archived_claim_stays_archived_through_an_edit_earlier_in_its_session(
    memory: Memory,
) -> None:
    await memory.ingest(
        "a",
        [
            turn("t1", "I enjoy reading Zxbababa novels."),
            turn(
                "t2",
                "I enjoy reading Zxcababa novels.",
                at=BASE_TIME + dt.timedelta(minutes=1),
            ),
        ],
    )
    await memory.wait_idle("a")
    (claim,) = await _claims_of(memory, "Zxcababa")
    await memory.archive("a", claim.id)
    await memory.ingest_event(
        "a",
        turn(
            "t3",
            "I enjoy reading Zxdababa novels.",
            at=BASE_TIME + dt.timedelta(minutes=2),
            replaces="t1",
        ),
    )
    await memory.wait_idle("a")
    recall = await memory.recall("a", "Zxcababa")
    assert [item.id for item in recall.items if "Zxcababa" in item.text] == ["t2"]
    restored = await memory.unarchive("a", claim.id)
    assert restored.lifecycle == "active"
    (again,) = await _claims_of(memory, "Zxcababa")
    assert again.id == claim.id
    assert again.source_refs == ("t2",)
