"""Knowledge-update benchmark: after a fact changes, does recall answer with the new value?

    python bench/knowledge_update.py [--cases FILE] [--data DIR] [--embedder hashing|local]
                                     [--wait-s S] [--maintenance-passes N] [--verbose]

Prints one JSON object. Uses the public API only (``open_memory``, ``Memory.ingest``,
``wait_idle``, ``recall`` and the export of ``cairn export``), so the same script scores
an older checkout: ``PYTHONPATH=/path/to/checkout/src python bench/knowledge_update.py``.

Cases file (default ``knowledge_update.jsonl`` next to this script): UTF-8 JSON lines, one
sequence per line, blank lines and lines starting with ``#`` ignored::

    {"id": "en-move-01",               # unique; the agent is "ku-<id>"
     "language": "en",                 # any label; reported per language
     "category": "move",               # any label; reported per category
     "speaker": "Mei",                 # the user's name: speaker of every user turn
     "sessions": [                     # in conversation order
       {"id": "s1", "at": "2024-01-08T09:00:00Z",   # ISO time with a zone
        "turns": [{"role": "user", "text": "I live in Berlin."},
                  {"role": "assistant", "text": "...", "at"?: "...", "speaker"?: "..."}]},
       ...],
     "ingest_order": ["s2", "s1"],     # optional: sessions in the order they arrive
     "asked_at": "2024-03-13T00:00:00Z",   # optional: when the questions are asked
     "questions": [{"question": "Where does Mei live now?",
                    "current": ["Lisbon"],          # any of these is the right answer
                    "stale": ["Berlin"]}]}          # values that no longer hold

A turn's time is its own ``at``, else its session's ``at`` plus two minutes per turn
before it. Sessions are ingested one at a time in ``ingest_order`` (default: as listed),
each followed by ``wait_idle``, so an out-of-order case really delivers the newer evidence
first; the evidence times say which value is current. With ``--maintenance-passes N``
the timed maintenance is off and, after a case's sessions, N maintenance passes run over
the agent (the dirty claims go through every registered pass, cairn.maintenance) before
its questions are asked: "after maintenance" rather than whenever the timer fired. ``asked_at`` defaults to one hour
after the latest turn; cases run in ``asked_at`` order on one clock.

Scoring, per question: one ``recall`` with a generous ``wait_s`` (pending is not what is
measured) and the default ``k``. Values match as case-insensitive substrings. The question
**passes** iff the first item mentions a current value and is not marked history, and
every item that mentions a stale value but no current value is marked history.
``item.standing`` (``"current"``, ``"history"`` or absent/``None``) is read with
``getattr`` so the script also runs on code without it.

Chain diagnostic, per question, from the agent's export: the attribute is the
``(subject, predicate)`` of an active claim that mentions a current value; the chain holds
iff some claim with that pair mentioning only a stale value is superseded and no active
claim with that pair mentions only a stale value. It measures the extraction and
supersession underneath the ranking.

Output: overall pass and chain fractions (and ``first_current``: the first item mentions
a current value, history marking aside), the same per category, language and arrival
(in order / out of order), and the IDs of failing questions and broken chains;
``--verbose`` adds each failing question's reason and top items.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import trio

from cairn import MemoryConfig, Turn, open_memory
from cairn.testing import FixedDomainClock, HashingEmbedder

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

DEFAULT_CASES = Path(__file__).with_name("knowledge_update.jsonl")
TURN_SPACING = dt.timedelta(minutes=2)
ASKED_AFTER = dt.timedelta(hours=1)
TOP_SHOWN = 5


@attrs.frozen
class Question:
    question: str
    current: tuple[str, ...]
    stale: tuple[str, ...]


@attrs.frozen
class CaseTurn:
    event_id: str
    session_id: str
    role: str
    text: str
    at: dt.datetime
    speaker: str | None


@attrs.frozen
class Case:
    id: str
    language: str
    category: str
    speaker: str
    sessions: tuple[tuple[str, tuple[CaseTurn, ...]], ...]  # in ingestion order
    out_of_order: bool
    asked_at: dt.datetime
    questions: tuple[Question, ...]

    @property
    def agent(self) -> str:
        return f"ku-{self.id}"


# -- the cases file ---------------------------------------------------------------------------


class CaseError(ValueError):
    """A malformed cases file; the message names the line."""


def _time(value: object, where: str) -> dt.datetime:
    if not isinstance(value, str):
        raise CaseError(f"{where}: expected an ISO time string, got {value!r}")
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError as error:
        raise CaseError(f"{where}: {error}") from error
    if parsed.utcoffset() is None:
        raise CaseError(f"{where}: time {value!r} has no zone")
    return parsed


def _text(record: dict[str, Any], name: str, where: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value.strip():
        raise CaseError(f"{where}: {name!r} must be a non-empty string")
    return value


def _values(record: dict[str, Any], name: str, where: str) -> tuple[str, ...]:
    value = record.get(name)
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and v.strip() for v in value)
    ):
        raise CaseError(f"{where}: {name!r} must be a non-empty list of strings")
    return tuple(value)


def parse_case(record: dict[str, Any], where: str = "case") -> Case:
    """One case from its JSON object; raises :class:`CaseError` naming what is wrong."""
    case_id = _text(record, "id", where)
    where = f"{where} ({case_id})"
    speaker = _text(record, "speaker", where)
    raw_sessions = record.get("sessions")
    if not isinstance(raw_sessions, list) or not raw_sessions:
        raise CaseError(f"{where}: 'sessions' must be a non-empty list")
    sessions: dict[str, tuple[CaseTurn, ...]] = {}
    for number, raw in enumerate(raw_sessions, 1):
        at_where = f"{where} session {number}"
        session = _text(raw, "id", at_where)
        if session in sessions:
            raise CaseError(f"{at_where}: session id {session!r} repeats")
        start = _time(raw.get("at"), at_where)
        turns = raw.get("turns")
        if not isinstance(turns, list) or not turns:
            raise CaseError(f"{at_where}: 'turns' must be a non-empty list")
        built = []
        for index, turn in enumerate(turns):
            turn_where = f"{at_where} turn {index + 1}"
            role = _text(turn, "role", turn_where)
            if role not in {"user", "assistant"}:
                raise CaseError(f"{turn_where}: role must be 'user' or 'assistant'")
            at = (
                _time(turn["at"], turn_where)
                if "at" in turn
                else start + index * TURN_SPACING
            )
            built.append(
                CaseTurn(
                    event_id=f"{case_id}-{session}-{index}",
                    session_id=f"{case_id}-{session}",
                    role=role,
                    text=_text(turn, "text", turn_where),
                    at=at,
                    speaker=turn.get("speaker", speaker if role == "user" else None),
                )
            )
        sessions[session] = tuple(built)
    order = record.get("ingest_order", list(sessions))
    if not isinstance(order, list) or sorted(order) != sorted(sessions):
        raise CaseError(
            f"{where}: 'ingest_order' must list each session id once: {list(sessions)}"
        )
    questions = record.get("questions")
    if not isinstance(questions, list) or not questions:
        raise CaseError(f"{where}: 'questions' must be a non-empty list")
    parsed_questions = tuple(
        Question(
            question=_text(q, "question", f"{where} question {n}"),
            current=_values(q, "current", f"{where} question {n}"),
            stale=_values(q, "stale", f"{where} question {n}"),
        )
        for n, q in enumerate(questions, 1)
    )
    latest = max(turn.at for turns in sessions.values() for turn in turns)
    asked_at = (
        _time(record["asked_at"], where)
        if "asked_at" in record
        else latest + ASKED_AFTER
    )
    return Case(
        id=case_id,
        language=str(record.get("language", "unknown")),
        category=str(record.get("category", "unknown")),
        speaker=speaker,
        sessions=tuple((name, sessions[name]) for name in order),
        out_of_order=order != list(sessions),
        asked_at=asked_at,
        questions=parsed_questions,
    )


def load_cases(path: Path) -> list[Case]:
    """Every case of a cases file; raises :class:`CaseError` for a bad line or ID."""
    cases: list[Case] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path.name}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise CaseError(f"{where}: {error}") from error
        if not isinstance(record, dict):
            raise CaseError(f"{where}: a case is a JSON object")
        case = parse_case(record, where)
        if case.id in seen:
            raise CaseError(f"{where}: case id {case.id!r} repeats")
        seen.add(case.id)
        cases.append(case)
    return cases


# -- scoring ----------------------------------------------------------------------------------


def mentions(text: str, values: Iterable[str]) -> bool:
    lowered = text.casefold()
    return any(value.casefold() in lowered for value in values)


def standing(item: Any) -> str | None:
    value = getattr(item, "standing", None)
    return None if value is None else str(getattr(value, "value", value))


@attrs.frozen
class Verdict:
    passed: bool
    reason: str


def score_question(items: Sequence[Any], question: Question) -> Verdict:
    """Pass iff the first item is the current value, not history, and every item that
    names only a stale value is marked history."""
    if not items:
        return Verdict(False, "no items")
    first = items[0]
    if not mentions(first.text, question.current):
        return Verdict(False, "first item is not the current value")
    if standing(first) == "history":
        return Verdict(False, "first item is marked history")
    for rank, item in enumerate(items, 1):
        if (
            mentions(item.text, question.stale)
            and not mentions(item.text, question.current)
            and standing(item) != "history"
        ):
            return Verdict(False, f"stale item at rank {rank} is not marked history")
    return Verdict(True, "ok")


def chain_holds(claims: Sequence[dict[str, Any]], question: Question) -> bool:
    """From exported claim records: the active claim of the attribute is the current
    value and an older claim with only a stale value was superseded by it."""

    def only_stale(claim: dict[str, Any]) -> bool:
        text = str(claim.get("text", ""))
        return mentions(text, question.stale) and not mentions(text, question.current)

    attributes = {
        (claim.get("subject"), claim["predicate"])
        for claim in claims
        if claim.get("lifecycle") == "active"
        and claim.get("predicate")
        and mentions(str(claim.get("text", "")), question.current)
    }
    for attribute in attributes:
        same = [
            claim
            for claim in claims
            if (claim.get("subject"), claim.get("predicate")) == attribute
        ]
        superseded = any(
            only_stale(c) and c.get("lifecycle") == "superseded" for c in same
        )
        still_active = any(
            only_stale(c) and c.get("lifecycle") == "active" for c in same
        )
        if superseded and not still_active:
            return True
    return False


# -- the run ----------------------------------------------------------------------------------


def _turn(turn: CaseTurn) -> Turn:
    return Turn(
        turn.event_id, turn.session_id, turn.role, turn.text, turn.at, turn.speaker
    )


async def _exported_claims(memory: Any, agent: str) -> list[dict[str, Any]]:
    from cairn.runtime.transfer import export_memory  # what `cairn export` runs

    sink = io.StringIO()
    await export_memory(memory, sink, agent)
    records = (json.loads(line) for line in sink.getvalue().splitlines() if line)
    return [r for r in records if r.get("type") == "claim" and r.get("agent") == agent]


def _item_view(item: Any) -> dict[str, Any]:
    return {
        "text": item.text,
        "kind": item.kind,
        "standing": standing(item),
        "valid_until": getattr(item, "valid_until", None),
        "score": round(float(item.score), 4),
    }


async def run(
    cases: Sequence[Case],
    data_dir: Path,
    embedder_name: str,
    wait_s: float,
    verbose: bool,
    maintenance_passes: int = 0,
) -> dict[str, Any]:
    embedder = {"local": None, "hashing": HashingEmbedder()}[embedder_name]
    config = (
        MemoryConfig(maintenance_interval_s=3600)
        if maintenance_passes
        else MemoryConfig()
    )
    ordered = sorted(cases, key=lambda case: case.asked_at)
    clock = FixedDomainClock(ordered[0].asked_at) if ordered else FixedDomainClock()
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    async with open_memory(data_dir, config, clock=clock, embedder=embedder) as memory:
        for case in ordered:
            # One clock for every agent: it only moves forward.
            clock.moment = max(clock.moment, case.asked_at)
            for _, turns in case.sessions:
                await memory.ingest(case.agent, [_turn(turn) for turn in turns])
                await memory.wait_idle(case.agent)
            await _maintain(memory, case.agent, maintenance_passes)
            claims = await _exported_claims(memory, case.agent)
            for number, question in enumerate(case.questions, 1):
                recall = await memory.recall(
                    case.agent, question.question, wait_s=wait_s
                )
                verdict = score_question(recall.items, question)
                result = {
                    "id": f"{case.id}#{number}",
                    "category": case.category,
                    "language": case.language,
                    "arrival": "out_of_order" if case.out_of_order else "in_order",
                    "passed": verdict.passed,
                    "first_current": bool(recall.items)
                    and mentions(recall.items[0].text, question.current),
                    "chain": chain_holds(claims, question),
                }
                if verbose and not verdict.passed:
                    result["question"] = question.question
                    result["reason"] = verdict.reason
                    result["status"] = str(recall.status)
                    result["top"] = [_item_view(i) for i in recall.items[:TOP_SHOWN]]
                results.append(result)
    return summarise(results, time.perf_counter() - started, embedder_name, verbose)


async def _maintain(memory: Any, agent: str, passes: int) -> None:
    """``passes`` maintenance passes over the agent now (not part of the public API: a
    runtime's own hook, imported only when asked for)."""
    if not passes:
        return
    from cairn.runtime.core import runtime_core

    supervisor = await runtime_core(memory).registry.get(agent)
    for _ in range(passes):
        await supervisor.run_maintenance_pass()


def _fractions(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    total = len(results)

    def fraction(field: str) -> float | None:
        return round(sum(r[field] for r in results) / total, 4) if total else None

    return {
        "questions": total,
        "pass": fraction("passed"),
        "first_current": fraction("first_current"),
        "chain": fraction("chain"),
    }


def summarise(
    results: Sequence[dict[str, Any]], seconds: float, embedder: str, verbose: bool
) -> dict[str, Any]:
    def grouped(field: str) -> dict[str, Any]:
        keys = sorted({r[field] for r in results})
        return {
            key: _fractions([r for r in results if r[field] == key]) for key in keys
        }

    failing = [r for r in results if not r["passed"]]
    report: dict[str, Any] = {
        "cases": len({r["id"].split("#")[0] for r in results}),
        "embedder": embedder,
        "overall": _fractions(results),
        "by_category": grouped("category"),
        "by_language": grouped("language"),
        "by_arrival": grouped("arrival"),
        "failing": [r["id"] for r in failing],
        "broken_chains": [r["id"] for r in results if not r["chain"]],
        "seconds": round(seconds, 1),
    }
    if verbose:
        report["failures"] = [
            {k: v for k, v in r.items() if k not in {"category", "language", "arrival"}}
            for r in failing
        ]
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--data", type=Path, default=None, help="keep the data here")
    parser.add_argument("--embedder", choices=("hashing", "local"), default="hashing")
    parser.add_argument("--wait-s", type=float, default=30.0)
    parser.add_argument(
        "--maintenance-passes",
        type=int,
        default=0,
        help="maintenance passes per case before its questions (0: the timer's)",
    )
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    try:
        cases = load_cases(args.cases)
    except (OSError, CaseError) as error:
        sys.exit(f"knowledge_update: {error}")
    with tempfile.TemporaryDirectory(prefix="cairn-ku-") as scratch:
        data_dir = args.data or Path(scratch)
        report = trio.run(
            run,
            cases,
            data_dir,
            args.embedder,
            args.wait_s,
            args.verbose,
            args.maintenance_passes,
        )
    print(json.dumps(report, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
