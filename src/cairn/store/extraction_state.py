"""The extraction state of an evidence row (``events.extracted``).

SQL never spells these values: every statement that compares or sets the column binds a
member's ``.value`` as a parameter.
"""

from __future__ import annotations

import enum

__all__ = ["ExtractionState"]


class ExtractionState(enum.IntEnum):
    PENDING = 0
    """Waiting for extraction."""
    EXTRACTED = 1
    """Committed by a batch."""
    SKIPPED = 2
    """Never extracted: a subagent session, a fork's replayed prefix, a deletion marker."""
    WITHDRAWN = 3
    """Edited, retried or deleted: never extracted again."""
