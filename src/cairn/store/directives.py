"""Directive rows: standing instructions in their own trust plane.

Status moves ``draft -> active`` (approve, a user action), ``draft|active -> revoked``.
Creating an active directive is the caller's statement that the user asked for it; the
runtime only does so from the explicit user API (cairn.runtime.forgetting).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from cairn.domain.directive import (
    ActiveDirective,
    Directive,
    DirectiveKind,
    DirectiveStatus,
    topic_problem,
)
from cairn.domain.ids import opaque_id
from cairn.errors import (
    InvalidInputError,
    InvalidTransitionError,
    UnknownDirectiveError,
)
from cairn.store.requests import drop_late_results

if TYPE_CHECKING:
    import apsw

    from cairn.domain.ids import AgentId

__all__ = [
    "MAX_DIRECTIVE_CHARS",
    "active_directives",
    "create_directive",
    "list_directives",
    "set_directive_status",
    "suppression_started",
    "validate_directive",
]

MAX_DIRECTIVE_CHARS = 2_000


def validate_directive(kind: str, text: str) -> DirectiveKind:
    """The directive kind, or :class:`InvalidInputError` saying what is wrong."""
    try:
        parsed = DirectiveKind(kind)
    except ValueError:
        raise InvalidInputError(f"unknown directive kind {kind!r}") from None
    if not text.strip():
        raise InvalidInputError("a directive needs text")
    if len(text) > MAX_DIRECTIVE_CHARS:
        raise InvalidInputError(
            f"a directive is at most {MAX_DIRECTIVE_CHARS} characters"
        )
    if parsed is DirectiveKind.SUPPRESS_TOPIC:
        problem = topic_problem(text)
        if problem is not None:
            raise InvalidInputError(f"topic {text!r} refused: {problem}")
    return parsed


def create_directive(
    connection: apsw.Connection,
    agent_id: AgentId,
    kind: str,
    text: str,
    status: str,
    now: dt.datetime,
) -> str:
    validate_directive(kind, text)
    if DirectiveStatus(status) is DirectiveStatus.REVOKED:
        raise InvalidInputError("a directive cannot be created revoked")
    directive_id = opaque_id()
    stamp = now.astimezone(dt.UTC).isoformat()
    connection.execute(
        "INSERT INTO directives (directive_id, agent_id, kind, text, status, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (directive_id, agent_id, kind, text, status, stamp, stamp),
    )
    if status == DirectiveStatus.ACTIVE.value:
        suppression_started(connection, agent_id, kind)
    return directive_id


def suppression_started(
    connection: apsw.Connection, agent_id: AgentId, kind: str
) -> None:
    """An active directive was stored (created, approved or imported as active)."""
    # A late result stored before the topic was suppressed may quote it.
    if kind == DirectiveKind.SUPPRESS_TOPIC.value:
        drop_late_results(connection, agent_id)


_ALLOWED = {
    DirectiveStatus.ACTIVE: {DirectiveStatus.DRAFT},
    DirectiveStatus.REVOKED: {DirectiveStatus.DRAFT, DirectiveStatus.ACTIVE},
}


def set_directive_status(
    connection: apsw.Connection,
    agent_id: AgentId,
    directive_id: str,
    status: DirectiveStatus,
    now: dt.datetime,
) -> Directive:
    """Approve (draft -> active) or revoke (draft/active -> revoked) one directive."""
    row = connection.execute(
        "SELECT kind, text, status FROM directives WHERE agent_id = ? AND directive_id = ?",
        (agent_id, directive_id),
    ).fetchone()
    if row is None:
        raise UnknownDirectiveError(
            f"no directive {directive_id!r} in agent {agent_id!r}"
        )
    current = DirectiveStatus(str(row[2]))
    if current not in _ALLOWED[status]:
        raise InvalidTransitionError(
            f"directive {directive_id} is {current.value}; cannot become {status.value}"
        )
    if status is DirectiveStatus.ACTIVE:
        # Old rows are re-checked: approval never activates a topic refused today.
        validate_directive(str(row[0]), str(row[1]))
    stamp = now.astimezone(dt.UTC).isoformat()
    connection.execute(
        "UPDATE directives SET status = ?, updated_at = ?"
        " WHERE agent_id = ? AND directive_id = ?",
        (status.value, stamp, agent_id, directive_id),
    )
    if status is DirectiveStatus.ACTIVE:
        suppression_started(connection, agent_id, str(row[0]))
    return _load(connection, agent_id, directive_id)


_SELECT = (
    "SELECT directive_id, kind, text, status, created_at, updated_at FROM directives"
)


def _row(row: tuple[object, ...]) -> Directive:
    return Directive(
        str(row[0]),
        DirectiveKind(str(row[1])),
        str(row[2]),
        DirectiveStatus(str(row[3])),
        str(row[4]),
        str(row[5]),
    )


def _load(
    connection: apsw.Connection, agent_id: AgentId, directive_id: str
) -> Directive:
    row = connection.execute(
        _SELECT + " WHERE agent_id = ? AND directive_id = ?", (agent_id, directive_id)
    ).fetchone()
    if row is None:
        raise UnknownDirectiveError(
            f"no directive {directive_id!r} in agent {agent_id!r}"
        )
    return _row(row)


def list_directives(
    connection: apsw.Connection,
    agent_id: AgentId,
    status: DirectiveStatus | None = None,
) -> list[Directive]:
    """The agent's directives (optionally of one status), ``updated_at DESC, id ASC``."""
    if status is None:
        rows = connection.execute(
            _SELECT + " WHERE agent_id = ? ORDER BY updated_at DESC, directive_id ASC",
            (agent_id,),
        )
    else:
        rows = connection.execute(
            _SELECT + " WHERE agent_id = ? AND status = ?"
            " ORDER BY updated_at DESC, directive_id ASC",
            (agent_id, status.value),
        )
    return [_row(row) for row in rows]


def active_directives(
    connection: apsw.Connection, agent_id: AgentId
) -> list[ActiveDirective]:
    """The active directives, ``updated_at DESC, id ASC``.

    A ``suppress_topic`` row whose topic is refused today (old data) is left out: it is
    neither rendered nor used as a filter.
    """
    return [
        ActiveDirective(d.directive_id, d.kind, d.text)
        for d in list_directives(connection, agent_id, DirectiveStatus.ACTIVE)
        if d.kind is not DirectiveKind.SUPPRESS_TOPIC or topic_problem(d.text) is None
    ]
