"""The passes a runtime runs over each batch of dirty work, in order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cairn.maintenance.challenge import ChallengePass
from cairn.maintenance.learning import LearningPass
from cairn.maintenance.merge import MergePass
from cairn.maintenance.persona import PersonaPass
from cairn.maintenance.reflection import ReflectionPass

if TYPE_CHECKING:
    from cairn.maintenance.passes import MaintenancePass

__all__ = ["default_passes"]


def default_passes() -> tuple[MaintenancePass[Any], ...]:
    """The built-in passes, in the order they run over a batch."""
    return (
        # Near-duplicates first: later passes then see one claim per fact.
        MergePass(),
        # Contradictions after the other passes have settled what each claim says.
        ChallengePass(),
        # Observations several claims support (only with a text provider).
        ReflectionPass(),
        # Signals and beliefs from what the passes before it changed.
        LearningPass(),
        # Last: the projection is rebuilt from the claims as the other passes left them.
        PersonaPass(),
    )
