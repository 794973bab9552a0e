"""The passes a runtime runs over each batch of dirty work, in order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cairn.maintenance.learning import LearningPass

if TYPE_CHECKING:
    from cairn.maintenance.passes import MaintenancePass

__all__ = ["default_passes"]


def default_passes() -> tuple[MaintenancePass[Any], ...]:
    """The built-in passes, in the order they run over a batch (learning last: it reads
    what the others changed)."""
    return (LearningPass(),)
