"""The drain a starting server runs over the hook spool.

A hook call that found no server spooled its turn (cairn.hooks.spool). The next hook call
that reaches a server ingests the spool, and so does ``cairn serve`` itself when it starts
(before it publishes its socket, so no hook call drains beside it): a turn captured while
the server was down is stored as soon as a server runs, whether or not the host calls a
hook again. Ingesting a file twice (a crash between ingest and removal, or both drains
reaching the same file) is a duplicate by the messages' stable IDs, never a second event.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING

import trio

from cairn.errors import InvalidInputError
from cairn.hooks.envelope import turns
from cairn.runtime.threads import run_in_thread

if TYPE_CHECKING:
    from cairn.hooks.spool import Spool
    from cairn.runtime.memory import Memory

__all__ = ["drain_spool"]

logger = logging.getLogger("cairn.hooks.replay")


async def drain_spool(memory: Memory, spool: Spool) -> int:
    """Ingest every spooled envelope, oldest first; how many files were ingested.

    A file the runtime refuses as bad input (InvalidInputError: an ID or a message it
    will never take) is moved aside to ``rejected/`` rather than retried at every start;
    an unreadable file stays where it is. Any other error stops the drain and propagates:
    the files not yet ingested stay for the next start or hook call."""
    # The spool's files are read, moved and removed off the loop, one at a time.
    files = trio.CapacityLimiter(1)
    pending = await run_in_thread(lambda: list(spool.pending()), limiter=files)
    drained = 0
    for path, envelope in pending:
        if envelope is None:
            logger.warning("hook spool: %s is unreadable; left in place", path)
            continue
        try:
            if envelope.messages:
                await memory.ingest(envelope.actor, turns(envelope))
        except InvalidInputError as error:
            moved = await run_in_thread(
                functools.partial(spool.reject, path), limiter=files
            )
            logger.warning(
                "hook spool: %s refused (%s); moved to %s", path, error, moved
            )
            continue
        await run_in_thread(functools.partial(spool.remove, path), limiter=files)
        drained += 1
    if drained:
        logger.info("hook spool: ingested %d spooled turn(s)", drained)
    return drained
