"""The public surface is pinned: adding or removing a name is a deliberate act."""

from __future__ import annotations

import cairn
import cairn.errors


def test_public_surface() -> None:
    assert sorted(cairn.__all__) == [
        "Allocation",
        "Degradation",
        "DomainClock",
        "IngestReport",
        "IntakeOutcome",
        "IntakeResult",
        "Manifest",
        "Memory",
        "Recall",
        "RecallContext",
        "RecallItem",
        "RecallStatus",
        "Role",
        "SystemDomainClock",
        "Turn",
        "open_memory",
    ]
    for name in cairn.__all__:
        assert hasattr(cairn, name)


def test_every_error_derives_from_cairn_error() -> None:
    for name in cairn.errors.__all__:
        error = getattr(cairn.errors, name)
        assert issubclass(error, cairn.errors.CairnError)
