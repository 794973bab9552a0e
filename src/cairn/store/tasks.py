"""The agent's tasks as projected from runtime events (the ``tasks`` view, schema 0016)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from collections.abc import Sequence

    import apsw

__all__ = ["TaskState", "current_tasks"]


@attrs.frozen
class TaskState:
    """One task at its latest event: ``status`` is running, done, failed, blocked or
    waiting_for_input; ``event_rowid`` the event saying so (its text is the stage)."""

    session_id: str
    task: str
    status: str
    event_rowid: int
    changed_at: str


def current_tasks(
    connection: apsw.Connection,
    agent_id: str,
    statuses: Sequence[str] = (),
    limit: int = 100,
) -> list[TaskState]:
    """The agent's tasks (of ``statuses``, when given), latest change first."""
    where = " AND status IN (SELECT value FROM json_each(?))" if statuses else ""
    parameters: tuple[object, ...] = (agent_id,)
    if statuses:
        parameters += (json.dumps(list(statuses)),)
    return [
        TaskState(str(session), str(task), str(status), int(rowid), str(changed))
        for session, task, status, rowid, changed in connection.execute(
            "SELECT session_id, task, status, event_rowid, changed_at FROM tasks"  # noqa: S608 - fixed clauses
            f" WHERE agent_id = ?{where} ORDER BY changed_at DESC, event_rowid DESC"
            " LIMIT ?",
            (*parameters, limit),
        )
    ]
