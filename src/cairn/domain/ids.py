"""Identifier types. IDs are always spelled ``<thing>_id``."""

from __future__ import annotations

import re
from typing import NewType

__all__ = [
    "AgentId",
    "ClaimId",
    "EventId",
    "RequestId",
    "SessionId",
    "validate_agent_id",
]

AgentId = NewType("AgentId", str)
SessionId = NewType("SessionId", str)
EventId = NewType("EventId", str)
ClaimId = NewType("ClaimId", str)
RequestId = NewType("RequestId", str)

# Agent IDs name files (vector projections) and appear in logs, so keep them to a safe,
# bounded alphabet rather than escaping later.
_AGENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$")


def validate_agent_id(value: str) -> AgentId:
    """Return ``value`` as an :data:`AgentId` or raise ``ValueError``."""
    if not _AGENT_ID.match(value):
        raise ValueError(
            f"agent id {value!r} must be 1-128 characters of letters, digits and ._:@-"
        )
    return AgentId(value)
