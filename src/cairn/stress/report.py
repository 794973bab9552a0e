"""What a harness run found: per mode, the trials run, the figures behind each invariant,
and every violation with the seed and the shortest history that shows it."""

from __future__ import annotations

import traceback
from typing import Any

import attrs

__all__ = ["INVARIANTS", "ModeResult", "StressReport", "Violation", "describe_error"]

INVARIANTS = {
    "I1": "no lost acknowledged write",
    "I2": "no resurrection of forgotten, cleared or retired text",
    "I3": "no cross-agent read",
    "I4": "no stale commit",
    "I5": "exactly-once receipts",
    "I6": "integrity (SQLite, doctor, vector projection)",
    "I7": "no forgotten plaintext on disk",
    "I8": "no hang",
    "I9": "a replaced value is recalled as history, never as current",
    "TE": "every refusal is a typed error, and nothing crashes",
}


def describe_error(error: BaseException) -> str:
    """The innermost errors of a crash, with where each was raised."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe_error(inner) for inner in error.exceptions)
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}: {error}{where}"


@attrs.frozen
class Violation:
    invariant: str
    """``I1`` … ``I9`` (:data:`INVARIANTS`)."""
    message: str
    mode: str
    seed: int
    history: tuple[str, ...] = ()
    """The shortest history found that shows it, one line per event."""
    scheduler_seed: int | None = None
    """The seed of the interleaving (the schedules mode; ``seed`` is the operations')."""
    trial: int | None = None
    """The trial that showed it (``--trial`` replays it), where a mode numbers them."""

    def __attrs_post_init__(self) -> None:
        if self.invariant not in INVARIANTS:
            raise ValueError(f"unknown invariant {self.invariant!r}")

    def as_json(self) -> dict[str, Any]:
        return {
            "invariant": self.invariant,
            "meaning": INVARIANTS[self.invariant],
            "message": self.message,
            "mode": self.mode,
            "seed": self.seed,
            "history": list(self.history),
        } | {
            name: value
            for name, value in (
                ("scheduler_seed", self.scheduler_seed),
                ("trial", self.trial),
            )
            if value is not None
        }


@attrs.define
class ModeResult:
    mode: str
    trials: int = 0
    operations: int = 0
    seconds: float = 0.0
    figures: dict[str, float] = attrs.field(factory=dict)
    """Counts behind the invariants (acknowledged writes checked, kills, faults …)."""
    violations: list[Violation] = attrs.field(factory=list)

    def count(self, figure: str, amount: float = 1) -> None:
        self.figures[figure] = self.figures.get(figure, 0) + amount

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "trials": self.trials,
            "operations": self.operations,
            "seconds": round(self.seconds, 2),
            "figures": dict(sorted(self.figures.items())),
            "violations": [violation.as_json() for violation in self.violations],
        }


@attrs.define
class StressReport:
    seed: int
    profile: str
    data_dir: str
    modes: list[ModeResult] = attrs.field(factory=list)

    @property
    def violations(self) -> list[Violation]:
        return [violation for mode in self.modes for violation in mode.violations]

    @property
    def ok(self) -> bool:
        return not self.violations

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "seed": self.seed,
            "profile": self.profile,
            "data_dir": self.data_dir,
            "modes": [mode.as_json() for mode in self.modes],
            "replay": f"cairn --data DIR stress --seed {self.seed} --profile {self.profile}",
        }
