"""The I/O fault mode of the harness: every write operation under every fault, at every
position it can strike, against a real runtime opened through the fault VFS
(:mod:`cairn.stress.vfs`).

For each operation (ingest, ingest_settled, remember, forget, archive, clear, retire,
add_directive, import) and each :data:`FAULT_KINDS` entry, a dry run counts the calls the fault could
strike while the operation runs; then, for each position (all of them, or
``profile.fault_indexes`` spread by the seed) and both persistences, a fresh copy of a
populated data directory is opened, the fault armed, and the operation run. It must:

* raise a typed :class:`~cairn.errors.CairnError` (never a bare apsw error), or succeed
  if SQLite or the runtime absorbed the fault (``ingest_settled`` also waits for the
  turn's extraction and embedding, so its later positions strike the background
  pipeline's commits: a persistent one must end the wait with a typed stall, never hang);
* be all or nothing: its marker is stored only if it succeeded; a failed forget leaves
  the claim fully there or fully gone, a failed clear or retire all of the agent's
  memories recallable or none;
* leave reads serving while a persistent fault holds;
* succeed when retried after the fault is cleared, after which every acknowledged write
  of the population is still recallable, and ``PRAGMA integrity_check`` and the doctor
  (:func:`cairn.runtime.upkeep.check`) pass.

Power-loss trials record every unsynced write, cut the power after each acknowledged
operation of a short sequence (each file keeping none, a seeded prefix, or a torn part
of its unsynced writes) and open the image: it must pass ``integrity_check``, every
forget, clear and retire acknowledged before the cut holds (they commit
``synchronous=FULL``), and every ingest acknowledged before a later synced commit is
there. An ingest acknowledged under the NORMAL default and lost with the power is the
documented trade-off: a figure (``power_loss.normal_ingests_lost``), not a violation.

A read-only data directory (writes refused underneath a running runtime, as a
read-only remount does) must refuse each write with a typed error and keep reads serving;
opening a data directory while a fault of each kind holds must give a typed error (or
serve, if it needed none of the failing calls) and open cleanly once it is gone.

Violations name the invariant they break: I1 a lost acknowledged write, I2 a forgotten,
cleared or retired memory recallable again, I6 integrity (SQLite, the doctor, a partial
operation visible), I8 a call that hung or did not answer with a typed error.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

import apsw
import attrs
import trio

from cairn.config import MemoryConfig
from cairn.domain.evidence import Turn
from cairn.domain.ids import EventId, SessionId
from cairn.errors import CairnError, UnknownMemoryError
from cairn.runtime.core import runtime_core
from cairn.runtime.memory import open_memory
from cairn.runtime.threads import run_in_thread
from cairn.runtime.transfer import export_memory, import_memory
from cairn.runtime.upkeep import check
from cairn.store.connection import open_connection
from cairn.store.fts_purge import scrub_owed
from cairn.stress.checks import files_holding
from cairn.stress.markers import MarkerSource
from cairn.stress.report import ModeResult, Violation
from cairn.stress.vfs import Call, FaultPlan, FaultVFS, FileKind, read_only_plan
from cairn.testing import FixedDomainClock, HashingEmbedder

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from contextlib import AbstractAsyncContextManager

    from cairn.runtime.memory import Memory
    from cairn.stress.profiles import Profile

__all__ = [
    "FAULT_KINDS",
    "OPERATIONS",
    "FaultKind",
    "Template",
    "Trial",
    "build_template",
    "count_calls",
    "fault_trial",
    "open_trial",
    "power_loss_trial",
    "read_only_trial",
    "run_faults",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")

MODE = "faults"
OPERATIONS: Final = (
    "ingest",
    "ingest_settled",
    "remember",
    "forget",
    "archive",
    "clear",
    "retire",
    "add_directive",
    "import",
)
# Bounds of one operation and of one whole trial (real time: this mode does real I/O).
OPERATION_BUDGET_S = 30.0
TRIAL_BUDGET_S = 120.0
_AT = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)
# Extraction retries back off on the real clock: short, so a trial settles quickly.
_CONFIG = MemoryConfig(
    recall_wait_s=30.0,
    embed_linger_s=0.001,
    extraction_linger_s=0.001,
    maintenance_interval_s=3600.0,
    extraction_backoff_s=0.05,
    extraction_backoff_cap_s=0.2,
    agent_restart_backoff_s=0.05,
    agent_restart_backoff_cap_s=0.2,
)


@attrs.frozen
class FaultKind:
    """A kind of fault: which calls, on which file, answering which error."""

    name: str
    calls: frozenset[Call]
    file: FileKind | None
    error: int

    def plan(self, nth: int, *, persistent: bool) -> FaultPlan:
        return FaultPlan(self.calls, self.file, nth, persistent, self.error)


FAULT_KINDS: Final = (
    FaultKind(
        "wal-write", frozenset({Call.WRITE}), FileKind.WAL, apsw.SQLITE_IOERR_WRITE
    ),
    FaultKind(
        "wal-sync", frozenset({Call.SYNC}), FileKind.WAL, apsw.SQLITE_IOERR_FSYNC
    ),
    FaultKind("disk-full", frozenset({Call.WRITE}), None, apsw.SQLITE_FULL),
    FaultKind(
        "db-write", frozenset({Call.WRITE}), FileKind.MAIN, apsw.SQLITE_IOERR_WRITE
    ),
    FaultKind(
        "db-sync", frozenset({Call.SYNC}), FileKind.MAIN, apsw.SQLITE_IOERR_FSYNC
    ),
    FaultKind("truncate", frozenset({Call.TRUNCATE}), None, apsw.SQLITE_IOERR_TRUNCATE),
    FaultKind("file-size", frozenset({Call.FILE_SIZE}), None, apsw.SQLITE_IOERR_FSTAT),
    FaultKind("open", frozenset({Call.OPEN}), None, apsw.SQLITE_CANTOPEN),
    FaultKind("delete", frozenset({Call.DELETE}), None, apsw.SQLITE_IOERR_DELETE),
)


# The harness's own file work (copies, power-loss images, their checks), off the loop.
_FILES = trio.CapacityLimiter(1)


async def _blocking(function: Callable[[], T]) -> T:
    return await run_in_thread(function, limiter=_FILES)


# -- the populated data directory every trial starts from ---------------------------------
@attrs.frozen
class Template:
    """A closed, populated data directory and what it holds."""

    root: Path
    kept: dict[str, tuple[str, ...]]
    """Per agent: markers of acknowledged writes that no operation of a trial removes
    unless it removes the agent's memories (clear: claims; retire: everything)."""
    claims: dict[str, tuple[str, ...]]
    """Per agent: markers of its remembered claims (what a clear removes)."""
    forget: tuple[str, str]
    """(marker, claim ID) of the claim a forget trial forgets."""
    archive: tuple[str, str]
    fresh: str
    """The marker an ingest, remember or directive trial writes."""
    import_file: Path
    imported: tuple[str, ...]
    """Markers the import file brings (agent ``c``)."""


def _turn(event_id: str, text: str) -> Turn:
    return Turn(EventId(event_id), SessionId("s1"), "user", text, _AT, "Ana")


def _open(root: Path, vfs: str | None) -> AbstractAsyncContextManager[Memory]:
    return open_memory(
        root,
        attrs.evolve(_CONFIG, vfs=vfs),
        clock=FixedDomainClock(),
        embedder=HashingEmbedder(),
    )


async def build_template(directory: Path, seed: int) -> Template:
    """Populate ``directory/template`` (agents ``a`` and ``b``) and an import file (agent
    ``c``, exported from ``directory/source``)."""
    markers = MarkerSource(random.Random(seed))
    root, source = directory / "template", directory / "source"
    kept: dict[str, list[str]] = {"a": [], "b": []}
    claims: dict[str, list[str]] = {"a": [], "b": []}
    imported = (markers(), markers())
    async with _open(source, None) as memory:
        await memory.ingest(
            "c", [_turn("c1", f"Our project codename is {imported[0]}.")]
        )
        await memory.remember("c", f"The spare key is under {imported[1]}.", by="user")
        await memory.wait_idle("c")
        import_file = directory / "import.jsonl"
        sink = await _blocking(lambda: import_file.open("w", encoding="utf-8"))
        try:
            await export_memory(memory, sink, "c")
        finally:
            await _blocking(sink.close)
    async with _open(root, None) as memory:
        for agent in ("a", "b"):
            for number in range(2):
                marker = markers()
                await memory.ingest(
                    agent, [_turn(f"{agent}{number}", f"My locker code is {marker}.")]
                )
                kept[agent].append(marker)
            marker = markers()
            await memory.remember(agent, f"My bicycle is named {marker}.", by="user")
            kept[agent].append(marker)
            claims[agent].append(marker)
        forget, archive = markers(), markers()
        forgotten = await memory.remember("a", f"The gate code is {forget}.", by="user")
        archived = await memory.remember(
            "a", f"The vault word is {archive}.", by="user"
        )
        directive = markers()
        await memory.add_directive("a", f"Always mention {directive} when greeting.")
        await memory.wait_idle()
        await runtime_core(memory).scrubber.wait_settled()
    if forgotten.claim_id is None or archived.claim_id is None:
        raise RuntimeError("the template's claims were not stored")
    return Template(
        root,
        {agent: tuple(values) for agent, values in kept.items()},
        {agent: tuple(values) for agent, values in claims.items()},
        (forget, forgotten.claim_id),
        (archive, archived.claim_id),
        markers(),
        import_file,
        imported,
    )


# -- operations and what they must leave --------------------------------------------------
async def _operate(memory: Memory, operation: str, template: Template) -> None:
    fresh = template.fresh
    match operation:
        case "ingest":
            await memory.ingest("a", [_turn("fault-turn", f"Our codename is {fresh}.")])
        case "ingest_settled":
            await memory.ingest("a", [_turn("fault-turn", f"Our codename is {fresh}.")])
            await memory.wait_idle("a")
        case "remember":
            await memory.remember("a", f"The spare key is under {fresh}.", by="user")
        case "forget":
            await memory.forget("a", template.forget[1])
        case "archive":
            await memory.archive("a", template.archive[1])
        case "clear":
            await memory.clear("a")
        case "retire":
            await memory.retire("a")
        case "add_directive":
            await memory.add_directive("a", f"Always mention {fresh} when greeting.")
        case "import":
            await import_memory(memory, template.import_file)
        case _:
            raise ValueError(f"unknown operation {operation!r}")


async def _operate_in_window(
    memory: Memory, vfs: FaultVFS, operation: str, template: Template
) -> None:
    """The operation and the scrub it owes: a removal's checkpoint (where the file's own
    writes and syncs happen) runs in the scrubber just after the call, and without this
    window whether a fault reached it would depend on which task the scheduler ran first.
    The window ends when nothing is owed, or once the armed fault has fired (a persistent
    fault keeps the scrub owed; it settles once the fault is gone)."""
    await _operate(memory, operation, template)
    if operation not in _REMOVALS:
        return
    core = runtime_core(memory)
    while not vfs.fired and await core.database.read(
        lambda reader: scrub_owed(reader.connection)
    ):
        core.scrubber.wake()
        await core.scrubber.wait_attempts(core.scrubber.attempts + 1)


async def _recalls(memory: Memory, agent: str, marker: str) -> bool:
    recall = await memory.recall(agent, marker, k=20)
    return marker in recall.memory_block or marker in recall.directive_block


async def _stored(memory: Memory, agent: str, marker: str) -> bool:
    """Whether any row of the agent's claims, events or directives holds ``marker``."""

    def read(reader: Any) -> bool:
        pattern = f"%{marker}%"
        for table in ("claims", "events", "directives"):
            row = reader.connection.execute(
                f"SELECT EXISTS (SELECT 1 FROM {table}"  # noqa: S608 - fixed names
                " WHERE agent_id = ? AND text LIKE ?)",
                (agent, pattern),
            ).fetchone()
            if row[0]:
                return True
        return False

    return bool(await runtime_core(memory).database.read(read))


def _effect_markers(operation: str, template: Template) -> tuple[str, tuple[str, ...]]:
    """(agent, markers) whose presence says the operation took effect: present for a
    write, absent for a removal."""
    match operation:
        case "ingest" | "ingest_settled" | "remember" | "add_directive":
            return "a", (template.fresh,)
        case "forget":
            return "a", (template.forget[0],)
        case "archive":
            return "a", (template.archive[0],)
        case "clear":
            return "a", (*template.claims["a"], template.forget[0], template.archive[0])
        case "retire":
            return "a", (*template.kept["a"], template.forget[0], template.archive[0])
        case "import":
            return "c", template.imported
    raise ValueError(f"unknown operation {operation!r}")


_AGENTS = ("a", "b", "c")
_REMOVALS = frozenset({"forget", "archive", "clear", "retire"})


async def _took_effect(
    memory: Memory, operation: str, template: Template
) -> bool | None:
    """True if the operation's effect is wholly visible, False if wholly absent, None if
    partly (a violation)."""
    agent, markers = _effect_markers(operation, template)
    if operation == "archive":
        # Archived: out of recall, but the row stays.
        seen = [await _recalls(memory, agent, marker) for marker in markers]
    elif operation in {"clear", "retire"}:
        # A job committed but not finished keeps rows, fenced: what must hold at once
        # is that none of them is recalled (the job finishes by itself).
        seen = [await _recalls(memory, agent, marker) for marker in markers]
    elif operation == "forget":
        # Fully there (stored and recalled) or fully gone: never a row without its
        # index entries, nor the reverse.
        (marker,) = markers
        recalled, stored = (
            await _recalls(memory, agent, marker),
            await _stored(memory, agent, marker),
        )
        seen = [recalled and stored] if recalled == stored else [True, False]
    else:
        seen = [await _stored(memory, agent, marker) for marker in markers]
    present = all(seen)
    if not present and any(seen):
        return None
    return present != (operation in _REMOVALS)


_ERASING = frozenset({"forget", "clear", "retire"})


async def _erased(
    trial: Trial, memory: Memory, operation: str, template: Template
) -> None:
    """Once a forget, clear or retire has succeeded: no row holds what it removed, and
    once the scrubber has settled, no file of the data directory does (I7)."""
    agent, markers = _effect_markers(operation, template)
    for marker in markers:
        if await _stored(memory, agent, marker):
            trial.violation("I2", f"{marker} is still stored after the {operation}")
    settled = await _call(
        trial, runtime_core(memory).scrubber.wait_settled, "the scrub after the fault"
    )
    if settled is not None:
        return
    root = memory.path
    found = list(await _blocking(lambda: files_holding(root, markers)))
    trial.result.count("plaintext_scans")
    if found:
        trial.violation(
            "I7", f"{sorted(set(found))} still on disk after the {operation}"
        )


def _kept_markers(operation: str, template: Template) -> list[tuple[str, str]]:
    """(agent, marker) of acknowledged writes that must stay recallable after the
    operation, whatever it did."""
    kept = [
        (agent, marker) for agent, values in template.kept.items() for marker in values
    ]
    if operation in {"clear", "retire"}:
        # A clear removes the claims and the turns they were learned from.
        kept = [(a, m) for a, m in kept if a != "a"]
    return kept


# -- one trial ------------------------------------------------------------------------------
@attrs.define
class Trial:
    """Records one trial's findings into the mode's result."""

    result: ModeResult
    seed: int
    label: str

    def violation(self, invariant: str, message: str) -> None:
        # The trial is the history: a fresh copy of the template, the fault armed, the
        # operation (the same seed picks the same positions).
        self.result.violations.append(
            Violation(
                invariant,
                f"{self.label}: {message}",
                MODE,
                self.seed,
                (f"fresh template (seed {self.seed})", self.label, message),
            )
        )


async def _call(
    trial: Trial, action: Callable[[], Awaitable[object]], what: str
) -> CairnError | Literal[False] | None:
    """Run ``action`` within the operation budget: None when it returned, the typed
    error it raised, or False (recorded as a violation) when it hung or raised
    anything else."""
    try:
        with trio.fail_after(OPERATION_BUDGET_S):
            await action()
    except CairnError as error:
        return error
    except trio.TooSlowError:
        trial.violation("I8", f"{what} did not return within {OPERATION_BUDGET_S} s")
        return False
    except Exception as error:  # noqa: BLE001 - an untyped error is what this looks for
        trial.violation("I8", f"{what} raised untyped {type(error).__name__}: {error}")
        return False
    return None


async def _integrity(trial: Trial, memory: Memory) -> None:
    def integrity(reader: Any) -> list[Any]:
        return list(reader.connection.execute("PRAGMA integrity_check").fetchall())

    rows = await runtime_core(memory).database.read(integrity)
    if rows != [("ok",)]:
        trial.violation("I6", f"integrity_check answered {rows[:3]}")
    registry = runtime_core(memory).registry
    for agent in _AGENTS:
        # Started, each agent embeds and extracts what it still owes; its maintenance
        # pass publishes the projection the doctor compares with the stored vectors.
        await memory.wait_idle(agent)
        await (await registry.get(agent)).run_maintenance_pass()
    report = await check(memory)
    if not report.ok:
        trial.violation("I6", f"doctor found {list(report.problems)[:3]}")


async def _kept_recallable(
    trial: Trial, memory: Memory, operation: str, template: Template
) -> int:
    checked = 0
    for agent, marker in _kept_markers(operation, template):
        checked += 1
        if not await _recalls(memory, agent, marker):
            trial.violation("I1", f"acknowledged {marker} of {agent} is not recalled")
    return checked


async def _reads_under_fault(trial: Trial, memory: Memory, template: Template) -> None:
    """Another agent's reads serve while a persistent fault holds: a recall finds what
    was acknowledged, and status answers."""
    marker = template.kept["b"][0]
    found: list[bool] = []

    async def read() -> None:
        found.append(await _recalls(memory, "b", marker))
        await memory.status()

    served = await _call(trial, read, "reads under a persistent fault")
    trial.result.count("reads_served" if served is None else "reads_refused")
    if isinstance(served, CairnError):
        trial.violation("I8", f"a read under the fault raised {served!r}")
    elif served is None and not all(found):
        trial.violation("I1", f"acknowledged {marker} not recalled under the fault")


async def _judge_effect(
    trial: Trial,
    memory: Memory,
    vfs: FaultVFS,
    operation: str,
    template: Template,
    outcome: CairnError | None,
) -> bool | None:
    """All or nothing, right after the call: whether it took effect (None: partly)."""
    result = trial.result
    try:
        effect = await _took_effect(memory, operation, template)
    except CairnError as error:
        # The agent cannot start while writes fail (it writes at start): checked once
        # the fault is gone instead.
        result.count("checks_refused_under_fault")
        vfs.clear()
        logger.debug("effect check refused under the fault: %r", error)
        effect = await _took_effect(memory, operation, template)
    if effect is None:
        trial.violation("I6", f"{operation} is partly visible after {outcome!r}")
    elif effect and operation in _REMOVALS and outcome is not None:
        result.count("failed_but_committed")
    elif not effect and outcome is None:
        trial.violation("I1", f"{operation} answered ok but did not take effect")
    return effect


async def _retry(
    trial: Trial,
    memory: Memory,
    operation: str,
    template: Template,
    effect: bool | None,
) -> None:
    """The failed operation again, the fault gone: it succeeds and takes effect."""
    retried = await _call(
        trial, functools.partial(_operate, memory, operation, template), "the retry"
    )
    if isinstance(retried, UnknownMemoryError) and effect:
        retried = None  # the forget had committed before the fault struck
    if isinstance(retried, CairnError):
        trial.violation(
            "I8",
            f"the retry after the fault cleared raised {type(retried).__name__}:"
            f" {retried}",
        )
    elif retried is None:
        trial.result.count("recovered")
        if not await _took_effect(memory, operation, template):
            trial.violation("I1", f"the retried {operation} did not take effect")


async def fault_trial(
    trial: Trial,
    template: Template,
    root: Path,
    vfs: FaultVFS,
    operation: str,
    plan: FaultPlan,
) -> None:
    """``operation`` on a fresh copy of the template with ``plan`` armed, and every
    check of the module docstring."""
    result = trial.result
    await _blocking(lambda: shutil.copytree(template.root, root))
    async with _open(root, vfs.name) as memory:
        await memory.wait_idle()
        for agent in ("a", "b"):
            # Both agents running before the fault (an agent writes as it starts).
            await memory.recall(agent, "warm up")
        vfs.arm(plan)
        outcome = await _call(
            trial,
            functools.partial(_operate_in_window, memory, vfs, operation, template),
            operation,
        )
        fired = vfs.fired
        result.count("faults_fired" if fired else "faults_not_reached")
        if outcome is False:
            vfs.clear()
            return
        if outcome is None:
            result.count("absorbed" if fired else "completed")
        else:
            result.count("typed_errors")
        if plan.persistent and fired:
            await _reads_under_fault(trial, memory, template)
        effect = await _judge_effect(trial, memory, vfs, operation, template, outcome)
        vfs.clear()
        if outcome is not None:
            await _retry(trial, memory, operation, template, effect)
        # Background work the fault failed (an embedding, an extraction) catches up.
        await _call(trial, memory.wait_idle, "settling after the fault")
        if operation in _ERASING:
            await _erased(trial, memory, operation, template)
        result.count(
            "acknowledged_checked",
            await _kept_recallable(trial, memory, operation, template),
        )
    # The doctor compares the published vector projection too: after a clean close.
    async with _open(root, None) as memory:
        await _integrity(trial, memory)


async def count_calls(
    template: Template, root: Path, vfs: FaultVFS, operation: str, kind: FaultKind
) -> int:
    """How many calls the fault could strike while the operation runs."""
    await _blocking(lambda: shutil.copytree(template.root, root))
    async with _open(root, vfs.name) as memory:
        await memory.wait_idle()
        for agent in ("a", "b"):
            await memory.recall(agent, "warm up")
        vfs.arm(FaultPlan(kind.calls, kind.file, nth=2**62))
        with trio.fail_after(OPERATION_BUDGET_S):
            await _operate_in_window(memory, vfs, operation, template)
        seen = vfs.seen
        vfs.clear()
    return seen


def _positions(total: int, wanted: int, rng: random.Random) -> list[int]:
    if total <= 0:
        return []
    if wanted <= 0 or wanted >= total:
        return list(range(1, total + 1))
    return sorted(rng.sample(range(1, total + 1), wanted))


# -- power loss -----------------------------------------------------------------------------
def _image_state(image: Path) -> tuple[list[Any], dict[str, set[str]]]:
    """integrity_check of the image's database, and per agent the texts it stores."""
    connection = open_connection(image / "cairn.db")
    try:
        integrity = list(connection.execute("PRAGMA integrity_check").fetchall())
        texts: dict[str, set[str]] = {}
        for table in ("claims", "events"):
            for agent, text in connection.execute(
                f"SELECT agent_id, text FROM {table}"  # noqa: S608 - fixed names
            ):
                texts.setdefault(str(agent), set()).add(str(text))
        return integrity, texts
    finally:
        connection.close()


def _holds(texts: dict[str, set[str]], agent: str, marker: str) -> bool:
    return any(marker in text for text in texts.get(agent, ()))


async def power_loss_trial(
    trial: Trial, template: Template, root: Path, vfs: FaultVFS, rng: random.Random
) -> None:
    """A short sequence of acknowledged operations; after each, the power is cut (in an
    image) with none, a seeded prefix, or a torn part of each file's unsynced writes
    surviving."""
    result = trial.result
    await _blocking(lambda: shutil.copytree(template.root, root / "data"))
    markers = MarkerSource(rng)
    steps: list[tuple[str, str]] = [
        ("ingest", markers()),
        ("forget", template.forget[0]),
        ("ingest", markers()),
        ("clear", "b"),
        ("ingest", markers()),
    ]
    acknowledged: list[tuple[str, str, bool]] = []
    """(what, marker, synced by a later durable commit) in order."""
    images = 0
    async with _open(root / "data", vfs.name) as memory:
        await memory.wait_idle()
        vfs.record()
        try:
            for number, (what, marker) in enumerate(steps):
                if what == "ingest":
                    await memory.ingest(
                        "a", [_turn(f"p{number}", f"Codename {marker}.")]
                    )
                elif what == "forget":
                    await memory.forget("a", template.forget[1])
                else:
                    await memory.clear("b")
                if what != "ingest":
                    # A durable commit synced the WAL: everything before it is on disk.
                    acknowledged = [(w, m, True) for w, m, _ in acknowledged]
                acknowledged.append((what, marker, what != "ingest"))
                for survivor in ("none", "prefix", "torn"):
                    images += 1
                    image = root / f"image-{images}"
                    cut = functools.partial(
                        vfs.power_loss_image,
                        memory.path,
                        image,
                        keep=_survivors(survivor, rng),
                        tear_bytes=rng.choice((512, 1024, 2048))
                        if survivor == "torn"
                        else None,
                    )
                    await _blocking(cut)
                    await _blocking(
                        functools.partial(
                            _check_image, trial, image, tuple(acknowledged), template
                        )
                    )
                    if survivor == "none" and any(
                        w == "forget" for w, _, _ in acknowledged
                    ):
                        await _scrubbed_after_reboot(trial, image, template.forget[0])
                    await _blocking(functools.partial(shutil.rmtree, image))
        finally:
            vfs.record(on=False)
    result.count("power_loss.images", images)


async def _scrubbed_after_reboot(trial: Trial, image: Path, forgotten: str) -> None:
    """The reboot: opening the image scrubs what a forget left on disk before serving;
    after it no file of the data directory holds the forgotten text (I7)."""
    async with _open(image, None) as memory:
        if await _recalls(memory, "a", forgotten):
            trial.violation(
                "I2", f"forgotten {forgotten} is recalled after a power loss"
            )

    held = await _blocking(lambda: files_holding(image, [forgotten]))
    found = [str(Path(path).relative_to(image)) for path in held.get(forgotten, [])]
    trial.result.count("power_loss.plaintext_scans")
    if found:
        trial.violation("I7", f"forgotten {forgotten} is still in {found} after reboot")


def _survivors(survivor: str, rng: random.Random) -> Callable[[str, int], int]:
    """How many of a file's unsynced operations reach the disk."""
    if survivor == "prefix":
        return lambda _path, pending: rng.randint(0, pending)
    if survivor == "torn":
        return lambda _path, pending: max(0, pending - 1)
    return lambda _path, _pending: 0


def _check_image(
    trial: Trial,
    image: Path,
    acknowledged: Sequence[tuple[str, str, bool]],
    template: Template,
) -> None:
    result = trial.result
    integrity, texts = _image_state(image)
    if integrity != [("ok",)]:
        trial.violation("I6", f"power-loss image integrity_check: {integrity[:3]}")
        return
    for what, marker, synced in acknowledged:
        if what == "forget" and _holds(texts, "a", marker):
            trial.violation("I2", f"forgotten {marker} is back after a power loss")
        elif what == "clear" and any(
            _holds(texts, "b", claim) for claim in template.claims["b"]
        ):
            # A clear's first durable commit starts the job; its claims are fenced
            # and the job resumes at open, so they must be gone or under a job.
            if not _clear_pending(image):
                trial.violation("I2", "cleared claims of b are back after a power loss")
        elif what == "ingest" and not _holds(texts, "a", marker):
            if synced:
                trial.violation(
                    "I1", f"ingest {marker} synced by a later commit is lost"
                )
            else:
                result.count("power_loss.normal_ingests_lost")
        elif what == "ingest":
            result.count("power_loss.ingests_kept")
    result.count(
        "power_loss.durable_checked",
        sum(1 for w, _, _ in acknowledged if w != "ingest"),
    )


def _clear_pending(image: Path) -> bool:
    connection = open_connection(image / "cairn.db")
    try:
        row = connection.execute(
            "SELECT count(*) FROM clear_jobs WHERE agent_id = 'b'"
        ).fetchone()
        return row is not None and bool(row[0])
    finally:
        connection.close()


# -- read-only data directory ---------------------------------------------------------------
async def read_only_trial(
    trial: Trial, template: Template, root: Path, vfs: FaultVFS
) -> None:
    result = trial.result
    await _blocking(lambda: shutil.copytree(template.root, root))
    async with _open(root, vfs.name) as memory:
        await memory.wait_idle()
        for agent in ("a", "b"):
            await memory.recall(agent, "warm up")
        vfs.arm(read_only_plan())
        for operation in ("ingest", "remember", "forget", "add_directive"):
            outcome = await _call(
                trial,
                functools.partial(_operate, memory, operation, template),
                operation,
            )
            if outcome is None:
                trial.violation("I6", f"{operation} succeeded on a read-only directory")
            elif outcome is not False:
                result.count("read_only.typed_errors")
        for agent, marker in _kept_markers("ingest", template):
            served = await _call(
                trial,
                functools.partial(_recalls, memory, agent, marker),
                "a read-only recall",
            )
            if served is None:
                result.count("read_only.reads_served")
            else:
                result.count("read_only.reads_refused")
                if isinstance(served, CairnError):
                    trial.violation(
                        "I8", f"a recall of a read-only directory raised {served!r}"
                    )
        vfs.clear()
        outcome = await _call(
            trial, lambda: _operate(memory, "ingest", template), "ingest after"
        )
        if isinstance(outcome, CairnError):
            trial.violation(
                "I8", f"ingest after the directory is writable: {outcome!r}"
            )
    async with _open(root, None) as memory:
        await _integrity(trial, memory)


# -- opening under a fault --------------------------------------------------------------------
async def open_trial(
    trial: Trial, template: Template, root: Path, vfs: FaultVFS, kind: FaultKind
) -> None:
    """Opening a populated data directory while ``kind`` fails every matching call: a
    typed error (or an open that serves, if it needed none of those calls), never an
    untyped one; once the fault is gone it opens and passes the checks."""
    result = trial.result
    await _blocking(lambda: shutil.copytree(template.root, root))
    vfs.arm(kind.plan(1, persistent=True))

    async def open_and_read() -> None:
        async with _open(root, vfs.name) as memory:
            await _recalls(memory, "b", template.kept["b"][0])

    try:
        outcome = await _call(trial, open_and_read, f"opening under {kind.name}")
    finally:
        vfs.clear()
    if outcome is None:
        result.count("open.served")
    elif outcome is not False:
        result.count("open.typed_errors")
    async with _open(root, None) as memory:
        await _kept_recallable(trial, memory, "open", template)
        await _integrity(trial, memory)


# -- the mode -------------------------------------------------------------------------------
async def _bounded(
    trial: Trial, vfs: FaultVFS, root: Path, run: Callable[[Path], Awaitable[None]]
) -> None:
    """One trial in its own directory, removed after it; a trial that hangs or ends in
    an untyped error is a violation of its own, and the mode goes on."""
    try:
        with trio.fail_after(TRIAL_BUDGET_S):
            await run(root)
    except trio.TooSlowError:
        trial.violation("I8", f"the trial did not finish within {TRIAL_BUDGET_S} s")
    except Exception as error:  # noqa: BLE001 - reported with its seed, never a crash
        trial.violation("I8", f"the trial ended in {type(error).__name__}: {error}")
    finally:
        vfs.clear()
        vfs.record(on=False)
        with trio.CancelScope(shield=True):
            await _blocking(lambda: shutil.rmtree(root, ignore_errors=True))
    trial.result.trials += 1


async def run_faults(root: Path, seed: int, profile: Profile) -> ModeResult:
    """Run the fault mode under ``root`` (a scratch directory it fills and empties).

    Every operation × fault kind × position (``profile.fault_indexes`` positions spread
    by the seed, 0: all) × transient and persistent, or a seeded sample of them up to
    ``profile.fault_trials`` trials (0: no limit); one power-loss sequence per
    ``profile.crash_point_seeds``; opening under every fault kind; a read-only
    directory. Figures count what was tried and seen; violations name the trial.
    """
    result = ModeResult(MODE)
    started = time.monotonic()
    rng = random.Random(seed)
    await _blocking(lambda: root.mkdir(parents=True, exist_ok=True))
    scratch = Path(
        await _blocking(lambda: tempfile.mkdtemp(prefix="faults-", dir=root))
    )
    vfs = FaultVFS(f"cairn-faults-{seed}")
    number = 0

    def fresh() -> Path:
        nonlocal number
        number += 1
        return scratch / f"trial-{number}"

    try:
        template = await build_template(scratch, seed)
        pairs = [(operation, kind) for operation in OPERATIONS for kind in FAULT_KINDS]
        if profile.fault_trials:
            rng.shuffle(pairs)  # a seeded sample of them, up to the trial budget
        for operation, kind in pairs:
            if profile.fault_trials and result.operations >= profile.fault_trials:
                break
            counting = fresh()
            total = await count_calls(template, counting, vfs, operation, kind)
            await _blocking(
                functools.partial(shutil.rmtree, counting, ignore_errors=True)
            )
            result.count(f"positions.{operation}", total)
            for position in _positions(total, profile.fault_indexes, rng):
                for persistent in (False, True):
                    plan = kind.plan(position, persistent=persistent)
                    trial = Trial(
                        result,
                        seed,
                        f"{operation} with {kind.name} {plan.describe()}",
                    )
                    await _bounded(
                        trial,
                        vfs,
                        fresh(),
                        functools.partial(
                            fault_trial,
                            trial,
                            template,
                            vfs=vfs,
                            operation=operation,
                            plan=plan,
                        ),
                    )
                    result.operations += 1
        for _ in range(max(1, profile.crash_point_seeds)):
            trial = Trial(result, seed, "power loss")
            await _bounded(
                trial,
                vfs,
                fresh(),
                functools.partial(power_loss_trial, trial, template, vfs=vfs, rng=rng),
            )
        for kind in FAULT_KINDS:
            trial = Trial(result, seed, f"opening under {kind.name}")
            await _bounded(
                trial,
                vfs,
                fresh(),
                functools.partial(open_trial, trial, template, vfs=vfs, kind=kind),
            )
        trial = Trial(result, seed, "read-only data directory")
        await _bounded(
            trial,
            vfs,
            fresh(),
            functools.partial(read_only_trial, trial, template, vfs=vfs),
        )
    finally:
        vfs.close()
        with trio.CancelScope(shield=True):
            await _blocking(lambda: shutil.rmtree(scratch, ignore_errors=True))
        result.seconds = time.monotonic() - started
    return result
