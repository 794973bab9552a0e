"""The CLI commands: thin adapters from arguments to the embedded API and back to text."""

from __future__ import annotations

import datetime as dt
import json
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import trio

from cairn.cli import forgetting
from cairn.domain.evidence import Turn
from cairn.errors import InvalidInputError, ProviderContractError, ProviderError
from cairn.providers.settings import load_embedding_settings
from cairn.runtime.memory import Memory, open_memory
from cairn.runtime.providers import open_embedder
from cairn.runtime.threads import Limiters, run_in_thread
from cairn.serde.recall import recall_to_dict
from cairn.store.evidence import IntakeOutcome, IntakeResult

if TYPE_CHECKING:
    import argparse
    from collections.abc import Awaitable, Callable, Iterator

    from cairn.providers.embedding import Vectors
    from cairn.retrieval.types import Recall

__all__ = ["dispatch", "parse_turn"]

_INGEST_CHUNK = 512
_FIELDS = {"id", "session", "role", "text", "at", "speaker"}


def parse_turn(data: object) -> Turn:
    """One JSONL object → Turn, or InvalidInputError saying what is wrong."""
    if not isinstance(data, dict):
        raise InvalidInputError("each line must be a JSON object")
    unknown = set(data) - _FIELDS
    if unknown:
        raise InvalidInputError(f"unknown fields: {', '.join(sorted(unknown))}")
    for name in ("id", "session", "role", "text"):
        if not isinstance(data.get(name), str):
            raise InvalidInputError(f"field {name!r} must be a string")
    at = None
    if data.get("at") is not None:
        try:
            at = dt.datetime.fromisoformat(str(data["at"]))
        except ValueError:
            raise InvalidInputError(f"'at' is not ISO-8601: {data['at']!r}") from None
        if at.utcoffset() is None:
            at = at.replace(tzinfo=dt.UTC)
    speaker = data.get("speaker")
    if speaker is not None and not isinstance(speaker, str):
        raise InvalidInputError("field 'speaker' must be a string")
    try:
        return Turn(
            data["id"], data["session"], data["role"], data["text"], at, speaker
        )
    except ValueError as error:
        raise InvalidInputError(str(error)) from None


def _read_turns(path: Path) -> Iterator[tuple[int, Turn | str, str | None]]:
    """``(line number, turn or error message, id if known)`` for every non-blank line."""
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                yield number, f"invalid JSON: {error.msg}", None
                continue
            event_id = data.get("id") if isinstance(data, dict) else None
            try:
                yield number, parse_turn(data), event_id
            except InvalidInputError as error:
                yield (
                    number,
                    str(error),
                    event_id if isinstance(event_id, str) else None,
                )


async def _ingest_file(memory: Memory, agent: str, path: Path) -> dict[str, Any]:
    counts = {"ingested": 0, "duplicate": 0}
    rejected: list[dict[str, Any]] = []
    chunk: list[tuple[int, Turn]] = []

    async def flush() -> None:
        report = await memory.ingest(agent, [turn for _, turn in chunk])
        for (number, turn), result in zip(chunk, report.results, strict=True):
            _count(counts, rejected, number, turn.event_id, result)
        chunk.clear()

    for number, turn, event_id in _read_turns(path):
        if isinstance(turn, str):
            rejected.append({"line": number, "id": event_id, "reason": turn})
            continue
        chunk.append((number, turn))
        if len(chunk) >= _INGEST_CHUNK:
            await flush()
    if chunk:
        await flush()
    await memory.wait_idle(agent)
    return {**counts, "rejected": rejected}


def _count(
    counts: dict[str, int],
    rejected: list[dict[str, Any]],
    number: int,
    event_id: str,
    result: IntakeResult,
) -> None:
    if result.outcome is IntakeOutcome.INGESTED:
        counts["ingested"] += 1
    elif result.outcome is IntakeOutcome.DUPLICATE:
        counts["duplicate"] += 1
    else:
        rejected.append({"line": number, "id": event_id, "reason": result.reason})


def recall_json(recall: Recall) -> dict[str, Any]:
    data = recall_to_dict(recall)
    data["items"] = [
        {
            "id": item["id"],
            "kind": item["kind"],
            "text": item["text"],
            "score": item["score"],
            "source_refs": item["source_refs"],
        }
        for item in data["items"]
    ]
    return data


def _print_recall(recall: Recall, as_json: bool, query_id: str | None = None) -> None:
    if as_json:
        data = recall_json(recall)
        if query_id is not None:
            data = {"id": query_id, **data}
        print(json.dumps(data, ensure_ascii=False))
        return
    if query_id is not None:
        print(f"# {query_id}")
    if recall.status != "ok":
        print(f"pending: request {recall.request_id}")
        return
    for rank, item in enumerate(recall.items, start=1):
        print(
            f"{rank:2d}. [{item.kind}] {item.text}  (sources: {', '.join(item.source_refs)})"
        )
    if not recall.items:
        print("(no memory matched)")


async def _recall(memory: Memory, arguments: argparse.Namespace) -> None:
    options = {
        "k": arguments.k,
        "budget_bytes": arguments.budget,
        "wait_s": arguments.wait,
    }
    if arguments.queries is not None:
        with arguments.queries.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                    query_id, query = str(data["id"]), str(data["query"])
                except (json.JSONDecodeError, KeyError, TypeError):
                    raise InvalidInputError(
                        f"{arguments.queries}:{number}: need id and query"
                    ) from None
                recall = await memory.recall(
                    arguments.agent,
                    query,
                    session_id=data.get("session") or arguments.session,
                    **options,
                )
                _print_recall(recall, arguments.json, query_id)
        return
    if not arguments.query:
        raise InvalidInputError("give a QUERY or --queries FILE")
    recall = await memory.recall(
        arguments.agent, arguments.query, session_id=arguments.session, **options
    )
    _print_recall(recall, arguments.json)


async def _demo() -> None:
    script = resources.files("cairn.data") / "demo.jsonl"
    with tempfile.TemporaryDirectory(prefix="cairn-demo-") as directory:
        turns = Path(directory) / "demo.jsonl"
        turns.write_text(script.read_text(encoding="utf-8"), encoding="utf-8")
        async with open_memory(Path(directory) / "data") as memory:
            summary = await _ingest_file(memory, "demo", turns)
            print(f"ingested {summary['ingested']} turns into {directory}\n")
            for question in (
                "What drink does Mei like?",
                "When is the trip to Kyoto?",
                "Where does Mei live now?",
                "梅喜欢喝什么？",
                "东京的会议是什么时候？",
            ):
                recall = await memory.recall("demo", question, k=4, wait_s=30.0)
                print(f"Q: {question}")
                for item in recall.items:
                    labels = [item.kind, (item.at or "")[:10], item.qualifier or ""]
                    label = ", ".join(part for part in labels if part)
                    print(f"   [{label}] {item.text}")
                print()


async def _check_providers(data_dir: Path, as_json: bool) -> int:
    """Try the configured embedder: identity, a warm-up and a warm query, a small batch."""
    limiters = Limiters()
    settings = await run_in_thread(
        lambda: load_embedding_settings(data_dir), limiter=limiters.store_write
    )
    report: dict[str, Any] = {"source": settings.source, "provider": settings.provider}
    try:
        async with open_embedder(settings, limiters) as embedder:
            identity = embedder.identity
            report["identity"] = attrs.asdict(identity)
            timings = {}
            calls: list[tuple[str, Callable[[], Awaitable[Vectors]]]] = [
                ("warm_up_ms", lambda: embedder.embed_query("cairn providers check")),
                ("query_ms", lambda: embedder.embed_query("what does the user like?")),
                ("batch_of_2_ms", lambda: embedder.embed_documents(["one", "two"])),
            ]
            for name, call in calls:
                started = trio.current_time()
                vectors = await call()
                timings[name] = round((trio.current_time() - started) * 1000, 1)
                if vectors.shape[-1] != identity.dimension:
                    raise ProviderContractError(
                        f"vectors have {vectors.shape[-1]} dimensions, not {identity.dimension}"
                    )
            report.update(timings, status="ok")
    except ProviderError as error:
        report.update(status="failed", error=str(error))
    if as_json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        for key, value in report.items():
            print(f"{key}: {value}")
    return 0 if report["status"] == "ok" else 1


async def dispatch(arguments: argparse.Namespace, data_dir: Path) -> int:
    if arguments.command == "demo":
        await _demo()
        return 0
    if arguments.command == "providers":
        return await _check_providers(data_dir, arguments.json)
    if arguments.command == "ingest" and not arguments.file.is_file():
        raise InvalidInputError(f"no such file: {arguments.file}")
    async with open_memory(data_dir) as memory:
        if arguments.command == "ingest":
            summary = await _ingest_file(memory, arguments.agent, arguments.file)
            if arguments.json:
                print(json.dumps(summary, ensure_ascii=False))
            else:
                print(
                    f"ingested {summary['ingested']}, duplicate {summary['duplicate']},"
                    f" rejected {len(summary['rejected'])}"
                )
                for rejection in summary["rejected"]:
                    print(
                        f"  line {rejection['line']}: {rejection['reason']}",
                        file=sys.stderr,
                    )
            return 3 if summary["rejected"] else 0
        if arguments.command == "recall":
            await _recall(memory, arguments)
            return 0
        if arguments.command in forgetting.COMMANDS:
            return await forgetting.run(memory, arguments)
        status = await memory.status()
        if arguments.json:
            print(json.dumps(status, ensure_ascii=False, default=str))
        else:
            print(f"data: {status['data_dir']}")
            for agent, counts in status["agents"].items():
                flat = {k: v for k, v in counts.items() if not isinstance(v, dict)}
                print(f"  {agent}: " + ", ".join(f"{k} {v}" for k, v in flat.items()))
        return 0
