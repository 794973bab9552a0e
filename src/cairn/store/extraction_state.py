"""The extraction state of an evidence row (``events.extracted``).

0 pending · 1 extracted (committed by a batch) · 2 skipped (a subagent session, a fork's
replayed prefix, a deletion marker: never extracted) · 3 withdrawn (edited, retried or
deleted: never extracted again).
"""

from __future__ import annotations

from typing import Final

__all__ = ["EXTRACTED", "PENDING", "SKIPPED", "WITHDRAWN"]

PENDING: Final = 0
EXTRACTED: Final = 1
SKIPPED: Final = 2
WITHDRAWN: Final = 3
