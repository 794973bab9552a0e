"""A real cairn process for the crash trials: runs one scenario against a data directory.

    python -m cairn.stress.crash_worker --data DIR --scenario NAME --seed N

It opens the runtime with :class:`cairn.testing.HashingEmbedder` and runs the scenario's
operations one after another. Each operation is announced on stdout as an ``invoke``
JSON line before it starts and as an ``ok`` (or ``fail``) line, flushed, only *after*
it returned: whatever ``ok`` lines the parent read before the process died were
acknowledged, exactly like the answers a host received. The parent starts it with
``CAIRN_CRASH_AT=point:occurrence`` (cairn.crashpoints) or kills it at a random moment
(the ``workload`` scenario), then reopens the directory and checks every invariant
against those lines (cairn.stress.crash). Every written text carries a marker
(cairn.stress.markers).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
import trio

from cairn.config import MemoryConfig
from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.domain.evidence import Turn
from cairn.domain.ids import EventId, SessionId
from cairn.errors import CairnError
from cairn.runtime.memory import Memory, open_memory
from cairn.runtime.threads import run_in_thread
from cairn.runtime.transfer import export_memory, import_memory
from cairn.store.claims import claim_fts_body
from cairn.store.tombstones import content_hash_v1, provenance_key_v1
from cairn.stress.markers import MarkerSource
from cairn.testing import HashingEmbedder

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

__all__ = ["SCENARIOS", "WORKER_CONFIG", "main", "user_turn"]

# Extraction and embedding start at once; no timed maintenance pass interferes.
WORKER_CONFIG = MemoryConfig(
    recall_wait_s=60.0,
    embed_linger_s=0.001,
    extraction_linger_s=0.001,
    maintenance_interval_s=3600,
)
_FACTS = (
    "My locker code word is {m}.",
    "I named my new bicycle {m} last weekend.",
    "Our project codename at work is {m}.",
    "我的猫叫 {m}。",
)
_REMEMBERED = ("Remember that the spare key is under {m}.",)


def user_turn(event_id: str, session_id: str, text: str) -> Turn:
    """A user message as the host sends it (a replay sends the same one again)."""
    return Turn(EventId(event_id), SessionId(session_id), "user", text)


def emit(event: str, **fields: Any) -> None:
    """One history line on stdout, flushed before the next operation starts."""
    sys.stdout.write(json.dumps({"event": event, **fields}, ensure_ascii=False) + "\n")
    sys.stdout.flush()


class Worker:
    """The scenario's operations, each announced and acknowledged on stdout."""

    def __init__(self, memory: Memory, seed: int) -> None:
        self.memory = memory
        self.rng = random.Random(seed)
        self.marker = MarkerSource(self.rng)
        self.counter = 0
        # Per agent: the turns (marker, event ID, session, text) and remembered claims
        # (marker, claim ID) written so far, for later forgets and replays.
        self.turns: dict[str, list[tuple[str, str, str, str]]] = {}
        self.claims: dict[str, list[tuple[str, str]]] = {}

    async def _acknowledged(
        self,
        op: str,
        call: Callable[[], Awaitable[Any]],
        answer: Callable[[Any], dict[str, Any]] | None = None,
        **fields: Any,
    ) -> Any:
        """Run one operation between its invoke and its ok line; a typed refusal is a
        ``fail`` line (it did nothing) and the scenario goes on."""
        emit("invoke", op=op, **fields)
        try:
            result = await call()
        except CairnError as error:
            emit("fail", op=op, error=type(error).__name__, **fields)
            return None
        emit("ok", op=op, **fields, **(answer(result) if answer else {}))
        return result

    async def ingest(self, agent: str, count: int = 1) -> None:
        """``count`` user turns in one request, each stating a fact with its marker."""
        turns = []
        for _ in range(count):
            self.counter += 1
            marker = self.marker()
            text = self.rng.choice(_FACTS).format(m=marker)
            turn = (marker, f"e{self.counter}", f"s{self.rng.randrange(2)}", text)
            turns.append(turn)
        request = [user_turn(e, s, t) for _, e, s, t in turns]
        report = await self._acknowledged(
            "ingest",
            lambda: self.memory.ingest(agent, request),
            agent=agent,
            turns=[list(turn) for turn in turns],
        )
        if report is not None:
            self.turns.setdefault(agent, []).extend(turns)

    async def remember(self, agent: str) -> None:
        marker = self.marker()
        text = self.rng.choice(_REMEMBERED).format(m=marker)
        result = await self._acknowledged(
            "remember",
            lambda: self.memory.remember(agent, text, by="user"),
            lambda result: {"claim_id": result.claim_id},
            agent=agent,
            marker=marker,
            text=text,
        )
        if result is not None and result.claim_id is not None:
            self.claims.setdefault(agent, []).append((marker, result.claim_id))

    async def forget(self, agent: str) -> None:
        """Forget a turn by its ID or a remembered claim by its ID, chosen by the seed."""
        turns, claims = self.turns.get(agent, []), self.claims.get(agent, [])
        if not turns and not claims:
            return
        if claims and (not turns or self.rng.random() < 0.3):
            marker, item_id = claims.pop(self.rng.randrange(len(claims)))
        else:
            marker, item_id, _, _ = turns.pop(self.rng.randrange(len(turns)))
        await self._acknowledged(
            "forget",
            lambda: self.memory.forget(agent, item_id),
            agent=agent,
            marker=marker,
            item_id=item_id,
        )

    async def replay(self, agent: str, pool: list[tuple[str, str, str, str]]) -> None:
        """The host sends a turn it sent before again, byte for byte."""
        if not pool:
            return
        marker, event_id, session, text = self.rng.choice(pool)
        await self._acknowledged(
            "replay",
            lambda: self.memory.ingest(agent, [user_turn(event_id, session, text)]),
            lambda report: {"outcome": report.results[0].outcome.value},
            agent=agent,
            turns=[[marker, event_id, session, text]],
        )

    async def clear(self, agent: str) -> None:
        await self._acknowledged("clear", lambda: self.memory.clear(agent), agent=agent)
        self.turns.pop(agent, None)
        self.claims.pop(agent, None)

    async def retire(self, agent: str) -> None:
        await self._acknowledged(
            "retire", lambda: self.memory.retire(agent), agent=agent
        )
        self.turns.pop(agent, None)
        self.claims.pop(agent, None)

    async def settle(self, agent: str | None = None) -> None:
        """Wait until everything accepted is extracted and embedded (no ack line)."""
        await self.memory.wait_idle(agent)


@contextlib.asynccontextmanager
async def _opened(data_dir: Path, seed: int) -> AsyncIterator[Worker]:
    async with open_memory(
        data_dir, WORKER_CONFIG, embedder=HashingEmbedder()
    ) as memory:
        yield Worker(memory, seed)


# -- scenarios: each reaches its crash points; the parent arms one -----------------------
async def _forget(data_dir: Path, seed: int) -> None:
    """Turns and remembered claims, settled, then forgets of both kinds one by one."""
    async with _opened(data_dir, seed) as worker:
        emit("ready")
        for agent in ("a", "b"):
            await worker.ingest(agent, 4)
            await worker.remember(agent)
            await worker.remember(agent)
        await worker.settle()
        sent = list(worker.turns["a"])
        for _ in range(4):
            await worker.forget("a")
        # The host sends the forgotten turns again (those still stored stay as they are).
        for turn in sent:
            await worker.replay("a", [turn])


async def _clear(data_dir: Path, seed: int, *, retire: bool = False) -> None:
    """Two agents with turns and claims; one is cleared (or retired), then written again."""
    async with _opened(data_dir, seed) as worker:
        emit("ready")
        for agent in ("a", "b"):
            for _ in range(3):
                await worker.ingest(agent, 3)
            await worker.remember(agent)
        await worker.settle()
        gone = list(worker.turns.get("a", []))
        if retire:
            await worker.retire("a")
        else:
            await worker.clear("a")
        await worker.replay("a", gone)
        await worker.ingest("a", 2)


async def _vectors(data_dir: Path, seed: int) -> None:
    """Turns embedded, then a close: the close publishes every dirty projection."""
    async with _opened(data_dir, seed) as worker:
        emit("ready")
        for agent in ("a", "b"):
            await worker.ingest(agent, 3)
        await worker.settle()
    emit("closed")


async def _batch(data_dir: Path, seed: int) -> None:
    """Requests of several turns: each is extracted as a batch, then embedded."""
    async with _opened(data_dir, seed) as worker:
        emit("ready")
        for _ in range(3):
            await worker.ingest("a", 3)
            await worker.settle()
        await worker.ingest("b", 2)
        await worker.settle()


async def _ingest(data_dir: Path, seed: int) -> None:
    async with _opened(data_dir, seed) as worker:
        emit("ready")
        for number in range(6):
            await worker.ingest("a" if number % 2 else "b", 2)


def write_old_schema(path: Path, markers: list[tuple[str, str]]) -> None:
    """A database as cairn wrote it at schema 3 (before scoped forgetting), holding one
    agent-wide user claim per ``(claim ID, text)``; the open migrates it forward."""
    connection = apsw.Connection(str(path))
    package = resources.files("cairn.store") / "migrations"
    names = ("0001_initial.sql", "0002_ingestion.sql", "0003_forgetting.sql")
    for index, name in enumerate(names, start=1):
        with connection:
            connection.execute((package / name).read_text(encoding="utf-8"))
            connection.pragma("user_version", index)
    stamp = "2026-01-05T09:00:00+00:00"
    with connection:
        connection.execute(
            "INSERT INTO agents (agent_id, created_at) VALUES ('a', ?)", (stamp,)
        )
        for claim_id, text in markers:
            draft = ClaimDraft(ClaimKind.FACT, text, ())
            connection.execute(
                "INSERT INTO claims (claim_id, agent_id, kind, lifecycle, origin, text,"
                " confidence, scope, scope_key, provenance_key, content_hash,"
                " created_at, updated_at) VALUES (?, 'a', 'fact', 'active', 'user', ?,"
                " 0.9, 'agent', NULL, ?, ?, ?, ?)",
                (
                    claim_id,
                    text,
                    provenance_key_v1("a", draft),
                    content_hash_v1("a", draft.text),
                    stamp,
                    stamp,
                ),
            )
            connection.execute(
                "INSERT INTO claim_fts (rowid, body) VALUES (?, ?)",
                (
                    connection.last_insert_rowid(),
                    claim_fts_body("a", text, None, "agent", None),
                ),
            )
    connection.close()


async def _migration(data_dir: Path, seed: int) -> None:
    """A schema-3 file written and acknowledged, then opened: every migration runs."""
    rng = random.Random(seed)
    source = MarkerSource(rng)
    claims = [(f"c{n}", _REMEMBERED[0].format(m=source())) for n in range(3)]
    write_old_schema(data_dir / "cairn.db", claims)
    for claim_id, text in claims:
        marker = text.split()[-1].rstrip(".")
        emit("ok", op="stored", agent="a", marker=marker, claim_id=claim_id, text=text)
    async with _opened(data_dir, seed) as worker:
        emit("ready")
        await worker.ingest("a", 2)


async def _import(data_dir: Path, seed: int) -> None:
    """Memories written and partly forgotten in a source directory, exported, and the
    export imported into ``data_dir`` (the directory the parent checks)."""
    source_dir = data_dir.with_name(data_dir.name + "-source")
    source_dir.mkdir(exist_ok=True)
    export = data_dir.with_name(data_dir.name + "-export.jsonl")
    async with _opened(source_dir, seed) as worker:
        for agent in ("a", "b"):
            await worker.ingest(agent, 3)
            await worker.remember(agent)
        await worker.settle()
        await worker.forget("a")
        await worker.forget("b")

        sink = await run_in_thread(
            lambda: export.open("w", encoding="utf-8"), limiter=trio.CapacityLimiter(1)
        )
        try:
            await export_memory(worker.memory, sink)
        finally:
            sink.close()
    emit("exported", file=str(export))
    async with open_memory(
        data_dir, WORKER_CONFIG, embedder=HashingEmbedder()
    ) as memory:
        emit("ready")
        emit("invoke", op="import", file=str(export))
        summary = await import_memory(memory, export)
        emit("ok", op="import", file=str(export), agents=list(summary.agents))


async def _workload(data_dir: Path, seed: int) -> None:
    """The seeded random workload, operation after operation, until killed (or done)."""
    async with _opened(data_dir, seed) as worker:
        emit("ready")
        rng, agents = worker.rng, ("a", "b", "c")
        history: dict[str, list[tuple[str, str, str, str]]] = {}
        for _ in range(400):
            agent = rng.choice(agents)
            kind = rng.choices(
                ("ingest", "remember", "forget", "replay", "clear", "retire"),
                (12, 4, 4, 3, 0.4, 0.3),
            )[0]
            if kind == "ingest":
                await worker.ingest(agent, rng.randint(1, 3))
                history[agent] = list(worker.turns.get(agent, []))
            elif kind == "remember":
                await worker.remember(agent)
            elif kind == "forget":
                await worker.forget(agent)
            elif kind == "replay":
                # Any turn this agent was ever sent: live, forgotten or cleared.
                pool = history.setdefault(agent, [])
                pool.extend(t for t in worker.turns.get(agent, []) if t not in pool)
                await worker.replay(agent, pool)
            elif kind == "clear":
                await worker.clear(agent)
            else:
                await worker.retire(agent)
                history.pop(agent, None)


SCENARIOS: dict[str, Callable[[Path, int], Awaitable[None]]] = {
    "forget": _forget,
    "clear": _clear,
    "retire": lambda data_dir, seed: _clear(data_dir, seed, retire=True),
    "vectors": _vectors,
    "batch": _batch,
    "ingest": _ingest,
    "migration": _migration,
    "import": _import,
    "workload": _workload,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m cairn.stress.crash_worker")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.data.mkdir(parents=True, exist_ok=True)
    trio.run(SCENARIOS[args.scenario], args.data, args.seed)
    emit("done")


if __name__ == "__main__":
    main()
