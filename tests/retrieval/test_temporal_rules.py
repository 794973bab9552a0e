"""The recall-time temporal rules (architecture §4), on ``eligibility`` and through a real
recall: a confident expired or not-yet-valid state is dropped; a low-confidence parse is
kept with less weight and "time uncertain"; an expired plan is "previously planned", a
future one "planned for ..."; events stay as history; a recurring claim shows its next
occurrence relative to the recall's moment, and is history once its window has ended."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import attrs
import pytest
from tests.conftest import TEST_CONFIG, open_test_memory
from tests.helpers import turn

from cairn import open_memory
from cairn.domain.claim import Claim, ClaimKind, Lifecycle, Origin
from cairn.domain.ids import EventId
from cairn.domain.scope import Scope
from cairn.domain.temporal import (
    Recurrence,
    RecurrenceKind,
    TemporalSpan,
    TimePrecision,
)
from cairn.retrieval.temporal import eligibility
from cairn.runtime.transfer import export_memory, import_memory
from cairn.store.export import FORMAT, FORMAT_VERSION
from cairn.testing import FixedDomainClock

if TYPE_CHECKING:
    from pathlib import Path

    import trio.testing

    from cairn import Memory
    from cairn.retrieval.types import RecallItem

NOW = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)  # a Sunday
BERLIN = "Europe/Berlin"


def _utc(*parts: int) -> dt.datetime:
    return dt.datetime(*parts, tzinfo=dt.UTC)  # type: ignore[misc]


def _span(
    start: dt.datetime | None, until: dt.datetime | None, confidence: float = 1.0
) -> TemporalSpan:
    return TemporalSpan(start, until, TimePrecision.DAY, "UTC", confidence)


MONDAYS = Recurrence(
    RecurrenceKind.WEEKLY, _utc(2026, 1, 1), BERLIN, weekdays=(0,), time=dt.time(9)
)
ENDED = attrs.evolve(MONDAYS, until=dt.datetime(2026, 2, 1, tzinfo=ZoneInfo(BERLIN)))


def _claim(
    kind: ClaimKind,
    temporal: TemporalSpan | None,
    recurrence: Recurrence | None = None,
) -> Claim:
    return Claim(
        rowid=1,
        claim_id="c1",
        kind=kind,
        lifecycle=Lifecycle.ACTIVE,
        origin=Origin.EXTRACTED,
        text="x",
        confidence=0.8,
        temporal=temporal,
        scope=Scope.agent(),
        revision=1,
        source_event_ids=(EventId("e1"),),
        recurrence=recurrence,
    )


def test_confident_expired_state_is_dropped() -> None:
    rule = eligibility(
        _claim(ClaimKind.STATE, _span(_utc(2026, 1, 1), _utc(2026, 2, 1))), NOW
    )
    assert not rule.eligible


def test_confident_not_yet_valid_state_is_dropped() -> None:
    rule = eligibility(_claim(ClaimKind.STATE, _span(_utc(2026, 4, 1), None)), NOW)
    assert not rule.eligible
    current = eligibility(_claim(ClaimKind.STATE, _span(_utc(2026, 2, 1), None)), NOW)
    assert (current.eligible, current.weight, current.qualifier) == (True, 1.0, None)


def test_low_confidence_parse_is_kept_with_less_weight() -> None:
    expired = _span(_utc(2026, 1, 1), _utc(2026, 2, 1), confidence=0.6)
    rule = eligibility(_claim(ClaimKind.STATE, expired), NOW)
    assert (rule.eligible, rule.weight, rule.qualifier) == (True, 0.7, "time uncertain")
    event = eligibility(_claim(ClaimKind.EVENT, expired), NOW)
    assert (event.eligible, event.weight, event.qualifier) == (
        True,
        0.7,
        "time uncertain",
    )


def test_expired_plan_is_previously_planned() -> None:
    span = _span(_utc(2026, 2, 10), _utc(2026, 2, 11))
    rule = eligibility(_claim(ClaimKind.PLAN, span), NOW)
    assert (rule.eligible, rule.qualifier) == (True, "previously planned")
    assert rule.weight == pytest.approx(0.8)


def test_future_plan_is_planned_for_its_day() -> None:
    span = _span(_utc(2026, 3, 10), _utc(2026, 3, 11))
    rule = eligibility(_claim(ClaimKind.PLAN, span), NOW)
    assert (rule.eligible, rule.weight, rule.qualifier) == (
        True,
        1.0,
        "planned for 2026-03-10",
    )


def test_events_stay_as_history() -> None:
    span = _span(_utc(2025, 5, 1), _utc(2025, 5, 2))
    rule = eligibility(_claim(ClaimKind.EVENT, span), NOW)
    assert (rule.eligible, rule.weight, rule.qualifier, rule.at) == (
        True,
        1.0,
        None,
        None,
    )


def test_recurring_claim_gets_its_next_occurrence() -> None:
    window = _span(MONDAYS.starts, None, confidence=0.9)
    rule = eligibility(_claim(ClaimKind.RECURRING, window, MONDAYS), NOW)
    assert rule.eligible
    assert rule.weight == 1.0
    assert rule.qualifier == "every Monday 09:00 (Europe/Berlin); next 2026-03-02 09:00"
    assert rule.at == _utc(2026, 3, 2, 8)
    assert rule.at is not None
    assert rule.at.isoformat() == "2026-03-02T09:00:00+01:00"  # the stated zone
    # The moment recall looks from decides, not the wall clock.
    later = eligibility(
        _claim(ClaimKind.RECURRING, window, MONDAYS), _utc(2026, 3, 2, 9)
    )
    assert later.qualifier is not None
    assert later.qualifier.endswith("next 2026-03-09 09:00")


def test_recurring_claim_whose_window_ended_is_history() -> None:
    window = _span(ENDED.starts, ENDED.until, confidence=0.9)
    assert not eligibility(_claim(ClaimKind.RECURRING, window, ENDED), NOW).eligible
    # A guess at the window fails open, marked as ended.
    guess = _span(ENDED.starts, ENDED.until, confidence=0.5)
    rule = eligibility(_claim(ClaimKind.RECURRING, guess, ENDED), NOW)
    assert rule.eligible
    assert rule.qualifier == (
        "every Monday 09:00 (Europe/Berlin) until 2026-01-31; ended"
    )
    # Before it ended, the same claim answers with its next occurrence.
    before = eligibility(_claim(ClaimKind.RECURRING, window, ENDED), _utc(2026, 1, 20))
    assert before.eligible
    assert before.qualifier is not None
    assert before.qualifier.endswith("next 2026-01-26 09:00")


# -- through a real recall --------------------------------------------------------------------


def _iso(moment: dt.datetime) -> str:
    return moment.isoformat()


def _records() -> list[dict[str, Any]]:
    """An export holding one claim per rule, each citing its own turn."""
    cases: list[tuple[str, str, str, dict[str, Any] | None, Recurrence | None]] = [
        ("expired", "state", "Ana kiwi lives in Porto", _t((1, 1), (2, 1)), None),
        ("future", "state", "Ana kiwi lives in Oslo", _t((4, 1), None), None),
        ("guess", "state", "Ana kiwi lives in Rome", _t((1, 1), (2, 1), 0.6), None),
        ("done", "plan", "Ana kiwi flies to Lima", _t((2, 10), (2, 11)), None),
        ("next", "plan", "Ana kiwi flies to Baku", _t((3, 10), (3, 11)), None),
        ("event", "event", "Ana kiwi visited Bern", _t((2, 1), (2, 2)), None),
        ("mondays", "recurring", "Ana kiwi swims every Monday", _w(None), MONDAYS),
        ("ended", "recurring", "Ana kiwi rows every Monday", _w(ENDED.until), ENDED),
    ]
    stamp = _iso(_utc(2026, 1, 1))
    records: list[dict[str, Any]] = [
        {"type": "header", "format": FORMAT, "version": FORMAT_VERSION}
    ]
    for name, kind, text, temporal, recurrence in cases:
        records.append(
            {
                "type": "event",
                "agent": "a",
                "id": f"e-{name}",
                "session": "s1",
                "role": "user",
                "speaker": "Ana",
                "text": text,
                "at": stamp,
                "received_at": stamp,
                "extracted": True,
            }
        )
        claim: dict[str, Any] = {
            "type": "claim",
            "agent": "a",
            "id": name,
            "kind": kind,
            "lifecycle": "active",
            "origin": "extracted",
            "text": text,
            "subject": "Ana",
            "predicate": None,
            "confidence": 0.85,
            "temporal": temporal,
            "scope": "agent",
            "scope_key": None,
            "revision": 1,
            "provenance_key": "0" * 64,
            "created_at": stamp,
            "updated_at": stamp,
            "sources": [{"event": f"e-{name}", "start": 0, "end": len(text)}],
        }
        if recurrence is not None:
            claim["recurrence"] = json.loads(recurrence.to_json())
        records.append(claim)
    return records


def _t(
    start: tuple[int, int], until: tuple[int, int] | None, confidence: float = 1.0
) -> dict[str, Any]:
    """A day-precision interval of 2026, bounds given as (month, day)."""
    return {
        "valid_from": _iso(_utc(2026, *start)),
        "valid_until": None if until is None else _iso(_utc(2026, *until)),
        "precision": "day",
        "timezone": "UTC",
        "confidence": confidence,
    }


def _w(until: dt.datetime | None) -> dict[str, Any]:
    return {
        "valid_from": _iso(MONDAYS.starts),
        "valid_until": None if until is None else _iso(until),
        "precision": "minute",
        "timezone": BERLIN,
        "confidence": 0.9,
    }


def _by_id(items: tuple[RecallItem, ...]) -> dict[str, RecallItem]:
    return {item.id: item for item in items if item.kind != "evidence"}


async def test_the_rules_hold_through_a_real_recall(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    export = tmp_path / "export.jsonl"
    export.write_text(
        "".join(json.dumps(record) + "\n" for record in _records()), encoding="utf-8"
    )
    clock = FixedDomainClock(NOW)
    async with open_test_memory(tmp_path / "data", clock=clock) as memory:
        summary = await import_memory(memory, export)
        assert summary.records["claim"].imported == 8, summary
        await memory.wait_idle("a")

        items = _by_id((await memory.recall("a", "kiwi", k=30)).items)
        assert set(items) == {"guess", "done", "next", "event", "mondays"}
        assert items["guess"].qualifier == "time uncertain"
        assert items["done"].qualifier == "previously planned"
        assert items["next"].qualifier == "planned for 2026-03-10"
        assert items["event"].qualifier is None
        assert items["mondays"].kind == "recurring"
        assert items["mondays"].qualifier == (
            "every Monday 09:00 (Europe/Berlin); next 2026-03-02 09:00"
        )
        assert items["mondays"].at == "2026-03-02T09:00:00+01:00"
        block = (await memory.recall("a", "kiwi", k=30)).memory_block
        assert (
            "[recurring, every Monday 09:00 (Europe/Berlin);"
            " next 2026-03-02 09:00] Ana kiwi swims every Monday"
        ) in block

        # The domain clock moves: the plan passes, the state begins, Monday comes round.
        clock.moment = _utc(2026, 4, 6, 9)
        items = _by_id((await memory.recall("a", "kiwi", k=30)).items)
        assert set(items) == {"guess", "done", "next", "event", "mondays", "future"}
        assert items["next"].qualifier == "previously planned"
        assert items["future"].qualifier is None
        assert items["mondays"].qualifier is not None
        assert items["mondays"].qualifier.endswith("next 2026-04-13 09:00")


async def _ingest_and_ask(
    memory: Memory, clock: FixedDomainClock, text: str, at: dt.datetime, query: str
) -> list[RecallItem]:
    await memory.ingest("a", [turn("e1", text, at=at)])
    await memory.wait_idle("a")
    recall = await memory.recall("a", query)
    return [item for item in recall.items if item.kind == "recurring"]


async def test_when_is_my_next_standup(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    said = _utc(2026, 12, 2, 10)  # Wednesday, 11:00 in Berlin
    clock = FixedDomainClock(said + dt.timedelta(hours=2))
    config = attrs.evolve(TEST_CONFIG, timezone=BERLIN)
    async with open_test_memory(tmp_path, config, clock=clock) as memory:
        (item,) = await _ingest_and_ask(
            memory,
            clock,
            "I have a standup at 9am every day.",
            said,
            "when is my next standup?",
        )
        assert item.text == "Ana has a standup at 9am every day"
        assert item.qualifier == (
            "every day 09:00 (Europe/Berlin); next 2026-12-03 09:00"
        )
        assert item.at == "2026-12-03T09:00:00+01:00"
        clock.moment = _utc(2026, 12, 3, 8, 30)  # 09:30 in Berlin: today's is over
        recall = await memory.recall("a", "when is my next standup?")
        (later,) = [item for item in recall.items if item.kind == "recurring"]
        assert later.qualifier is not None
        assert later.qualifier.endswith("next 2026-12-04 09:00")


async def test_when_do_i_go_swimming(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    said = dt.datetime(2026, 12, 1, 20, tzinfo=dt.UTC)  # Wednesday 04:00 in Shanghai
    clock = FixedDomainClock(said + dt.timedelta(hours=6))
    config = attrs.evolve(TEST_CONFIG, timezone="Asia/Shanghai")
    async with open_test_memory(tmp_path, config, clock=clock) as memory:
        (item,) = await _ingest_and_ask(
            memory, clock, "我每周四下午去游泳。", said, "我什么时候去游泳？"
        )
        assert item.text == "Ana每周四下午去游泳"
        assert item.qualifier == "every Thursday (Asia/Shanghai); next 2026-12-03"
        assert item.at == "2026-12-03T00:00:00+08:00"


async def test_a_recurrence_round_trips_and_a_malformed_one_rejects_its_record(
    tmp_path: Path, thread_safe_clock: trio.testing.MockClock
) -> None:
    records = _records()
    broken = {**records[-1], "id": "broken", "text": "Ana kiwi rows every Monday"}
    broken["recurrence"] = {**records[-1]["recurrence"], "weekdays": [9]}
    # The broken claim cites its own turn, so only the claim itself can be refused.
    turn_record = {**records[-2], "id": "e-broken"}
    broken["sources"] = [{"event": "e-broken", "start": 0, "end": len(broken["text"])}]
    source = tmp_path / "in.jsonl"
    lines = [*records, turn_record, broken]
    source.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    async with open_memory(
        tmp_path / "data", TEST_CONFIG, clock=FixedDomainClock(NOW)
    ) as memory:
        summary = await import_memory(memory, source)
        assert summary.records["claim"].imported == 8
        (rejected,) = summary.rejected
        assert (rejected.line, rejected.type) == (len(lines), "claim")
        assert rejected.reason is not None
        assert "malformed recurrence" in rejected.reason
        assert "0 (Monday) to 6" in rejected.reason
        out = tmp_path / "out.jsonl"
        with out.open("w", encoding="utf-8") as sink:
            await export_memory(memory, sink, "a")
    exported = {
        record["id"]: record
        for record in map(json.loads, out.read_text(encoding="utf-8").splitlines())
        if record.get("type") == "claim"
    }
    assert exported["mondays"]["recurrence"] == json.loads(MONDAYS.to_json())
    assert exported["ended"]["recurrence"] == json.loads(ENDED.to_json())
    assert "recurrence" not in exported["event"]  # other claims read as before
    # Importing the export again: every claim is a duplicate, none differs.
    async with open_memory(
        tmp_path / "data", TEST_CONFIG, clock=FixedDomainClock(NOW)
    ) as memory:
        again = await import_memory(memory, out)
        assert again.records["claim"].duplicate == 8
        assert again.rejected == ()
