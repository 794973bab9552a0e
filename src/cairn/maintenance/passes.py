"""The contract between the maintenance actor and its passes.

A pass sees a :class:`Work` item: a bounded batch of dirty seeds (claims changed since
maintenance last looked) and, per seed, bounded same-scope neighbours. It runs in up to
three steps:

1. :meth:`MaintenancePass.plan`, on a reader snapshot (a reader thread): decide what to
   change. Cheap to throw away: nothing is written.
2. :meth:`MaintenancePass.question` / :meth:`MaintenancePass.answered` (optional): one
   question for the configured text provider, asked by the actor under a deadline and
   cancelled by stop; a pass that needs no model returns ``None``.
3. :meth:`MaintenancePass.apply`, inside the write coordinator's transaction after the
   fence check: re-validate the plan against the rows as they are now (a claim may have
   been forgotten, archived or changed since the snapshot) and write it, lineage included.

``apply`` answers a :class:`PassResult`: per seed an outcome (done, stale, terminal, or
retry later) and the claims it changed, which get a new dirty generation.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import attrs
import msgspec

from cairn.domain.ids import AgentId
from cairn.store.dirty import DirtySeed

if TYPE_CHECKING:
    import apsw


__all__ = [
    "MaintenancePass",
    "PassResult",
    "ProviderQuestion",
    "SeedOutcome",
    "Work",
]


class SeedOutcome(enum.StrEnum):
    DONE = "done"
    """The pass looked and did what it had to (or nothing was needed)."""
    STALE = "stale"
    """The seed's claim is gone or changed: nothing to do for this generation."""
    TERMINAL = "terminal"
    """The seed can never be worked (malformed row): settle it, log it."""
    RETRY = "retry"
    """A temporary failure: keep the seed dirty and rotate it behind unprocessed work."""


@attrs.frozen
class Work:
    """What one pass of maintenance works on."""

    agent_id: AgentId
    now: dt.datetime
    seeds: tuple[DirtySeed, ...]
    neighbours: Mapping[int, tuple[int, ...]] = attrs.field(factory=dict)
    """Seed claim rowid → same-scope neighbour claim rowids (vector and lexical),
    bounded, best first."""


# JSON schema types a question's answer fields may have, as msgspec decodes them.
_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict[str, Any],
}


def _field_type(schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return list[_field_type(items) if isinstance(items, Mapping) else Any]  # type: ignore[misc]
    return _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any


@attrs.frozen
class ProviderQuestion:
    """One JSON completion for the text provider (``complete_json``).

    The answer's shape is ``answer_type`` (a :class:`msgspec.Struct`) when given, else
    the object ``schema`` describes (its top-level ``properties``; a field not
    ``required`` may be missing or null). The pass receives the decoded answer as a
    mapping in :meth:`MaintenancePass.answered`.
    """

    system: str
    user: str
    schema: Mapping[str, Any]
    answer_type: type[msgspec.Struct] | None = None
    max_tokens: int | None = None
    """The answer's token cap (``None``: ``MemoryConfig.maintenance_max_tokens``)."""

    def answer_struct(self) -> type[msgspec.Struct]:
        """The msgspec type the provider's answer is constrained to and decoded into."""
        if self.answer_type is not None:
            return self.answer_type
        properties = self.schema.get("properties", {})
        required = set(self.schema.get("required", ()))
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        for name, spec in properties.items():
            kind = _field_type(spec if isinstance(spec, Mapping) else {})
            if name in required:
                fields.append((str(name), kind))
            else:
                fields.append((str(name), kind | None, None))
        # Required fields first: msgspec wants defaults after them.
        fields.sort(key=len)
        return msgspec.defstruct("MaintenanceAnswer", fields)


@attrs.frozen
class PassResult:
    outcomes: Mapping[int, SeedOutcome] = attrs.field(factory=dict)
    """Seed claim rowid → outcome; a seed not named is ``DONE``."""
    changed: tuple[int, ...] = ()
    """Claim rowids this pass changed (they get a new dirty generation)."""
    removed: tuple[int, ...] = ()
    """Claim rowids this pass deleted (merged away): their live vectors go after the
    commit, as a forgotten claim's do."""
    counts: Mapping[str, int] = attrs.field(factory=dict)
    """What it did, by name (``merged``, ``superseded``...), for status and benches."""


P = TypeVar("P")


class MaintenancePass(Protocol[P]):
    name: ClassVar[str]

    def plan(self, connection: apsw.Connection, work: Work) -> P | None:
        """What to change, read on a snapshot; ``None``: nothing to do."""
        ...

    def question(self, plan: P) -> ProviderQuestion | None:
        """A question for the text provider, or ``None`` (no model needed)."""
        ...

    def answered(self, plan: P, answer: Mapping[str, Any] | None) -> P | None:
        """The plan after the model's answer (``None`` when the provider failed or
        none is configured: the pass decides what stands without it)."""
        ...

    def apply(self, connection: apsw.Connection, work: Work, plan: P) -> PassResult:
        """Re-validate and write ``plan`` in the caller's transaction."""
        ...
