"""Execution identity: the fence against stale and ABA results."""

from __future__ import annotations

import attrs

from cairn.domain.ids import AgentId

__all__ = ["ExecutionIdentity"]


@attrs.frozen
class ExecutionIdentity:
    """``(agent_id, config_epoch, job_token)`` captured when async work starts.

    A result commits only if the agent's stored epoch still equals ``config_epoch``; the
    token names the unit of work (a batch, a recall) for receipts and logs.
    """

    agent_id: AgentId
    config_epoch: int
    job_token: str
