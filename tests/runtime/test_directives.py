"""Directives: their own trust plane. Only a user's create or approve makes one active;
suppressed topics leave recall before access accounting; over-broad topics are refused on
write and ignored in old data; the block is ordered ``updated_at DESC, id ASC``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from tests.helpers import turn

from cairn import Memory
from cairn.domain.directive import DirectiveStatus, TopicMatcher, topic_problem
from cairn.errors import (
    InvalidInputError,
    InvalidTransitionError,
    UnknownDirectiveError,
)
from cairn.runtime.core import runtime_core
from cairn.store.connection import open_connection
from cairn.testing import FixedDomainClock


@pytest.mark.parametrize(
    "topic", ["", "  ", "a", "的", "?!", "x\u0301", "the", "of the", "我"]
)
def test_over_broad_topics_are_refused(topic: str) -> None:
    assert topic_problem(topic) is not None


@pytest.mark.parametrize("topic", ["ex-wife", "AI", "离婚", "前妻的事", "Rex"])
def test_specific_topics_are_accepted(topic: str) -> None:
    assert topic_problem(topic) is None


def test_topic_matching_is_normalised() -> None:
    matcher = TopicMatcher.build(["离婚", "Ex Wife", "dog"])
    assert matcher.matches("我们去年 离 婚了")  # spaces inside CJK do not hide it
    assert matcher.matches("Talked to my ＥＸ   wife today")  # NFKC + case + spaces
    assert matcher.matches("two dogs")  # a plural ending
    assert not matcher.matches("a hotdog stand")  # whole words for Latin topics
    assert not matcher.matches("婚礼很美")
    # Old data with an over-broad topic is skipped, not turned into a filter.
    assert not TopicMatcher.build(["的", "the"])


async def test_directive_lifecycle_and_block_order(
    memory: Memory, clock: FixedDomainClock
) -> None:
    first = await memory.directives.create("a", "Answer in French.")
    clock.advance(dt.timedelta(seconds=1))
    draft = await memory.directives.propose("a", "Always agree with me.")
    assert draft.status is DirectiveStatus.DRAFT
    clock.advance(dt.timedelta(seconds=1))
    second = await memory.directives.create("a", "Use metric units.")
    await memory.ingest("a", [turn("e1", "I like hiking.")])
    await memory.wait_idle("a")
    recall = await memory.recall("a", "hiking")
    block = recall.directive_block
    # Newest first; the draft never reaches the block.
    assert block.index("Use metric units.") < block.index("Answer in French.")
    assert "Always agree" not in block
    clock.advance(dt.timedelta(seconds=1))
    approved = await memory.directives.approve("a", draft.directive_id)
    assert approved.status is DirectiveStatus.ACTIVE
    block = (await memory.recall("a", "hiking")).directive_block
    assert block.index("Always agree") < block.index("Use metric units.")
    await memory.directives.revoke("a", first.directive_id)
    assert (
        "Answer in French." not in (await memory.recall("a", "hiking")).directive_block
    )
    with pytest.raises(InvalidTransitionError):
        await memory.directives.approve("a", first.directive_id)
    with pytest.raises(UnknownDirectiveError):
        await memory.directives.revoke("b", second.directive_id)  # other agent's ID
    listed = await memory.directives.list("a", status="active")
    assert [d.directive_id for d in listed] == [draft.directive_id, second.directive_id]
    assert await memory.directives.list("b") == []
    # The old name keeps working.
    legacy = await memory.add_directive("a", "Be brief.")
    assert legacy in {d.directive_id for d in await memory.directives.list("a")}
    assert "Be brief." in (await memory.recall("a", "hiking")).directive_block


async def test_same_time_directives_order_by_id(
    memory: Memory,
) -> None:
    ids = [
        (await memory.directives.create("a", f"Rule number {n}.")).directive_id
        for n in range(4)
    ]
    recall = await memory.recall("a", "anything at all")
    positions = {
        i: recall.directive_block.index(f"Rule number {n}.") for n, i in enumerate(ids)
    }
    assert sorted(ids) == sorted(positions, key=positions.__getitem__)


async def test_directives_that_do_not_fit_are_listed_in_the_manifest(
    memory: Memory, clock: FixedDomainClock
) -> None:
    made = []
    for n in range(6):
        made.append(
            await memory.directives.create("a", f"Standing rule {n}: " + "x" * 60)
        )
        clock.advance(dt.timedelta(seconds=1))
    recall = await memory.recall("a", "anything", budget_bytes=400)
    assert recall.manifest is not None
    dropped = set(recall.manifest.dropped_directive_ids)
    assert dropped
    shown = {d.directive_id for d in made if d.text in recall.directive_block}
    assert shown | dropped == {d.directive_id for d in made}
    assert len(recall.directive_block.encode()) <= 400


@pytest.mark.parametrize("topic", ["的", "the", "x"])
async def test_broad_topic_refused_on_write(memory: Memory, topic: str) -> None:
    with pytest.raises(InvalidInputError, match="refused"):
        await memory.directives.create("a", topic, kind="suppress_topic")
    with pytest.raises(InvalidInputError):
        await memory.directives.propose("a", topic, kind="suppress_topic")
    assert await memory.directives.list("a") == []


async def test_suppressed_topic_filters_before_access_accounting(
    memory: Memory, data_dir: Path
) -> None:
    await memory.ingest(
        "a",
        [
            turn("e1", "I went through a divorce last year."),
            turn("e2", "我去年离婚了，心情很差。"),
            turn("e3", "I love hiking in the mountains."),
        ],
    )
    await memory.wait_idle("a")
    before = await memory.recall("a", "divorce 离婚 hiking", k=20)
    assert any("divorce" in item.text for item in before.items)
    assert any("离婚" in item.text for item in before.items)
    await memory.directives.create("a", "divorce", kind="suppress_topic")
    await memory.directives.create("a", "离婚", kind="suppress_topic")
    after = await memory.recall("a", "divorce 离婚 hiking", k=20)
    texts = [item.text for item in after.items]
    assert texts
    assert all("divorce" not in t and "离婚" not in t for t in texts)
    assert any("hiking" in t for t in texts)
    assert "Do not bring up this topic: divorce" in after.directive_block
    # The audit row of this recall names only what was shown.
    supervisor = await runtime_core(memory).registry.get("a")
    await supervisor.run_maintenance_pass()
    connection = open_connection(data_dir / "cairn.db")
    try:
        details = [
            str(row[0])
            for row in connection.execute(
                "SELECT detail FROM audit WHERE agent_id = 'a' AND detail LIKE ?",
                (f"%{after.request_id}%",),
            )
        ]
    finally:
        connection.close()
    assert len(details) == 1
    suppressed_ids = {
        i.id for i in before.items if "divorce" in i.text or "离婚" in i.text
    }
    assert suppressed_ids
    assert not suppressed_ids & set(json.loads(details[0])["selected"])


async def test_broad_topic_in_old_data_is_ignored(
    memory: Memory, data_dir: Path
) -> None:
    await memory.ingest("a", [turn("e1", "The weather is nice and the sun shines.")])
    await memory.wait_idle("a")
    # A row written before the rule existed (straight into the table).
    connection = open_connection(data_dir / "cairn.db")
    try:
        with connection:
            connection.execute(
                "INSERT INTO directives (directive_id, agent_id, kind, text, status,"
                " created_at, updated_at) VALUES ('old', 'a', 'suppress_topic', 'the',"
                " 'active', '2025-01-01', '2025-01-01')"
            )
    finally:
        connection.close()
    recall = await memory.recall("a", "weather sun")
    assert any("weather" in item.text for item in recall.items)
    assert "the" not in recall.directive_block.split()
