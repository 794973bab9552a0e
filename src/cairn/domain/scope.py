"""Scopes: where a memory applies inside its agent.

A narrow scope (session, user, project) applies only when the caller passes the matching
context value; a missing context never widens applicability
(tests/retrieval/test_isolation.py::test_session_scoped_claim_needs_its_session).
"""

from __future__ import annotations

import enum

import attrs

__all__ = ["RecallContext", "Scope", "ScopeKind"]


class ScopeKind(enum.StrEnum):
    AGENT = "agent"
    SESSION = "session"
    USER = "user"
    PROJECT = "project"


@attrs.frozen
class Scope:
    """A scope kind plus its key (``None`` exactly for the agent scope)."""

    kind: ScopeKind = ScopeKind.AGENT
    key: str | None = None

    def __attrs_post_init__(self) -> None:
        if (self.kind is ScopeKind.AGENT) != (self.key is None):
            raise ValueError(
                f"scope {self.kind.value} with key {self.key!r} is not a valid pair"
            )
        if self.key is not None and not self.key.strip():
            raise ValueError("a narrow scope needs a non-blank key")

    @classmethod
    def agent(cls) -> Scope:
        return cls()

    @classmethod
    def session(cls, session_id: str) -> Scope:
        return cls(ScopeKind.SESSION, session_id)


@attrs.frozen
class RecallContext:
    """The caller's context: which narrow scopes are in force for this recall."""

    session_id: str | None = None
    user_id: str | None = None
    project_id: str | None = None

    def applicable(self) -> tuple[Scope, ...]:
        """Every scope whose memories apply under this context (agent scope always)."""
        scopes = [Scope.agent()]
        if self.session_id:
            scopes.append(Scope(ScopeKind.SESSION, self.session_id))
        if self.user_id:
            scopes.append(Scope(ScopeKind.USER, self.user_id))
        if self.project_id:
            scopes.append(Scope(ScopeKind.PROJECT, self.project_id))
        return tuple(scopes)
