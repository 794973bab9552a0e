"""Named crash points: places where a process can be made to die on purpose.

The stress harness (``cairn stress``) and the crash tests start a real cairn process with
``CAIRN_CRASH_AT=<point>`` or ``CAIRN_CRASH_AT=<point>:<occurrence>`` in its environment;
the *occurrence*-th time (1 by default) the code reaches that point, the process sends
itself SIGKILL, exactly as a power cut or the OOM killer would end it, with no cleanup.
Without the variable a crash point costs one dictionary lookup.

Every point is declared in :data:`CRASH_POINTS` with what has and has not happened when it
fires; :func:`reach` refuses an undeclared name so a typo in a test cannot silently never
fire.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["CRASH_POINTS", "ENVIRONMENT_VARIABLE", "UnknownCrashPointError", "reach"]

ENVIRONMENT_VARIABLE = "CAIRN_CRASH_AT"

CRASH_POINTS: dict[str, str] = {
    "forget.after_tombstone": "a forget's tombstones are written, the claim or turn not yet"
    " deleted (same transaction: nothing of the forget is committed)",
    "forget.after_commit": "a forget is committed, its vectors not yet removed from the"
    " projection and the caller not yet answered",
    "clear.after_tombstone": "a clear batch tombstoned the IDs of the turns it deletes, the"
    " rows not yet deleted (same transaction: nothing of the batch is committed)",
    "clear.phase": "a clear job is about to run its next step (the steps so far committed)",
    "retire.phase": "a retire job is about to run its next step",
    "vectors.publish": "a vector projection file is written and synced under its staging"
    " name, not yet renamed over the published one",
    "batch.after_commit": "a batch's extraction result is committed, its events not yet"
    " embedded and the session cursor not yet advanced",
    "embedding.after_commit": "embeddings are committed, the projection not yet updated",
    "migration.step": "a schema migration's statements ran inside its transaction, not yet"
    " committed",
    "migration.committed": "a schema migration is committed, the next one not yet begun",
    "import.records": "an import's next chunk of records is being written, in its"
    " transaction (the chunks before it committed, the rest of the file not yet read)",
    "ingest.after_commit": "an ingest request's turns are committed, the caller not yet"
    " answered",
}


class UnknownCrashPointError(ValueError):
    """A crash point name that is not declared in :data:`CRASH_POINTS`."""


def _armed() -> tuple[str, int] | None:
    value = os.environ.get(ENVIRONMENT_VARIABLE)
    if not value:
        return None
    name, _, occurrence = value.partition(":")
    if name not in CRASH_POINTS:
        raise UnknownCrashPointError(
            f"{ENVIRONMENT_VARIABLE}={value!r} names no crash point; known: "
            + ", ".join(sorted(CRASH_POINTS))
        )
    return name, int(occurrence) if occurrence else 1


_ARMED = _armed()
_reached: dict[str, int] = {}


def reach(name: str) -> None:
    """Die here with SIGKILL if this process was started to crash at this point now."""
    if name not in CRASH_POINTS:
        raise UnknownCrashPointError(f"{name!r} is not a declared crash point")
    if _ARMED is None or _ARMED[0] != name:
        return
    count = _reached.get(name, 0) + 1
    _reached[name] = count
    if count == _ARMED[1]:
        # Say where, for the harness's report, then die without any cleanup.
        sys.stderr.write(f"cairn: crash point {name} (occurrence {count})\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
