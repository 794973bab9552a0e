"""What becomes of a batch's seeds once every pass has had its say: pure policy.

Each pass answers an outcome per seed (a seed not named is ``DONE``). Over the passes of
one batch the strongest answer stands: ``TERMINAL`` (the seed can never be worked) over
``RETRY`` (a pass failed on it for now) over ``STALE`` and ``DONE``. A seed that retries
waits ``base · 2^attempts`` (capped) on the domain clock before it is handed out again,
and goes behind work not yet tried (cairn.store.dirty).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import attrs

from cairn.maintenance.passes import SeedOutcome
from cairn.store.dirty import DirtySeed

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


__all__ = ["BatchVerdict", "merge_outcomes", "retry_delay_s", "verdict"]

_STRENGTH = {
    SeedOutcome.DONE: 0,
    SeedOutcome.STALE: 1,
    SeedOutcome.RETRY: 2,
    SeedOutcome.TERMINAL: 3,
}
# The error class name recorded for a seed a pass answered RETRY for without raising.
RETRY_ANSWERED = "RetryAnswered"


def merge_outcomes(
    into: dict[int, SeedOutcome], outcomes: Mapping[int, SeedOutcome]
) -> None:
    """Fold one pass's outcomes into the batch's, the stronger answer winning."""
    for rowid, outcome in outcomes.items():
        held = into.get(rowid, SeedOutcome.DONE)
        if _STRENGTH[outcome] > _STRENGTH[held]:
            into[rowid] = outcome


def retry_delay_s(attempts: int, base_s: float, cap_s: float) -> float:
    """How long a seed that has failed ``attempts`` times before waits now."""
    return float(min(cap_s, base_s * 2.0 ** max(0, attempts)))


@attrs.frozen
class BatchVerdict:
    settle: tuple[DirtySeed, ...]
    """Done, stale or terminal: deleted at the generation read."""
    retry: tuple[tuple[DirtySeed, str, dt.datetime], ...]
    """Each with the error class name and the time before which it is not tried."""
    terminal: tuple[DirtySeed, ...]
    """Settled because a pass said the seed can never be worked (logged)."""


def verdict(
    seeds: Sequence[DirtySeed],
    outcomes: Mapping[int, SeedOutcome],
    errors: Mapping[int, str],
    now: dt.datetime,
    *,
    base_s: float,
    cap_s: float,
) -> BatchVerdict:
    """Split a worked batch into what settles and what retries."""
    settle: list[DirtySeed] = []
    retry: list[tuple[DirtySeed, str, dt.datetime]] = []
    terminal: list[DirtySeed] = []
    for seed in seeds:
        outcome = outcomes.get(seed.claim_rowid, SeedOutcome.DONE)
        if outcome is SeedOutcome.RETRY:
            wait = dt.timedelta(seconds=retry_delay_s(seed.attempts, base_s, cap_s))
            retry.append(
                (seed, errors.get(seed.claim_rowid, RETRY_ANSWERED), now + wait)
            )
            continue
        settle.append(seed)
        if outcome is SeedOutcome.TERMINAL:
            terminal.append(seed)
    return BatchVerdict(tuple(settle), tuple(retry), tuple(terminal))
