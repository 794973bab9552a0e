"""Validation of extracted drafts before anything is committed.

Each draft is checked on its own; a bad one is dropped without taking the batch with it:
every span must cite an event of this batch and lie inside its text; a preference needs
user evidence; assistant text becomes memory only through a cited span of that text
(tests/ingestion/test_validate.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from cairn.domain.claim import ClaimDraft, ClaimKind
from cairn.domain.evidence import EvidenceEvent, Role

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from cairn.domain.ids import EventId

__all__ = ["validate_drafts"]

logger = logging.getLogger(__name__)


def _valid(draft: ClaimDraft, by_id: Mapping[EventId, EvidenceEvent]) -> bool:
    if not draft.spans or not draft.text.strip():
        return False
    roles = set()
    for span in draft.spans:
        event = by_id.get(span.event_id)
        if event is None or span.end > len(event.text):
            return False
        roles.add(event.role)
    if draft.kind is ClaimKind.PREFERENCE and Role.USER not in roles:
        return False
    return roles <= {Role.USER, Role.ASSISTANT}


def validate_drafts(
    drafts: Sequence[ClaimDraft], events: Sequence[EvidenceEvent]
) -> list[ClaimDraft]:
    by_id = {event.event_id: event for event in events}
    valid = [draft for draft in drafts if _valid(draft, by_id)]
    if len(valid) != len(drafts):
        logger.info("dropped %d invalid claim drafts", len(drafts) - len(valid))
    return valid
