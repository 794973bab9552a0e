"""Seeded interleavings: trio's batch order and the harness's own yields, both from a seed.

trio runs every task that is runnable at the start of a scheduler pass as one batch, in
an order it randomises on purpose (so code does not come to rely on one): its private
``trio._core._run._r``, an unseeded ``random.Random``, decides per pass. Hypothesis seeds
that generator for each example and switches trio to a full shuffle of every batch
(``_ALLOW_DETERMINISTIC_SCHEDULING``, set by trio's Hypothesis plugin as soon as
Hypothesis is imported). There is no public way to seed it, so :func:`seeded_scheduler`
sets both attributes for one run and puts them back afterwards, and refuses with
:class:`SchedulerUnavailableError` if a trio release has renamed them.

It chooses trio's plain mode (one coin per pass: the batch as queued, or reversed), not
the shuffle, and chooses it in every process: the shuffle draws once per runnable task,
and the engine's own tasks become runnable when a SQLite or usearch thread finishes, at
a moment no seed fixes, which would shift every later draw. One coin per pass keeps the
relative order of the harness's own tasks a function of the seed for as long as they
only yield to each other, whatever else is runnable; and a pytest process (which imports
Hypothesis) schedules the same as ``cairn stress``.

:class:`YieldInjector` adds a seeded number of ``trio.lowlevel.checkpoint()`` calls at
each of a client's await points, a function of where it is (client, call, point), so the
count does not depend on what the other clients did or what a call answered: a
different seed moves every client by a different number of passes.

What a seed fixes: the operations (the workload's own seed), every client's yield
pattern, and trio's coin for each pass. What it cannot fix: when a thread finishes. So
the order of calls is the seed's up to the first call that waits on a thread, and from
then on the seed shapes it without deciding it.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import random
from typing import TYPE_CHECKING

import attrs
import trio

from cairn.errors import CairnError

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["SchedulerUnavailableError", "YieldInjector", "seeded_scheduler"]

_RUN_MODULE = "trio._core._run"
_BATCH_RANDOM = "_r"
_SHUFFLE_FLAG = "_ALLOW_DETERMINISTIC_SCHEDULING"


class SchedulerUnavailableError(CairnError, RuntimeError):
    """This trio has no batch randomiser the harness knows how to seed."""


def _run_module() -> object:
    try:
        module = importlib.import_module(_RUN_MODULE)
    except ImportError as error:
        raise SchedulerUnavailableError(
            f"trio {trio.__version__} has no {_RUN_MODULE}; the schedules mode needs"
            " a trio whose scheduler it can seed (0.35 is known to work)"
        ) from error
    batch_random = getattr(module, _BATCH_RANDOM, None)
    flag = getattr(module, _SHUFFLE_FLAG, None)
    if not isinstance(batch_random, random.Random) or not isinstance(flag, bool):
        raise SchedulerUnavailableError(
            f"trio {trio.__version__} no longer keeps its batch order in"
            f" {_RUN_MODULE}.{_BATCH_RANDOM} and {_SHUFFLE_FLAG}; the schedules mode"
            " cannot seed it (0.35 is known to work)"
        )
    return module


@contextlib.contextmanager
def seeded_scheduler(seed: int) -> Iterator[None]:
    """Within the block, trio orders each batch of runnable tasks by a coin seeded with
    ``seed`` (see the module docstring); afterwards the generator's state and trio's
    mode are what they were, so Hypothesis and the rest of the process see no change."""
    module = _run_module()
    batch_random: random.Random = getattr(module, _BATCH_RANDOM)
    saved_state = batch_random.getstate()
    saved_flag: bool = getattr(module, _SHUFFLE_FLAG)
    batch_random.seed(seed)
    setattr(module, _SHUFFLE_FLAG, False)
    try:
        yield
    finally:
        setattr(module, _SHUFFLE_FLAG, saved_flag)
        batch_random.setstate(saved_state)


@attrs.frozen
class YieldInjector:
    """At each await point of a call, a client yields a seeded number (0 to ``most``)
    of times: a function of the seed, the client, which of its calls it is and which
    point of the call, so nothing that happened before (a call refused early, an answer
    that came late) changes how often it yields later."""

    seed: int
    most: int = 3

    def yields(self, client: int, call: int, point: int) -> int:
        key = f"{self.seed}:{client}:{call}:{point}".encode()
        digest = hashlib.blake2b(key, digest_size=8).digest()
        return int.from_bytes(digest, "big") % (self.most + 1)

    async def pause(self, client: int, call: int, point: int) -> None:
        for _ in range(self.yields(client, call, point)):
            await trio.lowlevel.checkpoint()
